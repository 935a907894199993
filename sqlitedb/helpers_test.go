package sqlitedb_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// within bounds every wait of these tests for a state: long enough for a
// slow machine under the race detector, short enough that a hang fails.
const within = time.Minute

// openDB opens a database file in a fresh temporary directory, closed when
// the test ends. It returns the file's path too.
func openDB(tb testing.TB, opts *sqlitedb.Options) (*sqlitedb.DB, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "test.db")
	db, err := sqlitedb.Open(context.Background(), path, opts)
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	tb.Cleanup(func() { closeWithin(tb, db.Close) })
	return db, path
}

// ignoreError is close with its error dropped, for a test whose
// database's Close may fail (after an injected fault) and is not what it
// tests.
func ignoreError(close func() error) func() error {
	return func() error { close(); return nil }
}

// closeWithin runs close (a DB's Close at a test's end) and fails the test
// if it fails, or if it has not returned within: then it reports every
// goroutine's stack (what the writer waits for) and returns, so a write
// stuck after a failure fails the test that left it, with that failure's
// message, instead of hanging the package's tests until their timeout.
func closeWithin(tb testing.TB, close func() error) {
	tb.Helper()
	errc := make(chan error, 1)
	go func() { errc <- close() }()
	select {
	case err := <-errc:
		if err != nil {
			tb.Errorf("close: %v", err)
		}
	case <-time.After(within):
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		tb.Errorf("close did not return within %v; the goroutines:\n%s", within, buf)
	}
}

// mustExec runs query as a write of its own.
func mustExec(tb testing.TB, db *sqlitedb.DB, query string, args ...any) {
	tb.Helper()
	err := db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
		_, err := tx.Exec(ctx, query, args...)
		return err
	})
	if err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
}

// insert is a write that inserts n into table t (created by createT).
func insert(n int) func(context.Context, *sqlitedb.Tx) error {
	return func(ctx context.Context, tx *sqlitedb.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO t (n) VALUES (?)`, n)
		return err
	}
}

// createT creates table t, whose seq says in which order its rows were
// inserted.
func createT(tb testing.TB, db *sqlitedb.DB) {
	tb.Helper()
	mustExec(tb, db, `CREATE TABLE t (seq INTEGER PRIMARY KEY AUTOINCREMENT, n INTEGER NOT NULL)`)
}

// queryInt reads one integer on a read connection.
func queryInt(tb testing.TB, db *sqlitedb.DB, query string, args ...any) int64 {
	tb.Helper()
	var n int64
	err := db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
		return rx.QueryRow(ctx, query, args...).Scan(&n)
	})
	if err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

// queryInts reads a column of integers on a read connection.
func queryInts(tb testing.TB, db *sqlitedb.DB, query string, args ...any) []int64 {
	tb.Helper()
	return queryColumn[int64](tb, db, query, args...)
}

// queryColumn reads a column of Ts on a read connection.
func queryColumn[T any](tb testing.TB, db *sqlitedb.DB, query string, args ...any) []T {
	tb.Helper()
	var out []T
	err := db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
		rows, err := rx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var v T
			if err := rows.Scan(&v); err != nil {
				return err
			}
			out = append(out, v)
		}
		return rows.Err()
	})
	if err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return out
}

// holdWriter starts a write that keeps the writer's turn, and returns once
// it is running. Every write asked for meanwhile waits in the queue. The
// returned release lets it finish (after running then, if not nil) and
// waits for its result, which must be nil; it is called at the test's end
// if the test did not.
func holdWriter(tb testing.TB, db *sqlitedb.DB, then func(context.Context, *sqlitedb.Tx) error) (release func()) {
	tb.Helper()
	running, hold := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
			close(running)
			<-hold
			if then != nil {
				return then(ctx, tx)
			}
			return nil
		})
	}()
	select {
	case <-running:
	case err := <-errc:
		tb.Fatalf("the write holding the writer's turn returned before it held it: %v", err)
	case <-time.After(within):
		tb.Fatalf("waited %v for the write holding the writer's turn to run", within)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(hold)
			select {
			case err := <-errc:
				if err != nil {
					tb.Errorf("the write that held the writer's turn: %v", err)
				}
			case <-time.After(within):
				tb.Errorf("waited %v for the write that held the writer's turn to finish", within)
			}
		})
	}
	tb.Cleanup(release)
	return release
}

// holdReads starts n reads that keep their read connections, and returns
// once all are inside; release lets them end and waits for them.
func holdReads(tb testing.TB, db *sqlitedb.DB, n int) (release func()) {
	tb.Helper()
	inside := make(chan struct{}, n)
	hold := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			err := db.Read(context.Background(), func(context.Context, *sqlitedb.Rx) error {
				inside <- struct{}{}
				<-hold
				return nil
			})
			if err != nil {
				tb.Errorf("a read holding its connection: %v", err)
			}
		})
	}
	for i := range n {
		select {
		case <-inside:
		case <-time.After(within):
			tb.Fatalf("waited %v for %d reads to hold their connections; %d did", within, n, i)
		}
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(hold)
			waitGroup(tb, &wg, "the reads holding their connections to end")
		})
	}
	tb.Cleanup(release)
	return release
}

// waitFor polls cond until it is true, and fails the test, naming what it
// waited for, if that takes longer than within.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("waited %v for %s; gave up", within, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitGroup waits for wg, and fails the test, naming what it waited for,
// if that takes longer than within.
func waitGroup(tb testing.TB, wg *sync.WaitGroup, what string) {
	tb.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		tb.Fatalf("waited %v for %s; gave up", within, what)
	}
}

// receive waits for one result on errc, and fails the test, naming what it
// waited for, if that takes longer than within.
func receive(tb testing.TB, errc <-chan error, what string) error {
	tb.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(within):
		tb.Fatalf("waited %v for %s; gave up", within, what)
		return nil
	}
}

// walSize is the size of the database's WAL file, 0 if there is none.
func walSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path + "-wal")
	if errors.Is(err, os.ErrNotExist) {
		return 0
	} else if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}
