//go:build !cgo

package sqlitedb

// The package is SQLite compiled from C (github.com/mattn/go-sqlite3) with
// a VFS of its own in C: it needs cgo. Without it, the line below is the
// one error the build reports.
var _ = sqlitedb_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler
