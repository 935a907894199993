package sqlitedb_test

import (
	"context"
	"database/sql"
	"errors"
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
				err := db.Write(ctx, func(ctx context.Context, conn *sql.Conn) error {
					var n int64
					if err := conn.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n); err != nil {
						return err
					}
					runtime.Gosched() // what a request does between its read and its write
					_, err := conn.ExecContext(ctx, `UPDATE counter SET n = ? WHERE id = 1`, n+1)
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
				err := db.Read(ctx, func(ctx context.Context, conn *sql.Conn) error {
					if err := conn.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&first); err != nil {
						return err
					}
					time.Sleep(100 * time.Microsecond) // let writers commit meanwhile
					return conn.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&second)
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

// The departures from the defaults that database/sql's usual setup amounts
// to (one shared pool, deferred transactions, writes on their callers'
// goroutines, SQLite's busy handler) do get SQLITE_BUSY under the same
// load: a deferred transaction that has read cannot take the write lock
// once another connection has written, and no busy timeout helps it.
func TestSharedPoolDeferredGetsBusy(t *testing.T) {
	opts := sqlitedb.Options{SharedPool: true, Deferred: true, Writer: sqlitedb.WriterNone, Busy: sqlitedb.BusySQLite}

	// Two write transactions that both read before either writes: one of
	// them must fail, whatever the timing.
	t.Run("two-connections", func(t *testing.T) {
		ctx := context.Background()
		o := opts
		o.ReadConns = 2
		db, _ := openDB(t, &o)
		mustExec(t, db, `CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)`)
		mustExec(t, db, `INSERT INTO counter (id, n) VALUES (1, 0)`)
		var read, wg sync.WaitGroup
		read.Add(2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				errs[i] = db.Write(ctx, func(ctx context.Context, conn *sql.Conn) error {
					var n int64
					err := conn.QueryRowContext(ctx, `SELECT n FROM counter WHERE id = 1`).Scan(&n)
					read.Done()
					if err != nil {
						return err
					}
					read.Wait() // both have read
					_, err = conn.ExecContext(ctx, `UPDATE counter SET n = ? WHERE id = 1`, n+1)
					return err
				})
			})
		}
		waitGroup(t, &wg, "the two writes to finish")
		var busy, ok int
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case sqlitedb.IsBusy(err) && errors.Is(err, sqlitedb.ErrBusy):
				busy++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}
		if ok != 1 || busy != 1 {
			t.Fatalf("%d succeeded, %d busy (%v); want one of each", ok, busy, errs)
		}
		if got := queryInt(t, db, `SELECT n FROM counter WHERE id = 1`); got != 1 {
			t.Fatalf("counter %d, want 1", got)
		}
		if s := db.Stats(); s.BusyErrors != 1 {
			t.Fatalf("%d busy errors counted, want 1", s.BusyErrors)
		}
	})

	t.Run("load", func(t *testing.T) {
		const writers, readers, iterations = 64, 64, 10
		db, _ := openDB(t, &opts)
		ok, errs := counterLoad(t, db, writers, readers, iterations)
		busy := 0
		for _, err := range errs {
			if sqlitedb.IsBusy(err) {
				busy++
			} else {
				t.Errorf("an error other than busy: %v", err)
			}
		}
		t.Logf("%d writes succeeded, %d busy errors", ok, busy)
		if busy == 0 {
			t.Fatal("no busy error; want some")
		}
		if s := db.Stats(); s.BusyErrors != int64(busy) {
			t.Fatalf("%d busy errors counted, %d returned", s.BusyErrors, busy)
		}
	})
}
