// Package sqlitedb is the production SQLite setup for a concurrent Go
// server, on github.com/mattn/go-sqlite3.
//
// Its row reader, Query, reads a query's rows on a connection of the pool
// straight into typed Go values. database/sql and the driver turn every
// column of every row into a driver.Value (an interface, most of them an
// allocation) and convert it again in Scan; on a page that lists a hundred
// rows that is most of the time spent outside SQLite. Query instead steps
// through all the rows in one call into C, which copies each column once
// into one buffer; Scan then reads integers from it and slices strings out
// of one string holding the whole result.
//
// It uses the same SQLite as the driver: the functions it calls are the
// ones go-sqlite3 compiles into the program, with the build's CGO_CFLAGS,
// so SQLite's compile-time options are set in one place and there is one
// copy of SQLite in the binary. Connections are reached through
// database/sql's Conn.Raw; the connector registers, on every connection, a
// DIRECTONLY SQL function that tells the connection's own handle.
package sqlitedb
