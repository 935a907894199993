package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A database that cannot be opened gives an error and a nil Database, so
// a caller's `db == nil` check holds for PostgreSQL as for SQLite.
func TestOpenFailureGivesNilDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []dbFlags{
		{dsn: "postgres://nobody@127.0.0.1:1/none?connect_timeout=5"}, // nothing listens on port 1
		{dsn: filepath.Join(notADir, "x.sqlite3"), setup: "split"},    // a file where a folder should be
	} {
		db, err := d.open(ctx)
		if err == nil {
			db.Close()
			t.Errorf("open %s: no error", d.dsn)
			continue
		}
		if db != nil {
			t.Errorf("open %s failed (%v) but returned a non-nil Database %#v", d.dsn, err, db)
		}
	}
}
