package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/loremnews/loremnews"
)

// purgeLimitRows is how many rows whose window has ended each
// ReserveAttempt deletes. Each reserve adds at most one row and deletes up
// to this many ended ones, so ended rows never pile up, and the purge costs
// one short range of the window_end index whatever the table holds.
const purgeLimitRows = 100

// ReserveAttempt takes one attempt for key (loremnews.LimitStore), in one
// write transaction: the writer's turn makes it atomic against every
// other process on the file too. It is a counter, which fails only when
// the database does, so reservations (and touches) waiting at one moment
// share a transaction and its commit (coalesce): a site's posts and
// comments each reserve before they write.
func (db *DB) ReserveAttempt(ctx context.Context, key []byte, limit int, window time.Duration, now time.Time) (ok bool, retryAfter time.Duration, err error) {
	if limit < 1 || window <= 0 {
		return false, 0, fmt.Errorf("reserve attempt: limit %d and window %v must be positive", limit, window)
	}
	n, end := now.UnixNano(), now.Add(window).UnixNano()
	err = db.coalesce(ctx, func(ctx context.Context, tx Execer) error {
		ok, retryAfter = false, 0
		// A new key, or one whose window has ended, starts a window with
		// this attempt; a key under its limit counts one more; a key at
		// its limit is left as it is, and the statement returns no row.
		var attempts int64
		err := tx.QueryRow(ctx, `INSERT INTO rate_limits (key, attempts, window_end) VALUES (?1, 1, ?2)
			ON CONFLICT (key) DO UPDATE SET
			  attempts   = CASE WHEN rate_limits.window_end <= ?3 THEN 1 ELSE rate_limits.attempts + 1 END,
			  window_end = CASE WHEN rate_limits.window_end <= ?3 THEN excluded.window_end ELSE rate_limits.window_end END
			WHERE rate_limits.window_end <= ?3 OR rate_limits.attempts < ?4
			RETURNING attempts`, key, end, n, int64(limit)).Scan(&attempts)
		switch {
		case err == nil:
			ok = true
		case errors.Is(err, sql.ErrNoRows):
			var windowEnd int64
			if err := tx.QueryRow(ctx, `SELECT window_end FROM rate_limits WHERE key = ?`, key).Scan(&windowEnd); err != nil {
				return err
			}
			retryAfter = time.Duration(windowEnd - n)
		default:
			return err
		}
		// The row just written ends after now, so it is never among these.
		_, err = tx.Exec(ctx, `DELETE FROM rate_limits WHERE key IN
			(SELECT key FROM rate_limits WHERE window_end <= ? ORDER BY window_end LIMIT ?)`, n, purgeLimitRows)
		return err
	})
	if err != nil {
		return false, 0, fmt.Errorf("reserve attempt: %w", err)
	}
	return ok, retryAfter, nil
}

// ReleaseAttempt gives back one attempt of key (loremnews.LimitStore), a
// coalesced write as ReserveAttempt.
func (db *DB) ReleaseAttempt(ctx context.Context, key []byte) error {
	err := db.coalesce(ctx, func(ctx context.Context, tx Execer) error {
		_, err := tx.Exec(ctx, `UPDATE rate_limits SET attempts = attempts - 1 WHERE key = ? AND attempts > 0`, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("release attempt: %w", err)
	}
	return nil
}

var _ loremnews.LimitStore = (*DB)(nil)
