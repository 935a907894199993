package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
)

// CreateSession stores a new signed-in browser and fills in its id and times.
func (db *DB) CreateSession(ctx context.Context, s *loremnews.Session) error {
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		return insertSession(ctx, tx, s, db.now())
	})
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// insertSession is CreateSession inside tx, for UpdateProfile too: it stores
// s, fills in its id and times, and marks its user seen now.
func insertSession(ctx context.Context, tx pgx.Tx, s *loremnews.Session, now time.Time) error {
	err := tx.QueryRow(ctx, `INSERT INTO sessions (user_id, token_digest, user_agent, ip_address, device, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id`, s.UserID, s.TokenDigest, s.UserAgent, s.IPAddress, s.Device, nanotime.Value(now)).Scan(&s.ID)
	if err != nil {
		return uniqueError(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE users SET last_seen_at = $1 WHERE id = $2`, nanotime.Value(now), s.UserID); err != nil {
		return err
	}
	s.CreatedAt, s.UpdatedAt = now, now
	return nil
}

// FindSessionByTokenDigest returns the session with that token digest and
// its user, or ENOTFOUND (signed out, revoked, expired, or never existed).
func (db *DB) FindSessionByTokenDigest(ctx context.Context, digest []byte, limits loremnews.SessionLimits) (*loremnews.Session, *loremnews.User, error) {
	var (
		s loremnews.Session
		u *loremnews.User
	)
	activeAfter, createdAfter := limits.Cutoffs(db.now())
	err := db.readEach(ctx, func(q querier) (err error) {
		u, err = scanUser(q.QueryRow(ctx, `SELECT `+userColumns+`, s.id, s.user_id, s.token_digest, s.user_agent, s.ip_address, s.created_at, s.updated_at
			FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_digest = $1 AND s.updated_at > $2 AND s.created_at > $3`, digest, nanotime.Bound(activeAfter), nanotime.Bound(createdAfter)),
			&s.ID, &s.UserID, &s.TokenDigest, &s.UserAgent, &s.IPAddress, nanotime.Into(&s.CreatedAt), nanotime.Into(&s.UpdatedAt))
		if errors.Is(err, pgx.ErrNoRows) {
			return loremnews.Errorf(loremnews.ENOTFOUND, "Session not found.")
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("find session: %w", err)
	}
	return &s, u, nil
}

// TouchSession records that the session's browser was seen now.
func (db *DB) TouchSession(ctx context.Context, s *loremnews.Session) error {
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		now := db.now()
		if _, err := tx.Exec(ctx, `UPDATE sessions SET updated_at = $1 WHERE id = $2`, nanotime.Value(now), s.ID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE users SET last_seen_at = $1 WHERE id = $2`, nanotime.Value(now), s.UserID)
		s.UpdatedAt = now
		return err
	})
	if err != nil {
		return fmt.Errorf("touch session %d: %w", s.ID, err)
	}
	return nil
}

// UserSessions lists a user's live signed-in browsers, most recently active first.
func (db *DB) UserSessions(ctx context.Context, userID int64, limits loremnews.SessionLimits) ([]*loremnews.Session, error) {
	var sessions []*loremnews.Session
	activeAfter, createdAfter := limits.Cutoffs(db.now())
	err := db.readEach(ctx, func(q querier) error {
		rows, err := q.Query(ctx, `SELECT id, user_id, user_agent, ip_address, created_at, updated_at
			FROM sessions WHERE user_id = $1 AND updated_at > $2 AND created_at > $3 ORDER BY updated_at DESC, id DESC`, userID, nanotime.Bound(activeAfter), nanotime.Bound(createdAfter))
		if err != nil {
			return err
		}
		sessions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*loremnews.Session, error) {
			var s loremnews.Session
			return &s, r.Scan(&s.ID, &s.UserID, &s.UserAgent, &s.IPAddress, nanotime.Into(&s.CreatedAt), nanotime.Into(&s.UpdatedAt))
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("user sessions %d: %w", userID, err)
	}
	return sessions, nil
}

// DeleteSession signs out the user's browser id. Matching the user in the
// same statement is the ownership check: another user's session id is
// ENOTFOUND, as is one that does not exist.
func (db *DB) DeleteSession(ctx context.Context, userID, id int64) error {
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE id = $1 AND user_id = $2`, id, userID)
		if err != nil {
			return err
		}
		return mustAffect(tag, "Session")
	})
	if err != nil {
		return fmt.Errorf("delete session %d: %w", id, err)
	}
	return nil
}

// RevokeSession deletes the user's session id and keeps the digest of the
// device cookie set with it until deviceExpires.
func (db *DB) RevokeSession(ctx context.Context, userID, id int64, deviceExpires time.Time) error {
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var device []byte
		err := tx.QueryRow(ctx, `DELETE FROM sessions WHERE id = $1 AND user_id = $2 RETURNING device`, id, userID).Scan(&device)
		if errors.Is(err, pgx.ErrNoRows) {
			return loremnews.Errorf(loremnews.ENOTFOUND, "Session not found.")
		} else if err != nil || device == nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO revoked_devices (user_id, device, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (user_id, device) DO UPDATE SET expires_at = greatest(revoked_devices.expires_at, excluded.expires_at)`,
			userID, device, nanotime.Value(deviceExpires))
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke session %d: %w", id, err)
	}
	return nil
}

// DeviceRevoked reports whether the user revoked the session the device
// cookie with that digest was set with (and it has not expired since).
func (db *DB) DeviceRevoked(ctx context.Context, userID int64, device []byte) (bool, error) {
	var revoked bool
	err := db.readEach(ctx, func(q querier) error {
		return q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM revoked_devices WHERE user_id = $1 AND device = $2 AND expires_at > $3)`,
			userID, device, nanotime.Value(db.now())).Scan(&revoked)
	})
	if err != nil {
		return false, fmt.Errorf("device revoked: %w", err)
	}
	return revoked, nil
}

// DeleteExpiredSessions deletes the sessions past limits, and the revoked
// device cookies past their expiry. It scans the table: it runs now and
// then (serve runs it hourly), not per request.
func (db *DB) DeleteExpiredSessions(ctx context.Context, limits loremnews.SessionLimits) (int64, error) {
	var n int64
	activeAfter, createdAfter := limits.Cutoffs(db.now())
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE updated_at <= $1 OR created_at <= $2`, nanotime.Bound(activeAfter), nanotime.Bound(createdAfter))
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		// The revoked device cookies that have expired since.
		_, err = tx.Exec(ctx, `DELETE FROM revoked_devices WHERE expires_at <= $1`, nanotime.Value(db.now()))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", err)
	}
	return n, nil
}
