module github.com/loremnews/loremnews/sqlitedb

go 1.25

require github.com/mattn/go-sqlite3 v1.14.53
