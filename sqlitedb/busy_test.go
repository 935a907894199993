package sqlitedb_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// counterLoad runs writers goroutines doing iterations read-then-write
// transactions each (read a counter, write it back plus one) beside
// readers goroutines reading it. Readers check that a read transaction is
// one snapshot and that the counter never goes back. It returns how many
// writes returned nil and the errors of the others.
func counterLoad(t *testing.T, db *sqlitedb.DB, writers, readers, iterations int) (ok int64, errs []error) {
	t.Helper()
	ctx := context.Background()
	mustExec(t, db, `CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`)
	mustExec(t, db, `INSERT INTO counter (id, n) VALUES (1, 0)`)
	var (
		mu    sync.Mutex
		wrote atomic.Int64
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for range writers {
		wg.Go(func() {
			for range iterations {
				err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
					var n int64
					if err := tx.QueryRow(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
						return err
					}
					runtime.Gosched() // what a request does between its read and its write
					_, err := tx.Exec(ctx, `UPDATE counter SET n = ? WHERE id = 1`, n+1)
					return err
				})
				if err != nil {
					fail(fmt.Errorf("write: %w", err))
					continue
				}
				wrote.Add(1)
			}
		})
	}
	for range readers {
		wg.Go(func() {
			var last int64
			for range iterations {
				var first, second int64
				err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
					if err := rx.QueryRow(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&first); err != nil {
						return err
					}
					time.Sleep(100 * time.Microsecond) // let writers commit meanwhile
					return rx.QueryRow(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&second)
				})
				switch {
				case err != nil:
					fail(fmt.Errorf("read: %w", err))
				case first != second:
					t.Errorf("one read transaction saw the counter at %d, then at %d: not one snapshot", first, second)
				case first < last:
					t.Errorf("the counter went back from %d to %d", last, first)
				default:
					last = first
				}
			}
		})
	}
	waitGroup(t, &wg, "the readers and writers to finish")
	if got := queryInt(t, db, `SELECT n FROM counter WHERE id = 1`); got != wrote.Load() {
		t.Errorf("the counter is %d after %d writes that returned nil: lost updates", got, wrote.Load())
	}
	return wrote.Load(), errs
}

// With the default options, 64 goroutines doing read-then-write
// transactions beside 64 readers get no error at all: no SQLITE_BUSY, no
// lost update.
func TestNoBusyErrors(t *testing.T) {
	const writers, readers, iterations = 64, 64, 10
	db, _ := openDB(t, nil)
	ok, errs := counterLoad(t, db, writers, readers, iterations)
	for _, err := range errs {
		t.Error(err)
	}
	if ok != writers*iterations {
		t.Errorf("%d writes succeeded, want %d", ok, writers*iterations)
	}
	// Not one BEGIN even found the lock taken: one connection writes.
	if s := db.Stats(); s.BusyErrors != 0 || s.BusyRetries != 0 {
		t.Errorf("%d busy errors, %d busy retries; want none", s.BusyErrors, s.BusyRetries)
	}
}
