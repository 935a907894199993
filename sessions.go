package loremnews

import "time"

// Session is one signed-in browser. The browser holds a random token whose
// SHA-256 digest is stored here; deleting the row signs that browser out.
type Session struct {
	ID          int64
	UserID      int64
	TokenDigest []byte
	UserAgent   string
	IPAddress   string
	// Device is the SHA-256 of the device cookie set with the session (nil
	// if none): revoking the session forgets that cookie.
	Device    []byte
	CreatedAt time.Time
	UpdatedAt time.Time
}

// SessionLimits bound how long the server accepts a session, whatever the
// browser's cookie says: Idle since its last recorded activity, Lifetime
// since sign-in. Zero means no limit.
type SessionLimits struct {
	Idle     time.Duration
	Lifetime time.Duration
}

// Cutoffs turns the limits into the two instants a live session must be
// newer than at now: its last activity and its sign-in. A zero limit gives
// the zero time, which every session is newer than.
func (l SessionLimits) Cutoffs(now time.Time) (activeAfter, createdAfter time.Time) {
	if l.Idle > 0 {
		activeAfter = now.Add(-l.Idle)
	}
	if l.Lifetime > 0 {
		createdAfter = now.Add(-l.Lifetime)
	}
	return activeAfter, createdAfter
}
