package sqlitedb_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// Reads take one of ReadConns slots before they touch the read pool: never
// more at once than there are read connections, and the pool itself never
// has to make a read wait (database/sql would hand a freed connection to a
// random waiter; the slots go in arrival order).
func TestReadsNeverExceedTheReadConnections(t *testing.T) {
	const conns, goroutines, reads = 3, 16, 50
	db, _ := openDB(t, &sqlitedb.Options{ReadConns: conns, Timeout: within})
	var inside, most, done atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range reads {
				err := db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
					n := inside.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					defer inside.Add(-1)
					var one int
					return rx.QueryRow(ctx, `SELECT 1`).Scan(&one)
				})
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				done.Add(1)
			}
		})
	}
	waitGroup(t, &wg, "the reads to finish")
	if done.Load() != goroutines*reads {
		t.Errorf("%d reads done, want %d", done.Load(), goroutines*reads)
	}
	if most.Load() > conns {
		t.Errorf("%d reads inside at once, more than the %d read connections", most.Load(), conns)
	}
	s := db.Stats().ReadPool
	if s.MaxOpenConnections != conns || s.OpenConnections > conns {
		t.Errorf("read pool %+v, want at most %d connections", s, conns)
	}
	if s.WaitCount != 0 {
		t.Errorf("the read pool made %d reads wait; want 0: reads wait for a slot, in order, before the pool", s.WaitCount)
	}
}

// A read waiting for a slot leaves when its context ends, without running
// and without taking a slot; with every slot free again, all can be held.
func TestAWaitingReadLeavesWithItsContext(t *testing.T) {
	const conns = 3
	db, _ := openDB(t, &sqlitedb.Options{ReadConns: conns, Timeout: within})
	release := holdReads(t, db, conns)
	var ran atomic.Bool
	read := func(ctx context.Context) error {
		return db.Read(ctx, func(context.Context, *sqlitedb.Rx) error { ran.Store(true); return nil })
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := read(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a read waiting for a slot, cancelled: %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := read(ctx); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, sqlitedb.ErrTimeout) {
		t.Fatalf("a read waiting for a slot past its context's deadline: %v, want the context's DeadlineExceeded, not ErrTimeout", err)
	}
	if ran.Load() {
		t.Fatal("a read that left before its slot ran")
	}
	if n := db.Stats().Timeouts; n != 0 {
		t.Fatalf("Stats().Timeouts = %d after reads that left with their contexts, want 0: the caller's deadline is not the package's timeout", n)
	}

	// The reads that left took no slot: once the held ones end, conns
	// reads can hold their connections again, and one more read runs.
	release()
	holdReads(t, db, conns)()
	if err := read(context.Background()); err != nil || !ran.Load() {
		t.Fatalf("a read with the slots free: %v, ran %v", err, ran.Load())
	}
}

// A read that waits for a slot longer than Options.Timeout returns
// ErrTimeout, which is a context.DeadlineExceeded too, and never runs.
func TestReadTimesOutWaitingForASlot(t *testing.T) {
	const conns = 2
	db, _ := openDB(t, &sqlitedb.Options{ReadConns: conns, Timeout: 100 * time.Millisecond})
	release := holdReads(t, db, conns)
	var ran atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), within) // fails, rather than hangs, if Timeout is ignored
	defer cancel()
	err := db.Read(ctx, func(context.Context, *sqlitedb.Rx) error { ran.Store(true); return nil })
	if !errors.Is(err, sqlitedb.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read that waited past the timeout: %v, want ErrTimeout and context.DeadlineExceeded", err)
	}
	if ran.Load() {
		t.Fatal("a read that timed out ran")
	}
	if n := db.Stats().Timeouts; n != 1 {
		t.Fatalf("Stats().Timeouts = %d after a read timed out, want 1", n)
	}
	release()
	if got := queryInt(t, db, `SELECT 1`); got != 1 {
		t.Fatalf("a read after the slots were freed: %d", got)
	}
}

// A read is one snapshot, and its connection is read-only: a write in the
// middle of a read is not seen by it, and fn cannot write.
func TestReadIsOneReadOnlySnapshot(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, nil)
	createT(t, db)
	mustExec(t, db, `INSERT INTO t (n) VALUES (1)`)
	err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		var before, after int
		if err := rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&before); err != nil {
			return err
		}
		// A read never holds up a write.
		if err := db.Write(ctx, insert(2)); err != nil {
			t.Errorf("a write during a read: %v", err)
		}
		if err := rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&after); err != nil {
			return err
		}
		if before != 1 || after != 1 {
			t.Errorf("one read saw %d rows, then %d; want 1 both times", before, after)
		}
		// Neither through the handle nor through database/sql.
		if _, err := rx.Query(ctx, `INSERT INTO t (n) VALUES (3)`); err == nil {
			t.Error("a read handle wrote")
		}
		if _, err := rx.Conn().ExecContext(ctx, `INSERT INTO t (n) VALUES (4)`); err == nil {
			t.Error("a read connection wrote")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := queryInts(t, db, `SELECT n FROM t ORDER BY seq`); len(got) != 2 {
		t.Fatalf("rows %v, want [1 2]", got)
	}
}
