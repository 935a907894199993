package sqlite

// This file runs reads and writes in transactions: the read pool, the
// one-snapshot reads that pages need, and the writer that waits its turn.

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// querier is what read helpers need: a pool, a connection or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// writeTx is what a write's statements run on: the write connection inside
// the writer's BEGIN IMMEDIATE … COMMIT (a *sql.Conn), or a *sql.Tx where
// the profile has no writer goroutine.
type writeTx interface {
	querier
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// readConn is a read's connection of the read pool; queryRows reads
// listings on it through the row reader, straight into typed values.
//
// Its statements run without watching the request's context. Watching it
// costs a goroutine per statement (database/sql starts one for each Rows,
// the driver one for each Exec) — more work than most of our statements —
// and a read takes milliseconds at most, so a client that leaves gets its
// read finished rather than interrupted. Waiting for a read slot or a pool
// connection still ends with the request.
type readConn struct{ conn *sql.Conn }

func (r readConn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return r.conn.QueryContext(context.WithoutCancel(ctx), query, args...)
}

func (r readConn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return r.conn.QueryRowContext(context.WithoutCancel(ctx), query, args...)
}

func (r readConn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return r.conn.ExecContext(context.WithoutCancel(ctx), query, args...)
}

// rows is what a listing's loop needs of its query's result: *sql.Rows or
// the row reader's *sqlitedb.Rows.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// queryRows runs a listing's query: through the row reader on a read
// connection (each column copied once and scanned without a driver.Value;
// the statement stays prepared on the connection), through database/sql
// elsewhere (a write transaction, a shared pool).
func queryRows(ctx context.Context, q querier, query string, args ...any) (rows, error) {
	if r, ok := q.(readConn); ok {
		rs, err := sqlitedb.Query(ctx, r.conn, query, args...)
		if err != nil {
			return nil, err
		}
		return rs, nil
	}
	rs, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// withReadConn runs fn on a connection of the read pool, in a read slot.
func (db *DB) withReadConn(ctx context.Context, fn func(conn *sql.Conn) error) error {
	leave, err := db.enterRead(ctx)
	if err != nil {
		return err
	}
	defer leave()
	conn, err := db.readDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return fn(conn)
}

// enterRead waits for a read connection's slot, in arrival order, and
// returns the function that frees it. database/sql hands a freed connection
// to a random waiter, so when more requests read at once than there are
// read connections, an unlucky one waited for many turns (at 256 clients,
// p99 near a second); goroutines blocked sending on a channel are served
// first come, first served.
func (db *DB) enterRead(ctx context.Context) (leave func(), err error) {
	select {
	case db.readers <- struct{}{}:
		return db.leaveRead, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (db *DB) leaveRead() { <-db.readers }

// read runs fn against the read pool. In profiles that poll for SQLite's lock
// instead of using its busy handler, a read that meets SQLITE_BUSY (possible
// in WAL mode only while another connection recovers the WAL) is retried.
func (db *DB) read(ctx context.Context, fn func(q querier) error) error {
	if db.readDB != db.writeDB {
		return db.mapError(db.withReadConn(ctx, func(conn *sql.Conn) error { return fn(readConn{conn}) }))
	}
	return db.mapError(db.whileBusy(ctx, nil, func() error { return fn(db.readDB) }))
}

// whileBusy runs try until it succeeds, fails with anything but
// SQLITE_BUSY, or the profile's rule (retryBusy) stops retrying, sleeping
// busyInterval between tries; in profiles that neither poll nor use the
// gem's handler it runs try once (SQLite's own busy handler did the
// waiting). Each retry is counted in retries, if given, as it happens.
func (db *DB) whileBusy(ctx context.Context, retries *atomic.Int64, try func() error) error {
	deadline := time.Now().Add(db.writerTimeout)
	for count := 0; ; count++ {
		err := try()
		if err == nil || !isBusy(err) || !db.retryBusy(count, deadline) {
			return err
		}
		if retries != nil {
			retries.Add(1)
		}
		if err := sleepCtx(ctx, db.busyInterval()); err != nil {
			return err
		}
	}
}

// retryBusy decides whether the count-th SQLITE_BUSY (from 0) of one
// statement is retried: the gem's rule in the enhanced profile, the
// deadline in the polling ones.
func (db *DB) retryBusy(count int, deadline time.Time) bool {
	if db.spec.gemBusy {
		return gemBusyHandler(count, db.writerTimeout)
	}
	return db.spec.pollBusy && !time.Now().After(deadline)
}

// busyInterval is the sleep before the next try after SQLITE_BUSY.
func (db *DB) busyInterval() time.Duration {
	if db.spec.gemBusy {
		return gemRetryInterval
	}
	return busyPollInterval
}

// readSnapshot runs fn's queries in one read transaction on one read
// connection: one snapshot for the whole page, and one start of a read
// transaction instead of one per query. The latter matters because a
// connection drops its whole page cache when its read transaction starts
// after another connection committed — here, nearly always — so separate
// queries would each read the shared pages (b-tree roots, the users
// table) again. Single-pool profiles, whose connections begin IMMEDIATE,
// keep one implicit transaction per query.
func (db *DB) readSnapshot(ctx context.Context, fn func(q querier) error) error {
	if db.readDB == db.writeDB {
		return db.read(ctx, fn)
	}
	return db.mapError(db.withReadConn(ctx, func(conn *sql.Conn) error {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `BEGIN`); err != nil {
			return err
		}
		err := fn(readConn{conn})
		// Ending a read transaction cannot fail for a reason worth reporting
		// over fn's, but it must run even if ctx is done, or the connection
		// would go back to the pool inside a transaction.
		if _, cerr := conn.ExecContext(context.WithoutCancel(ctx), `COMMIT`); err == nil {
			err = cerr
		}
		return err
	}))
}

// write runs fn in one write transaction and commits it. Where the profile
// has a writer goroutine (writer.go), it runs fn there, after this process's
// earlier writes (first come, first served), waiting at most WriterTimeout
// for its turn. Elsewhere, in the caller's goroutine:
//  1. BEGIN (IMMEDIATE in every profile but naive, so the write lock is taken
//     up front: a deferred transaction that reads and then writes fails with
//     SQLITE_BUSY at once if another writer committed since its read, and no
//     busy timeout can help it);
//  2. fn, then COMMIT. Any error rolls back.
//
// fn gets the context to run its statements with: the request's, or on the
// writer goroutine one that keeps the request's values but cannot be
// cancelled.
func (db *DB) write(ctx context.Context, fn func(ctx context.Context, tx writeTx) error) error {
	if db.writer != nil {
		return db.mapError(db.writer.submit(ctx, fn))
	}
	// WriterTimeout bounds the wait for the lock, not the transaction
	// itself (a large seed may take longer).
	start := time.Now()
	tx, err := db.beginWrite(ctx)
	db.observeWriteWait(start)
	if err != nil {
		return db.mapError(fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback()
	if err := fn(ctx, tx); err != nil {
		return db.mapError(err)
	}
	if err := tx.Commit(); err != nil {
		return db.mapError(fmt.Errorf("commit: %w", err))
	}
	return nil
}

// beginWrite starts a write transaction. Where the profile polls, a BEGIN
// IMMEDIATE that finds the lock held by another connection is retried every
// busyPollInterval for up to WriterTimeout, or on the gem's schedule in the
// enhanced profile; elsewhere SQLite's busy handler does the waiting inside
// the BEGIN. The transaction lives as long as ctx.
func (db *DB) beginWrite(ctx context.Context) (*sql.Tx, error) {
	var tx *sql.Tx
	err := db.whileBusy(ctx, &db.busyRetries, func() (err error) {
		tx, err = db.writeDB.BeginTx(ctx, nil)
		return err
	})
	return tx, err
}

func (db *DB) observeWriteWait(start time.Time) {
	if db.onWriteWait != nil {
		db.onWriteWait(time.Since(start))
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
