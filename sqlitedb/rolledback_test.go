package sqlitedb_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// runawayInsert inserts rows without end, until it is interrupted; an
// interrupted INSERT inside a transaction makes SQLite roll back the whole
// transaction, not only the statement.
const runawayInsert = `INSERT INTO t (n) WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT -x FROM c`

// interruptedInsert runs runawayInsert with a ctx that ends after 50 ms,
// and returns its error (which must say the transaction was rolled back).
func interruptedInsert(tb testing.TB, tx *sqlitedb.Tx) error {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := tx.Exec(ctx, runawayInsert)
	if !errors.Is(err, sqlitedb.ErrRolledBack) || !errors.Is(err, context.DeadlineExceeded) {
		tb.Errorf("an interrupted INSERT answered %v, want an error wrapping ErrRolledBack and the deadline", err)
	}
	return err
}

// A write whose ctx ends during a statement is rolled back whole by
// SQLite; whatever its function does next (a statement on the handle, one
// through the escape hatch, or returning nil as if nothing happened),
// nothing of it is committed, and its caller is told so.
func TestAWriteRolledBackBySQLiteCommitsNothing(t *testing.T) {
	db, _ := openDB(t, &sqlitedb.Options{Timeout: within})
	createT(t, db)
	for _, c := range []struct {
		name string
		// then runs after the statement that ended the transaction.
		then func(ctx context.Context, tx *sqlitedb.Tx) error
	}{
		{"the audit row on the handle", func(ctx context.Context, tx *sqlitedb.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO t (n) VALUES (2)`)
			if !errors.Is(err, sqlitedb.ErrRolledBack) {
				t.Errorf("a statement after the transaction was rolled back: %v, want ErrRolledBack", err)
			}
			return nil
		}},
		{"the audit row through the escape hatch", func(ctx context.Context, tx *sqlitedb.Tx) error {
			// It would run outside any transaction and commit on its own,
			// but the write connection lets no commit but the writer's through.
			_, err := tx.Conn().ExecContext(ctx, `INSERT INTO t (n) VALUES (2)`)
			if code := sqlitedb.ErrorCode(err); code != 531 { // SQLITE_CONSTRAINT_COMMITHOOK
				t.Errorf("an autocommit statement through the escape hatch during a write: %v, want the commit hook's refusal", err)
			}
			return nil
		}},
		{"a savepoint through the escape hatch", func(ctx context.Context, tx *sqlitedb.Tx) error {
			// SAVEPOINT outside a transaction begins one, which the
			// writer's COMMIT must not take for the write's.
			for _, q := range []string{`SAVEPOINT s`, `INSERT INTO t (n) VALUES (2)`} {
				if _, err := tx.Conn().ExecContext(ctx, q); err != nil {
					t.Errorf("%s: %v", q, err)
				}
			}
			return nil
		}},
		{"returning the error", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := db.Write(ctx, func(_ context.Context, tx *sqlitedb.Tx) error {
				if _, err := tx.Exec(context.Background(), `INSERT INTO t (n) VALUES (1)`); err != nil {
					return err
				}
				time.AfterFunc(50*time.Millisecond, cancel)
				_, err := tx.Exec(context.Background(), runawayInsert)
				if c.then == nil {
					return err
				}
				if !errors.Is(err, sqlitedb.ErrRolledBack) {
					t.Errorf("the interrupted INSERT: %v, want ErrRolledBack", err)
				}
				return c.then(context.Background(), tx)
			})
			if !errors.Is(err, sqlitedb.ErrRolledBack) || !errors.Is(err, context.Canceled) {
				t.Fatalf("Write: %v, want an error wrapping ErrRolledBack and context.Canceled", err)
			}
			if rows := queryInts(t, db, `SELECT n FROM t`); len(rows) != 0 {
				t.Fatalf("rows %v in the table after a write reported failed, want none", head(rows, 5))
			}
			mustExec(t, db, `INSERT INTO t (n) VALUES (3)`)
			mustExec(t, db, `DELETE FROM t`)
		})
	}
}

// Writes that share a transaction (coalesced) are told the
// truth when SQLite rolls it back during one of them: that one failed,
// whatever its function returned, and the others ran again in a
// transaction without it and committed. Nothing of the one that failed
// is in the database, and none of the others is in it twice.
func TestASharedTransactionRolledBackBySQLite(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		// ignore: the failing write ignores its error and goes on
		ignore bool
	}{
		{"the error ignored", true},
		{"the error returned", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, _ := openDB(t, &sqlitedb.Options{Timeout: within})
			createT(t, db)
			write := db.Coalesce
			release := holdWriter(t, db, nil)
			const n, failing = 5, 2
			errs := make([]error, n)
			runs := make([]atomic.Int32, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					errs[i] = write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
						runs[i].Add(1)
						if err := insert(i)(ctx, tx); err != nil {
							return err
						}
						if i != failing {
							return nil
						}
						err := interruptedInsert(t, tx)
						if !c.ignore {
							return err
						}
						insert(100)(ctx, tx) // refused: the transaction is gone
						return nil
					})
				})
				waitFor(t, fmt.Sprintf("write %d queued", i), func() bool { return db.Stats().Writer.Depth == i+1 })
			}
			release()
			waitGroup(t, &wg, "the writes")
			for i, err := range errs {
				switch {
				case i == failing && !errors.Is(err, sqlitedb.ErrRolledBack):
					t.Errorf("the write whose statement SQLite rolled back: %v, want ErrRolledBack", err)
				case i != failing && err != nil:
					t.Errorf("write %d, which did nothing wrong: %v, want it committed", i, err)
				}
			}
			if got, want := queryInts(t, db, `SELECT n FROM t ORDER BY n`), []int64{0, 1, 3, 4}; !slices.Equal(got, want) {
				t.Fatalf("rows %v, want %v (every write but the failed one, once)", head(got, 10), want)
			}
			for i := range n {
				// Those before the failed one ran in its transaction, then
				// again; it and those after it, once.
				want := int32(1)
				if i < failing {
					want = 2
				}
				if got := runs[i].Load(); got != want {
					t.Errorf("write %d ran %d times, want %d", i, got, want)
				}
			}
		})
	}
}

// A coalesced write that fails on its own is answered with its error, and
// the others of its batch commit without it.
func TestACoalescedFailureFailsItAlone(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, &sqlitedb.Options{Timeout: within})
	createT(t, db)
	before := db.Stats().Writer.Commits
	release := holdWriter(t, db, nil)
	errBoom := errors.New("boom")
	const n = 10
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = db.Coalesce(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
				if err := insert(i)(ctx, tx); err != nil {
					return err
				}
				if i == n/2 {
					return errBoom
				}
				return nil
			})
		})
	}
	waitFor(t, fmt.Sprintf("%d coalesced writes queued behind the held turn", n), func() bool { return db.Stats().Writer.Depth == n })
	release()
	waitGroup(t, &wg, "the coalesced writes to finish")
	for i, err := range errs {
		if i == n/2 && !errors.Is(err, errBoom) {
			t.Errorf("the failing coalesced write: %v, want its own error", err)
		} else if i != n/2 && err != nil {
			t.Errorf("coalesced write %d: %v, want it committed", i, err)
		}
	}
	if got := queryInt(t, db, `SELECT count(*) FROM t WHERE n = ?`, n/2); got != 0 {
		t.Fatalf("the failed coalesced write's row is in the table")
	}
	if got := queryInt(t, db, `SELECT count(*) FROM t`); got != n-1 {
		t.Fatalf("%d rows, want %d (every write but the failed one, once)", got, n-1)
	}
	if got := db.Stats().Writer.Commits - before; got != 2 {
		t.Fatalf("%d commits, want 2 (the held write, then the batch without the failed write)", got)
	}
}

// A read whose function panics leaves no interrupt armed on its
// connection: when the read's ctx ends later, the statement another read
// runs on that connection goes on.
func TestAPanickingReadLeavesNoInterruptArmed(t *testing.T) {
	db, _ := openDB(t, &sqlitedb.Options{ReadConns: 1, Timeout: within})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if v := recovered(func() {
		db.Read(ctx, func(context.Context, *sqlitedb.Rx) error { panic("boom") })
	}); v == nil {
		t.Fatal("the read's panic did not reach its caller")
	}
	// The one read connection again, running a statement long enough for
	// the first read's ctx to end meanwhile.
	const long = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c`
	var n int64
	err := db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
		time.AfterFunc(20*time.Millisecond, cancel)
		return rx.QueryRow(ctx, long).Scan(&n)
	})
	if err != nil || n != 3000000 {
		t.Fatalf("a read after another read panicked, whose ctx ended meanwhile: %v (count %d), want 3000000", err, n)
	}
}

// A panic in Options.OnWriteWait reaches the caller of the write it was
// called for, which does not run; the writer goes on.
func TestAPanickingWaitHookReachesItsWrite(t *testing.T) {
	var panicked atomic.Bool
	db, _ := openDB(t, &sqlitedb.Options{Timeout: within, OnWriteWait: func(time.Duration) {
		if panicked.CompareAndSwap(false, true) {
			panic("hook")
		}
	}})
	v := recovered(func() { mustExec(t, db, `CREATE TABLE t (n INTEGER)`) })
	var p *sqlitedb.PanicError
	if e, ok := v.(error); !ok || !errors.As(e, &p) || p.Value != "hook" {
		t.Fatalf("the write whose wait hook panicked panicked with %v, want a *PanicError of the hook's value", v)
	}
	createT(t, db) // t was not created: the write did not run
	mustExec(t, db, `INSERT INTO t (n) VALUES (1)`)
	if got := queryInt(t, db, `SELECT count(*) FROM t`); got != 1 {
		t.Fatalf("%d rows, want 1", got)
	}
}

// A write function that calls runtime.Goexit (t.FailNow does) ends the
// writer's goroutine, which cannot be stopped: its transaction is rolled
// back, its caller told, and a new goroutine serves the next writes.
func TestAWriteThatCallsGoexit(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, &sqlitedb.Options{Timeout: within})
	createT(t, db)
	err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		insert(1)(ctx, tx)
		runtime.Goexit()
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "Goexit") {
		t.Fatalf("a write whose function called runtime.Goexit: %v, want an error naming Goexit", err)
	}
	mustExec(t, db, `INSERT INTO t (n) VALUES (2)`)
	if got := queryInts(t, db, `SELECT n FROM t`); !slices.Equal(got, []int64{2}) {
		t.Fatalf("rows %v, want [2] (nothing of the write that called Goexit)", got)
	}
}
