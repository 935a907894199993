module github.com/loremnews/loremnews/sqlitedb/faultfs

go 1.25

require (
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/loremnews/loremnews/sqlitedb v0.4.0
	github.com/mattn/go-sqlite3 v1.14.53
)

require golang.org/x/sys v0.28.0 // indirect

// The package it tests, in this repository.
replace github.com/loremnews/loremnews/sqlitedb => ../
