package sqlitedb_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// sqliteConstraint is SQLite's primary result code for a constraint
// violation (SQLITE_CONSTRAINT).
const sqliteConstraint = 19

// writerModes are the ways the writer commits a write: in a transaction
// of its own (Write), or sharing one with the writes queued with it
// (Coalesce).
var writerModes = []writeMode{
	{"queue", (*sqlitedb.DB).Write},
	{"coalesced", (*sqlitedb.DB).Coalesce},
}

// writeMode is one way of writing.
type writeMode struct {
	name  string
	write func(db *sqlitedb.DB, ctx context.Context, fn func(context.Context, *sqlitedb.Tx) error) error
}

// Writes run in the order they were asked for: n writes queued one after
// another behind a held turn commit in that order. Coalesced they share
// one transaction, in the queue one each.
func TestWriterIsFIFO(t *testing.T) {
	for _, m := range writerModes {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openDB(t, &sqlitedb.Options{Timeout: within})
			createT(t, db)
			before := db.Stats().Writer
			release := holdWriter(t, db, nil)
			const n = 20
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					if err := m.write(db, ctx, insert(i)); err != nil {
						t.Errorf("write %d: %v", i, err)
					}
				})
				// Queue strictly one after another.
				waitFor(t, fmt.Sprintf("%d writes queued", i+1), func() bool { return db.Stats().Writer.Depth == i+1 })
			}
			release()
			waitGroup(t, &wg, "the queued writes to finish")

			got := queryInts(t, db, `SELECT n FROM t ORDER BY seq`)
			want := make([]int64, n)
			for i := range want {
				want[i] = int64(i)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("committed in the order %v, want %v: not first come, first served", got, want)
			}
			s := db.Stats().Writer
			wantCommits := int64(1 + n) // the held write, then one each
			if m.name == "coalesced" {
				wantCommits = 2 // the held write, then one batch
			}
			if s.Depth != 0 || s.MaxDepth < n || s.Writes-before.Writes != 1+n || s.Commits-before.Commits != wantCommits {
				t.Fatalf("writer stats %+v (before: %+v); want depth 0, max depth ≥ %d, %d more turns, %d more commits", s, before, n, 1+n, wantCommits)
			}
		})
	}
}

// Coalesced writes committed together do not share their fate. 41 writes
// queue behind a held turn, so they run in one batch: 20 with unique
// values (all must succeed), 20 with one value under a UNIQUE constraint
// (exactly one may), and one that inserts and then fails (its insert must
// be undone, and no other).
func TestCoalescedWritesFailAlone(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, &sqlitedb.Options{Timeout: within})
	mustExec(t, db, `CREATE TABLE posts (id INTEGER PRIMARY KEY, title TEXT NOT NULL UNIQUE)`)
	before := db.Stats().Writer
	release := holdWriter(t, db, nil)

	errBoom := errors.New("boom")
	var (
		wg                  sync.WaitGroup
		uniqueOK, dupOK     atomic.Int32
		dupConstraint, boom atomic.Int32
	)
	const n = 41
	for i := range n {
		wg.Go(func() {
			title := fmt.Sprintf("Unique title %d", i)
			if i%2 == 1 {
				title = "The same title for all"
			}
			err := db.Coalesce(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
				if i == n-1 {
					if _, err := tx.Exec(ctx, `INSERT INTO posts (title) VALUES ('Undone')`); err != nil {
						return err
					}
					return errBoom
				}
				_, err := tx.Exec(ctx, `INSERT INTO posts (title) VALUES (?)`, title)
				return err
			})
			var se *sqlitedb.Error
			switch {
			case i == n-1 && errors.Is(err, errBoom):
				boom.Add(1)
			case err == nil && i%2 == 0:
				uniqueOK.Add(1)
			case err == nil && i%2 == 1:
				dupOK.Add(1)
			case errors.As(err, &se) && se.Code&0xff == sqliteConstraint && i%2 == 1:
				dupConstraint.Add(1)
			default:
				t.Errorf("write %d: %v", i, err)
			}
		})
	}
	waitFor(t, fmt.Sprintf("all %d writes to queue behind the held turn", n), func() bool { return db.Stats().Writer.Depth == n })
	release()
	waitGroup(t, &wg, "the writes to finish after the turn was released")

	if uniqueOK.Load() != 20 || dupOK.Load() != 1 || dupConstraint.Load() != 19 || boom.Load() != 1 {
		t.Fatalf("unique ok %d, duplicate ok %d, duplicate refused %d, failed on its own %d; want 20, 1, 19, 1",
			uniqueOK.Load(), dupOK.Load(), dupConstraint.Load(), boom.Load())
	}
	if got := queryInt(t, db, `SELECT count(*) FROM posts`); got != 21 {
		t.Fatalf("%d rows committed, want 21", got)
	}
	if got := queryInt(t, db, `SELECT count(*) FROM posts WHERE title = 'Undone'`); got != 0 {
		t.Fatal("the insert of a write that failed was committed")
	}
	// The held write's commit, then one for the batch: each failure was
	// answered alone and the rest ran again, in one transaction.
	if got := db.Stats().Writer.Commits - before.Commits; got != 2 {
		t.Fatalf("%d commits, want 2 (the held write, then the batch)", got)
	}
}

// A write whose caller leaves before its turn never runs, is counted as
// abandoned, and the writer goes on with the next.
func TestWriterSkipsAbandonedWrites(t *testing.T) {
	type submit func(*sqlitedb.DB, context.Context, func(context.Context, *sqlitedb.Tx) error) error
	for _, c := range []struct {
		name   string
		submit submit
	}{
		{"queue", (*sqlitedb.DB).Write},
		{"coalesced", (*sqlitedb.DB).Coalesce},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, _ := openDB(t, &sqlitedb.Options{Timeout: within})
			createT(t, db)
			release := holdWriter(t, db, nil)
			ctx, cancel := context.WithCancel(context.Background())
			var ran atomic.Bool
			errc := make(chan error, 1)
			go func() {
				errc <- c.submit(db, ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
					ran.Store(true)
					return insert(1)(ctx, tx)
				})
			}()
			waitFor(t, "the write to queue behind the held turn", func() bool { return db.Stats().Writer.Depth == 1 })
			cancel()
			if err := receive(t, errc, "the abandoned write to return"); !errors.Is(err, context.Canceled) {
				t.Fatalf("a write whose caller left before its turn returned %v, want context.Canceled", err)
			}
			release()
			// The writer goes on, and takes the abandoned write off the
			// queue before this one (first come, first served).
			mustExec(t, db, `INSERT INTO t (n) VALUES (2)`)
			if ran.Load() {
				t.Fatal("the abandoned write ran")
			}
			if got := queryInts(t, db, `SELECT n FROM t ORDER BY seq`); !slices.Equal(got, []int64{2}) {
				t.Fatalf("rows %v, want only the write after the abandoned one", got)
			}
			if s := db.Stats().Writer; s.Abandoned != 1 || s.Depth != 0 {
				t.Fatalf("writer stats %+v, want 1 abandoned, depth 0", s)
			}
		})
	}
}

// A write that waits longer than Options.Timeout for its turn returns
// ErrTimeout, which is a context.DeadlineExceeded too, and never runs;
// the write that held the turn all that while is not interrupted (a write
// that has begun runs however long it takes) and commits.
func TestWriteTimesOutBeforeItsTurn(t *testing.T) {
	for _, m := range writerModes {
		t.Run(m.name, func(t *testing.T) {
			db, _ := openDB(t, &sqlitedb.Options{Timeout: 200 * time.Millisecond})
			createT(t, db)
			release := holdWriter(t, db, insert(1))
			var ran atomic.Bool
			err := db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
				ran.Store(true)
				return insert(2)(ctx, tx)
			})
			if !errors.Is(err, sqlitedb.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a write that waited past the timeout returned %v, want ErrTimeout and context.DeadlineExceeded", err)
			}
			release() // fails the test unless the held write returned nil
			mustExec(t, db, `INSERT INTO t (n) VALUES (3)`)
			if ran.Load() {
				t.Fatal("the write that timed out ran")
			}
			if got := queryInts(t, db, `SELECT n FROM t ORDER BY seq`); !slices.Equal(got, []int64{1, 3}) {
				t.Fatalf("rows %v, want [1 3]: the held write and the one after, not the one that timed out", got)
			}
			if s := db.Stats(); s.Writer.Abandoned != 1 || s.Timeouts != 1 {
				t.Fatalf("Stats: %d abandoned, %d timeouts; want 1 and 1", s.Writer.Abandoned, s.Timeouts)
			}
		})
	}
}

// A write in progress is not interrupted when its caller's context is
// cancelled: its fn's context keeps the caller's values but is never
// cancelled, the statements after the cancel run, and Write returns nil
// once it has committed.
func TestWriteInProgressIsNotInterrupted(t *testing.T) {
	type key struct{}
	for _, m := range writerModes {
		t.Run(m.name, func(t *testing.T) {
			db, _ := openDB(t, &sqlitedb.Options{Timeout: within})
			createT(t, db)
			ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "value"))
			defer cancel()
			started, cancelled := make(chan struct{}), make(chan struct{})
			letGo := sync.OnceFunc(func() { close(cancelled) })
			t.Cleanup(letGo) // before Close, if the test fails first
			errc := make(chan error, 1)
			go func() {
				errc <- m.write(db, ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
					if err := insert(1)(ctx, tx); err != nil {
						return err
					}
					close(started)
					<-cancelled
					if ctx.Err() != nil {
						return fmt.Errorf("fn's context ended with its caller's: %w", ctx.Err())
					}
					if v := ctx.Value(key{}); v != "value" {
						return fmt.Errorf("fn's context lost its caller's value: %v", v)
					}
					return insert(2)(ctx, tx)
				})
			}()
			select {
			case <-started:
			case err := <-errc:
				t.Fatalf("the write returned before it ran: %v", err)
			case <-time.After(within):
				t.Fatal("the write did not start")
			}
			cancel()
			letGo()
			if err := receive(t, errc, "the write to finish"); err != nil {
				t.Fatalf("a write whose caller left while it ran: %v, want nil (committed)", err)
			}
			if got := queryInts(t, db, `SELECT n FROM t ORDER BY seq`); !slices.Equal(got, []int64{1, 2}) {
				t.Fatalf("rows %v, want [1 2]", got)
			}
		})
	}
}

// The coalesced writes queued at one moment commit in one transaction,
// and each returns only after that commit.
func TestCoalescedWritesShareACommit(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, &sqlitedb.Options{Timeout: within})
	createT(t, db)
	before := db.Stats().Writer.Commits
	release := holdWriter(t, db, nil)
	const n = 30
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := db.Coalesce(ctx, insert(i)); err != nil {
				t.Errorf("coalesced write %d: %v", i, err)
				return
			}
			// Returned after the commit: a new read sees it.
			var got int
			err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
				return rx.QueryRow(ctx, `SELECT count(*) FROM t WHERE n = ?`, i).Scan(&got)
			})
			if err != nil || got != 1 {
				t.Errorf("coalesced write %d returned, but a read after it sees %d rows of it (%v)", i, got, err)
			}
		})
	}
	waitFor(t, fmt.Sprintf("%d coalesced writes queued behind the held turn", n), func() bool { return db.Stats().Writer.Depth == n })
	release()
	waitGroup(t, &wg, "the coalesced writes to finish")
	if got := db.Stats().Writer.Commits - before; got != 2 {
		t.Fatalf("%d commits for a held write and %d coalesced writes, want 2", got, n)
	}
	if got := queryInt(t, db, `SELECT count(*) FROM t`); got != n {
		t.Fatalf("%d rows, want %d", got, n)
	}
}

// A write whose context has ended before Write is called never runs, even
// with the writer idle.
func TestWriteWithItsContextDoneNeverRuns(t *testing.T) {
	for _, m := range writerModes {
		t.Run(m.name, func(t *testing.T) {
			db, _ := openDB(t, &sqlitedb.Options{})
			createT(t, db)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var ran atomic.Int32
			for i := range 100 {
				write := db.Write
				if i%2 == 1 {
					write = db.Coalesce
				}
				err := write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
					ran.Add(1)
					return insert(i)(ctx, tx)
				})
				if !errors.Is(err, context.Canceled) {
					t.Errorf("write %d with its context cancelled: %v, want context.Canceled", i, err)
				}
			}
			if ran.Load() != 0 {
				t.Fatalf("%d of 100 writes whose context had ended ran", ran.Load())
			}
			if got := queryInt(t, db, `SELECT count(*) FROM t`); got != 0 {
				t.Fatalf("%d rows, want none", got)
			}
		})
	}
}
