// Package poolcompare holds a benchmark, and nothing else: one load on
// four ways of running SQLite from Go (sqlitedb, and three pools of
// database/sql), side by side. Run it with
//
//	go test -run '^$' -bench Compare -benchtime 40000x -count 3 ./internal/poolcompare/
//
// Its results are in docs/use-it-in-your-own-program.md.
package poolcompare
