package sqlitedb_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/loremnews/loremnews/sqlitedb"
)

// Close while the writer is busy: with a long write holding the writer and
// many writes queued behind it, every write queued before Close commits
// and returns nil; everything asked after Close began gets ErrClosed; a
// second Close is fine; and the file is whole on its own (the WAL
// checkpointed and truncated).
func TestCloseWhileBusy(t *testing.T) {
	for _, m := range writerModes {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "close.db")
			db, err := sqlitedb.Open(ctx, path, &sqlitedb.Options{Timeout: within})
			if err != nil {
				t.Fatal(err)
			}
			createT(t, db)
			release := holdWriter(t, db, insert(-1))
			const n = 50
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					write := db.Write
					if i%5 == 0 {
						write = db.Coalesce
					}
					if err := write(ctx, insert(i)); err != nil {
						t.Errorf("write %d, queued before Close: %v", i, err)
					}
				})
			}
			waitFor(t, fmt.Sprintf("%d writes queued behind the held turn", n), func() bool { return db.Stats().Writer.Depth == n })

			closed := make(chan error, 1)
			go func() { closed <- db.Close() }()
			// Close has begun once a read is refused.
			waitFor(t, "Close to begin", func() bool {
				return errors.Is(db.Read(ctx, func(context.Context, *sqlitedb.Rx) error { return nil }), sqlitedb.ErrClosed)
			})
			select {
			case err := <-closed:
				t.Fatalf("Close returned (%v) while a write held the writer's turn", err)
			default:
			}
			if err := m.write(db, ctx, insert(1000)); !errors.Is(err, sqlitedb.ErrClosed) {
				t.Errorf("a write asked for after Close began: %v, want ErrClosed", err)
			}
			release()
			if err := receive(t, closed, "Close to return"); err != nil {
				t.Fatalf("close: %v", err)
			}
			waitGroup(t, &wg, "the queued writes to return")

			if err := db.Close(); err != nil {
				t.Errorf("a second Close: %v", err)
			}
			readNoop := func(context.Context, *sqlitedb.Rx) error { return nil }
			writeNoop := func(context.Context, *sqlitedb.Tx) error { return nil }
			for name, err := range map[string]error{
				"Read":     db.Read(ctx, readNoop),
				"Write":    m.write(db, ctx, writeNoop),
				"Coalesce": db.Coalesce(ctx, writeNoop),
				"Backup":   db.Backup(ctx, filepath.Join(t.TempDir(), "backup.db"), nil),
			} {
				if !errors.Is(err, sqlitedb.ErrClosed) {
					t.Errorf("%s after Close: %v, want ErrClosed", name, err)
				}
			}
			if size := walSize(t, path); size != 0 {
				t.Errorf("the WAL holds %d bytes after Close, want none", size)
			}

			db = reopen(t, path)
			if got := queryInt(t, db, `SELECT count(*) FROM t`); got != n+1 {
				t.Fatalf("%d rows after Close, want %d: the held write and every write queued before Close", got, n+1)
			}
		})
	}
}

// reopen opens path again, closed when the test ends.
func reopen(t *testing.T, path string) *sqlitedb.DB {
	t.Helper()
	db, err := sqlitedb.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("reopen %s: %v", path, err)
	}
	t.Cleanup(func() { closeWithin(t, ignoreError(db.Close)) })
	return db
}

// Close while another process holds the write lock (here another DB on
// the same file, as during a reload: the new process writes while the old
// one closes) succeeds: PRAGMA optimize, which wants to write its
// statistics, and the closing checkpoint leave the file to the other
// process instead of failing with "database is locked".
func TestCloseBesideAnotherWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "two.db")
	old, err := sqlitedb.Open(ctx, path, &sqlitedb.Options{Timeout: within})
	if err != nil {
		t.Fatal(err)
	}
	// Statistics worth gathering: an indexed table grown from nothing and
	// queried by its index on the write connection.
	mustExec(t, old, `CREATE TABLE t (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, v TEXT)`)
	mustExec(t, old, `CREATE INDEX t_k ON t (k)`)
	err = old.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		for i := range 5000 {
			if _, err := tx.Exec(ctx, `INSERT INTO t (k, v) VALUES (?, 'x')`, i%50); err != nil {
				return err
			}
		}
		var n int
		return tx.QueryRow(ctx, `SELECT count(*) FROM t WHERE k = 7`).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	taking, err := sqlitedb.Open(ctx, path, &sqlitedb.Options{Timeout: within})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(taking.Close))
	release := holdWriter(t, taking, nil)
	defer release()
	if err := old.Close(); err != nil {
		t.Fatalf("Close beside another process's write: %v", err)
	}
	release()
	if got := queryInt(t, taking, `SELECT count(*) FROM t`); got != 5000 {
		t.Fatalf("%d rows, want 5000", got)
	}
}
