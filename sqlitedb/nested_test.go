package sqlitedb_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// requestKey marks a ctx as the caller's own, not a write function's.
type requestKey struct{}

// A Write or Coalesce called inside a write fails at once, instead of
// waiting behind the write that called it until the timeout, whether it is
// given the function's ctx or another (the request's, say); the outer
// write still commits.
func TestNestedWriteFailsAtOnce(t *testing.T) {
	for _, m := range writerModes {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := sqlitedb.Open(ctx, filepath.Join(t.TempDir(), "n.db"), &sqlitedb.Options{Timeout: 30 * time.Second,
				Setup: func(ctx context.Context, conn *sql.Conn) error {
					_, err := conn.ExecContext(ctx, `CREATE TABLE t (x INTEGER)`)
					return err
				}})
			if err != nil {
				t.Fatal(err)
			}
			defer closeWithin(t, ignoreError(db.Close))
			var inner, innerCoalesce, outerCtx, outerCtxCoalesce error
			start := time.Now()
			// A request's ctx: cancelled when the client leaves.
			request, cancel := context.WithCancel(context.WithValue(ctx, requestKey{}, "the request's ctx"))
			defer cancel()
			err = m.write(db, request, func(ctx context.Context, tx *sqlitedb.Tx) error {
				inner = m.write(db, ctx, func(context.Context, *sqlitedb.Tx) error { return nil })
				innerCoalesce = db.Coalesce(ctx, func(context.Context, *sqlitedb.Tx) error { return nil })
				outerCtx = m.write(db, request, func(context.Context, *sqlitedb.Tx) error { return nil })
				outerCtxCoalesce = db.Coalesce(context.WithValue(request, requestKey{}, "derived"), func(context.Context, *sqlitedb.Tx) error { return nil })
				_, err := tx.Exec(ctx, `INSERT INTO t VALUES (1)`)
				return err
			})
			if err != nil {
				t.Fatalf("outer write: %v", err)
			}
			for _, e := range []error{inner, innerCoalesce, outerCtx, outerCtxCoalesce} {
				if e == nil || !strings.Contains(e.Error(), "inside a write") {
					t.Errorf("nested call after %v: %v, want an error saying it was called inside a write", time.Since(start), e)
				}
			}
			if s := db.Stats().Writer; s.Abandoned != 0 {
				t.Errorf("abandoned %d: the nested calls must not have queued", s.Abandoned)
			}
			var n int
			if err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
				return rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
			}); err != nil || n != 1 {
				t.Fatalf("rows %d, %v; want the outer write's 1", n, err)
			}
		})
	}
}

// Reads that find every read connection taken are counted in Stats, with
// their wait.
func TestReadWaitsAreCounted(t *testing.T) {
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, filepath.Join(t.TempDir(), "w.db"), &sqlitedb.Options{ReadConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(db.Close))
	inside, release := make(chan struct{}), make(chan struct{})
	letGo := sync.OnceFunc(func() { close(release) })
	defer letGo() // before Close, if the test fails first
	var wg sync.WaitGroup
	wg.Go(func() {
		db.Read(ctx, func(context.Context, *sqlitedb.Rx) error {
			close(inside)
			<-release
			return nil
		})
	})
	select {
	case <-inside:
	case <-time.After(within):
		t.Fatal("the first read never began")
	}
	done := make(chan error, 1)
	go func() { done <- db.Read(ctx, func(context.Context, *sqlitedb.Rx) error { return nil }) }()
	// The second read is counted as it starts waiting, and can only finish
	// after the first leaves.
	deadline := time.Now().Add(time.Minute)
	for db.Stats().ReadWaits == 0 {
		select {
		case err := <-done:
			t.Fatalf("second read finished (%v) while the only read connection was taken", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the second read never waited")
		}
		time.Sleep(time.Millisecond)
	}
	letGo()
	if err := receive(t, done, "the second read"); err != nil {
		t.Fatal(err)
	}
	waitGroup(t, &wg, "the first read")
	if s := db.Stats(); s.ReadWaits != 1 || s.ReadWaitTime <= 0 {
		t.Fatalf("ReadWaits %d, ReadWaitTime %v; want 1 and more than 0", s.ReadWaits, s.ReadWaitTime)
	}
}
