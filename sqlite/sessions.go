package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
)

// CreateSession stores a new signed-in browser and fills in its id and times.
func (db *DB) CreateSession(ctx context.Context, s *loremnews.Session) error {
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		return insertSession(ctx, tx, s, db.now())
	})
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// insertSession is CreateSession inside tx, for UpdateProfile too: it stores
// s, fills in its id and times, and marks its user seen now.
func insertSession(ctx context.Context, tx Execer, s *loremnews.Session, now time.Time) error {
	res, err := tx.Exec(ctx, `INSERT INTO sessions (user_id, token_digest, user_agent, ip_address, device, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, s.UserID, s.TokenDigest, s.UserAgent, s.IPAddress, s.Device, nanotime.Value(now), nanotime.Value(now))
	if isForeignKeyViolation(err) {
		return loremnews.Errorf(loremnews.ENOTFOUND, "User not found.")
	} else if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE users SET last_seen_at = ? WHERE id = ?`, nanotime.Value(now), s.UserID); err != nil {
		return err
	}
	s.ID, err = res.LastInsertId()
	s.CreatedAt, s.UpdatedAt = now, now
	return err
}

// FindSessionByTokenDigest returns the session with that token digest and
// its user, or ENOTFOUND (signed out, revoked, expired, or never existed).
func (db *DB) FindSessionByTokenDigest(ctx context.Context, digest []byte, limits loremnews.SessionLimits) (*loremnews.Session, *loremnews.User, error) {
	var (
		s loremnews.Session
		u *loremnews.User
	)
	activeAfter, createdAfter := limits.Cutoffs(db.now())
	err := db.read(ctx, func(ctx context.Context, q Querier) (err error) {
		u, err = scanUser(q.QueryRow(ctx, `SELECT `+userColumns+`, s.id, s.user_id, s.token_digest, s.user_agent, s.ip_address, s.created_at, s.updated_at
			FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_digest = ? AND s.updated_at > ? AND s.created_at > ?`, digest, nanotime.Bound(activeAfter), nanotime.Bound(createdAfter)),
			&s.ID, &s.UserID, &s.TokenDigest, &s.UserAgent, &s.IPAddress, nanotime.Into(&s.CreatedAt), nanotime.Into(&s.UpdatedAt))
		if errors.Is(err, sql.ErrNoRows) {
			return loremnews.Errorf(loremnews.ENOTFOUND, "Session not found.")
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("find session: %w", err)
	}
	return &s, u, nil
}

// TouchSession records that the session's browser was seen now: a touch,
// which fails only when the database does, so it shares a transaction
// with the touches and reservations waiting at the same moment.
func (db *DB) TouchSession(ctx context.Context, s *loremnews.Session) error {
	err := db.coalesce(ctx, func(ctx context.Context, tx Execer) error {
		now := db.now()
		if _, err := tx.Exec(ctx, `UPDATE sessions SET updated_at = ? WHERE id = ?`, nanotime.Value(now), s.ID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE users SET last_seen_at = ? WHERE id = ?`, nanotime.Value(now), s.UserID)
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
	err := db.read(ctx, func(ctx context.Context, q Querier) error {
		rows, err := q.Query(ctx, `SELECT id, user_id, user_agent, ip_address, created_at, updated_at
			FROM sessions WHERE user_id = ? AND updated_at > ? AND created_at > ? ORDER BY updated_at DESC, id DESC`, userID, nanotime.Bound(activeAfter), nanotime.Bound(createdAfter))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s loremnews.Session
			if err := rows.Scan(&s.ID, &s.UserID, &s.UserAgent, &s.IPAddress, nanotime.Into(&s.CreatedAt), nanotime.Into(&s.UpdatedAt)); err != nil {
				return err
			}
			sessions = append(sessions, &s)
		}
		return rows.Err()
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
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		res, err := tx.Exec(ctx, `DELETE FROM sessions WHERE id = ? AND user_id = ?`, id, userID)
		if err != nil {
			return err
		}
		return mustAffect(res, "Session")
	})
	if err != nil {
		return fmt.Errorf("delete session %d: %w", id, err)
	}
	return nil
}

// RevokeSession deletes the user's session id and keeps the digest of the
// device cookie set with it until deviceExpires.
func (db *DB) RevokeSession(ctx context.Context, userID, id int64, deviceExpires time.Time) error {
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		var device []byte
		err := tx.QueryRow(ctx, `DELETE FROM sessions WHERE id = ? AND user_id = ? RETURNING device`, id, userID).Scan(&device)
		if errors.Is(err, sql.ErrNoRows) {
			return loremnews.Errorf(loremnews.ENOTFOUND, "Session not found.")
		} else if err != nil || device == nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO revoked_devices (user_id, device, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (user_id, device) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)`,
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
	err := db.read(ctx, func(ctx context.Context, q Querier) error {
		return q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM revoked_devices WHERE user_id = ? AND device = ? AND expires_at > ?)`,
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
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		res, err := tx.Exec(ctx, `DELETE FROM sessions WHERE updated_at <= ? OR created_at <= ?`, nanotime.Bound(activeAfter), nanotime.Bound(createdAfter))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		// The revoked device cookies that have expired since.
		_, err = tx.Exec(ctx, `DELETE FROM revoked_devices WHERE expires_at <= ?`, nanotime.Value(db.now()))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", err)
	}
	return n, nil
}
