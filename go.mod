module github.com/loremnews/loremnews

go 1.26.8

require (
	github.com/mattn/go-sqlite3 v1.14.53
	golang.org/x/crypto v0.45.0
)

require github.com/google/uuid v1.6.0 // indirect
