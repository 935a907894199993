//go:build cgo

package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Read runs fn in one read transaction on a read connection: every query
// of fn sees the same snapshot of the database, whatever is written
// meanwhile, and no write waits for it (WAL mode).
//
// Reads wait for a read connection in arrival order (database/sql hands a
// freed connection to a random waiter, so under load an unlucky request
// would wait many turns), at most Options.Timeout, or until ctx ends.
//
// If ctx ends while fn runs, the statement running is interrupted
// (sqlite3_interrupt) and Read returns an error wrapping ctx.Err(). Read
// watches ctx once for all of fn: fn's ctx keeps ctx's values but is never
// cancelled, since a statement watching its own context costs a goroutine
// (database/sql starts one per Rows). fn runs its statements on rx, which
// is valid only while fn runs (see Rx); the read connections are
// query_only.
//
// A panic in fn goes on up the caller's stack once the read transaction
// has ended; the connection stays usable.
func (db *DB) Read(ctx context.Context, fn func(ctx context.Context, rx *Rx) error) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if err := db.enterRead(ctx); err != nil {
		return db.result(err)
	}
	defer db.leaveRead()
	return db.result(db.readOn(ctx, db.readDB, fn))
}

// readOn runs fn in a read transaction on a connection of pool.
func (db *DB) readOn(ctx context.Context, pool *sql.DB, fn func(context.Context, *Rx) error) error {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	txn, err := markTxn(conn, `BEGIN`)
	if err != nil {
		return err
	}
	// If fn panics, the panic goes on up the caller's stack, but the
	// transaction ends first: the connection goes back to the pool
	// reusable, and no read transaction is left pinning the WAL.
	returned := false
	defer func() {
		if !returned {
			execOn(conn, `ROLLBACK`)
		}
	}()
	rx := &Rx{conn: conn, txn: txn}
	defer func() { rx.conn = nil }()
	// Deferred, so a panicking fn cannot leave it armed: the interrupt
	// would hit whatever statement runs on the connection next.
	stop := interruptOnDone(ctx, conn)
	defer stop()
	err = fn(context.WithoutCancel(ctx), rx)
	stop()
	returned = true
	// Ending a read transaction cannot fail for a reason worth reporting
	// over fn's, but it must happen, or the connection would go back to
	// the pool inside a transaction.
	if cerr := execOn(conn, `COMMIT`); cerr != nil {
		execOn(conn, `ROLLBACK`)
		if err == nil {
			err = cerr
		}
	}
	return withCtxErr(ctx, err)
}

// enterRead waits for a read connection's slot, in arrival order:
// goroutines blocked sending on a channel are served first come, first
// served.
func (db *DB) enterRead(ctx context.Context) error {
	select {
	case db.readers <- struct{}{}:
		return nil
	default:
	}
	db.readWaits.Add(1)
	start := time.Now()
	defer func() { db.readWaitNs.Add(int64(time.Since(start))) }()
	timer := time.NewTimer(db.opts.Timeout)
	defer timer.Stop()
	select {
	case db.readers <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("waited %v for a read connection: %w", db.opts.Timeout, ErrTimeout)
	}
}

func (db *DB) leaveRead() { <-db.readers }

// Write runs fn in one write transaction, BEGIN IMMEDIATE … COMMIT, and
// returns once it has committed, or failed and rolled back. fn runs on the
// writer goroutine after every write this process asked for before it
// (first come, first served), and runs its statements on tx, which is
// valid only while fn runs (see Tx).
//
// A write whose ctx ends, or that waits longer than Options.Timeout,
// before its turn never runs (ctx's error, or ErrTimeout). Timeout bounds
// the whole wait: for the writer of this process, for the turn among the
// processes on the file, and for SQLite's lock while a program outside the
// queue holds it. fn's ctx keeps
// ctx's values but is not cancelled; Write watches ctx instead: if it ends
// while fn runs, the statement running is interrupted, the transaction
// rolls back, and Write returns an error wrapping ctx.Err(). In Coalesce,
// writes share a transaction, and an interrupted statement rolls back the
// whole transaction (SQLite does so for any interrupted write statement):
// there, a write is not interrupted once it runs.
//
// If fn returns an error, the transaction rolls back and Write returns
// that error. If fn panics, the transaction rolls back, and the panic
// reaches the caller's goroutine as a *PanicError (with the stack where it
// happened); the writer goes on with the next write.
func (db *DB) Write(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) error {
	return db.write(ctx, fn, false)
}

// Coalesce runs fn like Write, except that the coalesced writes queued at
// one moment (up to 256) share one transaction of their own, in arrival
// order. Sharing a commit couples the fates of the writes that ran: a
// write whose function returns an error (or panics) fails alone — the
// transaction rolls back and the others run again without it — but a
// failure of the transaction itself (its commit, a disk error, a
// rollback SQLite made on its own, twice) fails every write in it. So fn
// should be a write that cannot fail on its own (a last-seen time, a
// counter, a log line), its only failures being the database's; one that
// can (a unique constraint, a check) costs the others a second run.
//
// When both kinds are waiting, the writer picks between coalesced and
// ordinary writes at random (as select does), so a burst of one kind does
// not hold up the other.
func (db *DB) Coalesce(ctx context.Context, fn func(ctx context.Context, tx *Tx) error) error {
	return db.write(ctx, fn, true)
}

// write is Write, or Coalesce if coalesce is set.
func (db *DB) write(ctx context.Context, fn func(context.Context, *Tx) error, coalesce bool) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if ctx.Value(insideWrite{}) == db {
		return errNested
	}
	if db.readOnly {
		return ErrReadOnly
	}
	if db.writer.calledFromFn(ctx) {
		return errNested // with the outer write's ctx instead of fn's
	}
	queue := db.writer.queue
	if coalesce {
		queue = db.writer.coalesced
	}
	err := db.writer.submit(ctx, fn, queue)
	if p, ok := err.(*PanicError); ok {
		panic(p) // on the caller's goroutine, where it can be recovered
	}
	return db.result(err)
}

// errNested answers a Write or Coalesce called from inside a write's
// function, with the ctx fn was given or with the outer write's own (see
// calledFromFn): it would wait for its own turn, behind the write that
// called it, until Timeout.
var errNested = errors.New("sqlitedb: Write or Coalesce called inside a write on the same DB; run the statements on the write's tx instead")

// result is what a read or write returns to its caller: a timeout is
// counted, and a busy error counted and marked ErrBusy.
func (db *DB) result(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrTimeout) {
		db.timeouts.Add(1)
		return err
	}
	if errors.Is(err, ErrBusy) || !IsBusy(err) {
		return err
	}
	db.busyErrors.Add(1)
	return fmt.Errorf("%w: %w", ErrBusy, err)
}
