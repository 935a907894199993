package sqlite

import (
	"context"
	"database/sql"
	"testing"
)

// Test-only access to internals, for package sqlite_test.

// ReadPragmaOnEveryConn holds every read-pool connection at once (so each is
// a different one) and returns PRAGMA name's value on each.
func (db *DB) ReadPragmaOnEveryConn(tb testing.TB, name string) []string {
	tb.Helper()
	ctx := context.Background()
	n := db.readDB.Stats().MaxOpenConnections
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var vals []string
	for range n {
		c, err := db.readDB.Conn(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, c)
		var v string
		if err := c.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
			tb.Fatalf("PRAGMA %s: %v", name, err)
		}
		vals = append(vals, v)
	}
	if len(vals) == 0 {
		tb.Fatal("no connections")
	}
	return vals
}

// HoldWriterTurn occupies the writer, as a long write would, until release.
func (db *DB) HoldWriterTurn(tb testing.TB) (release func()) {
	tb.Helper()
	started, done, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		db.write(context.Background(), func(context.Context, *sql.Tx) error {
			close(started)
			<-done
			return nil
		})
	}()
	<-started
	return func() { close(done); <-finished }
}

// ExecForTest runs a statement on the write pool outside any profile logic.
func (db *DB) ExecForTest(tb testing.TB, query string, args ...any) {
	tb.Helper()
	if _, err := db.writeDB.Exec(query, args...); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}

// PageCount is the database's size in pages.
func (db *DB) PageCount(tb testing.TB) int {
	tb.Helper()
	var n int
	if err := db.readDB.QueryRow("PRAGMA page_count").Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}
