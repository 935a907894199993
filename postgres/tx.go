package postgres

// This file runs reads and writes: reads on the pool or in one snapshot,
// writes in one transaction that starts over on a deadlock or a
// serialization failure.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/loremnews/loremnews"
)

// querier is what read helpers need: the pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readEach runs fn against the pool: each statement its own snapshot, for
// reads of one statement.
func (db *DB) readEach(ctx context.Context, fn func(q querier) error) error {
	return db.mapError(fn(db.pool))
}

// read runs fn's queries in one REPEATABLE READ, read-only transaction, so
// a page that runs several queries (a post and its comments, a user and
// their posts) sees one snapshot: a comment deleted between the two
// queries cannot leave a count that disagrees with the list. It is what
// the SQLite store's read does.
func (db *DB) read(ctx context.Context, fn func(q querier) error) error {
	return db.mapError(pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return fn(tx)
	}))
}

// errRetry asks write to start the transaction over: a row it picked at
// random was deleted by a concurrent transaction before it could lock it.
var errRetry = errors.New("picked row vanished; retry")

// maxAttempts bounds how often write starts a transaction over.
const maxAttempts = 20

// write runs fn in one READ COMMITTED transaction and commits it, starting
// over (with a short random pause) on a deadlock, a serialization failure
// or errRetry. Every write holds row locks in the order described in the
// package comment, so deadlocks should not happen; the retry is a safety net.
func (db *DB) write(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	// The write's wait, for /metrics, is its first attempt's: from asking
	// to write until BEGIN returned (or the wait for a connection failed).
	start, observed := time.Now(), false
	waited := func() {
		if !observed && db.onWriteWait != nil {
			db.onWriteWait(time.Since(start))
		}
		observed = true
	}
	for attempt := 1; ; attempt++ {
		err := db.writeOnce(ctx, waited, fn)
		if err == nil || !retryable(err) || attempt == maxAttempts || ctx.Err() != nil {
			if errors.Is(err, errRetry) {
				err = loremnews.ErrTooBusy
			}
			return db.mapError(err)
		}
		db.retries.Add(1)
		if pgCode(err) == pgerrcode.DeadlockDetected {
			db.deadlocks.Add(1)
		}
		pause := time.Duration(rand.Int64N(int64(attempt) * int64(time.Millisecond)))
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return db.mapError(ctx.Err())
		case <-t.C:
		}
	}
}

// writeOnce is one attempt of write. It calls waited once the wait for a
// pooled connection and BEGIN is over, whether or not they succeeded.
func (db *DB) writeOnce(ctx context.Context, waited func(), fn func(ctx context.Context, tx pgx.Tx) error) error {
	// The wait for a pooled connection is bounded like the SQLite writer
	// queue's wait for a turn; the transaction itself is not.
	actx, cancel := context.WithTimeout(ctx, db.writerTimeout)
	conn, err := db.pool.Acquire(actx)
	cancel()
	if err != nil {
		waited()
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return loremnews.ErrTooBusy
		}
		return fmt.Errorf("acquire connection: %w", err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	waited()
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
