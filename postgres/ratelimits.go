package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/loremnews/loremnews"
)

// purgeLimitRows is how many rows whose window has ended each
// ReserveAttempt deletes: each reserve adds at most one row and deletes up
// to this many ended ones, so they never pile up, at the cost of one short
// range of the window_end index.
const purgeLimitRows = 100

// ReserveAttempt takes one attempt for key (loremnews.LimitStore), in one
// transaction. The upsert locks the key's row (or, for a new key, lets
// one of the concurrent inserts win and turns the others into updates of
// its row), so concurrent reserves, from any process, are counted one
// after another. The transaction locks only that row, and its purge skips
// rows others hold, so it never waits on another lock: it keeps out of
// the lock order of the package comment.
func (db *DB) ReserveAttempt(ctx context.Context, key []byte, limit int, window time.Duration, now time.Time) (ok bool, retryAfter time.Duration, err error) {
	if limit < 1 || window <= 0 {
		return false, 0, fmt.Errorf("reserve attempt: limit %d and window %v must be positive", limit, window)
	}
	n, end := now.UnixNano(), now.Add(window).UnixNano()
	err = db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		ok, retryAfter = false, 0
		// A new key, or one whose window has ended, starts a window with
		// this attempt; a key under its limit counts one more; a key at
		// its limit is left as it is, and the statement returns no row.
		var attempts int64
		err := tx.QueryRow(ctx, `INSERT INTO rate_limits AS r (key, attempts, window_end) VALUES ($1, 1, $2)
			ON CONFLICT (key) DO UPDATE SET
			  attempts   = CASE WHEN r.window_end <= $3 THEN 1 ELSE r.attempts + 1 END,
			  window_end = CASE WHEN r.window_end <= $3 THEN excluded.window_end ELSE r.window_end END
			WHERE r.window_end <= $3 OR r.attempts < $4
			RETURNING attempts`, key, end, n, limit).Scan(&attempts)
		switch {
		case err == nil:
			ok = true
		case errors.Is(err, pgx.ErrNoRows):
			// The key is at its limit: its window ends at window_end.
			var windowEnd int64
			err := tx.QueryRow(ctx, `SELECT window_end FROM rate_limits WHERE key = $1`, key).Scan(&windowEnd)
			if errors.Is(err, pgx.ErrNoRows) {
				return errRetry // purged meanwhile by another's clock: start over
			} else if err != nil {
				return err
			}
			retryAfter = time.Duration(windowEnd - n)
		default:
			return err
		}
		// The row just written ends after now, so it is never among these.
		_, err = tx.Exec(ctx, `DELETE FROM rate_limits WHERE key IN
			(SELECT key FROM rate_limits WHERE window_end <= $1 ORDER BY window_end LIMIT $2 FOR UPDATE SKIP LOCKED)`, n, purgeLimitRows)
		return err
	})
	if err != nil {
		return false, 0, fmt.Errorf("reserve attempt: %w", err)
	}
	return ok, retryAfter, nil
}

// ReleaseAttempt gives back one attempt of key (loremnews.LimitStore).
func (db *DB) ReleaseAttempt(ctx context.Context, key []byte) error {
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE rate_limits SET attempts = attempts - 1 WHERE key = $1 AND attempts > 0`, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("release attempt: %w", err)
	}
	return nil
}

var _ loremnews.LimitStore = (*DB)(nil)
