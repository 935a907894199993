package storetest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
)

func testSessions(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice := MustCreateUser(t, db, "alice")
	s := &loremnews.Session{UserID: alice.ID, TokenDigest: []byte("digest-1"), UserAgent: "Firefox", IPAddress: "127.0.0.1"}
	if err := db.CreateSession(ctx, s); err != nil || s.ID == 0 {
		t.Fatalf("create = %+v, %v", s, err)
	}
	got, u, err := db.FindSessionByTokenDigest(ctx, []byte("digest-1"), loremnews.SessionLimits{})
	if err != nil || got.ID != s.ID || u.ID != alice.ID || !bytes.Equal(got.TokenDigest, []byte("digest-1")) || got.UserAgent != "Firefox" {
		t.Fatalf("find = %+v %+v, %v", got, u, err)
	}
	if err := db.TouchSession(ctx, got); err != nil {
		t.Fatal(err)
	}
	list, err := db.UserSessions(ctx, alice.ID, loremnews.SessionLimits{})
	if err != nil || len(list) != 1 {
		t.Fatalf("list = %v, %v", list, err)
	}
	err = db.CreateSession(ctx, &loremnews.Session{UserID: 999, TokenDigest: []byte("x")})
	wantCode(t, err, loremnews.ENOTFOUND)
	// Another user cannot delete alice's session by its id.
	bob := MustCreateUser(t, db, "bob")
	wantCode(t, db.DeleteSession(ctx, bob.ID, s.ID), loremnews.ENOTFOUND)
	if _, _, err := db.FindSessionByTokenDigest(ctx, []byte("digest-1"), loremnews.SessionLimits{}); err != nil {
		t.Fatalf("alice's session after bob tried to delete it: %v", err)
	}
	if err := db.DeleteSession(ctx, alice.ID, s.ID); err != nil {
		t.Fatal(err)
	}
	_, _, err = db.FindSessionByTokenDigest(ctx, []byte("digest-1"), loremnews.SessionLimits{})
	wantCode(t, err, loremnews.ENOTFOUND)
	wantCode(t, db.DeleteSession(ctx, alice.ID, s.ID), loremnews.ENOTFOUND)
}

// testSessionLimits: a session past its idle limit or its lifetime is not
// found, nor listed, and DeleteExpiredSessions removes exactly those rows.
// The rows are loaded with their times, as a server would have left them.
func testSessionLimits(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	now := time.Now().UTC().Truncate(time.Second)
	day := 24 * time.Hour
	alice := &loremnews.User{ID: 1, ScreenName: "alice", PasswordDigest: "digest", CreatedAt: now.Add(-400 * day), UpdatedAt: now.Add(-400 * day), LastSeenAt: now}
	session := func(id int64, created, active time.Duration) *loremnews.Session {
		return &loremnews.Session{ID: id, UserID: 1, TokenDigest: []byte(fmt.Sprint("digest-", id)), UserAgent: "UA",
			CreatedAt: now.Add(-created), UpdatedAt: now.Add(-active)}
	}
	ds := &loremnews.Dataset{Users: []*loremnews.User{alice}, Sessions: []*loremnews.Session{
		session(1, 90*day, 90*day),    // signed in 90 days ago, never seen since
		session(2, 90*day, time.Hour), // active an hour ago, but signed in 90 days ago
		session(3, 10*day, 8*day),     // idle for 8 days
		session(4, 10*day, time.Hour), // live
	}}
	if err := db.ImportDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	limits := loremnews.SessionLimits{Idle: 7 * day, Lifetime: 30 * day}

	// No limits: every row is found (what a store without limits did).
	for id := 1; id <= 4; id++ {
		if _, _, err := db.FindSessionByTokenDigest(ctx, []byte(fmt.Sprint("digest-", id)), loremnews.SessionLimits{}); err != nil {
			t.Fatalf("session %d without limits: %v", id, err)
		}
	}
	for id := 1; id <= 3; id++ {
		_, _, err := db.FindSessionByTokenDigest(ctx, []byte(fmt.Sprint("digest-", id)), limits)
		wantCode(t, err, loremnews.ENOTFOUND)
	}
	if s, _, err := db.FindSessionByTokenDigest(ctx, []byte("digest-4"), limits); err != nil || s.ID != 4 {
		t.Fatalf("live session = %+v, %v", s, err)
	}
	list, err := db.UserSessions(ctx, 1, limits)
	if err != nil || len(list) != 1 || list[0].ID != 4 {
		t.Fatalf("listed sessions = %v, %v", list, err)
	}
	n, err := db.DeleteExpiredSessions(ctx, limits)
	if err != nil || n != 3 {
		t.Fatalf("deleted %d expired sessions, %v; want 3", n, err)
	}
	if c := MustBeConsistent(t, db); c.Sessions != 1 {
		t.Fatalf("%d sessions left, want 1", c.Sessions)
	}
	if n, err := db.DeleteExpiredSessions(ctx, limits); err != nil || n != 0 {
		t.Fatalf("second purge deleted %d, %v", n, err)
	}
}

// testRevokedDevices: revoking a session keeps its device cookie's digest
// until the given expiry (only the user's, only that one); signing out
// (DeleteSession) forgets nothing; a session without a device revokes as
// before; the hourly purge removes the digests once they have expired.
func testRevokedDevices(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice := MustCreateUser(t, db, "alice")
	bob := MustCreateUser(t, db, "bob")
	device := func(n byte) []byte { return bytes.Repeat([]byte{n}, 32) }
	session := func(user int64, token string, dev []byte) *loremnews.Session {
		t.Helper()
		s := &loremnews.Session{UserID: user, TokenDigest: []byte(token), Device: dev}
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	revoked := func(user int64, dev []byte) bool {
		t.Helper()
		r, err := db.DeviceRevoked(ctx, user, dev)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	laptop := session(alice.ID, "laptop", device(1))
	phone := session(alice.ID, "phone", device(2))
	old := session(alice.ID, "old", nil)
	if revoked(alice.ID, device(1)) || revoked(alice.ID, device(2)) {
		t.Fatal("a device is revoked before any session was")
	}
	year := time.Now().Add(365 * 24 * time.Hour)
	wantCode(t, db.RevokeSession(ctx, bob.ID, laptop.ID, year), loremnews.ENOTFOUND)
	if revoked(alice.ID, device(1)) {
		t.Fatal("bob's attempt to revoke alice's session revoked her device")
	}
	if err := db.RevokeSession(ctx, alice.ID, laptop.ID, year); err != nil {
		t.Fatal(err)
	}
	_, _, err := db.FindSessionByTokenDigest(ctx, []byte("laptop"), loremnews.SessionLimits{})
	wantCode(t, err, loremnews.ENOTFOUND)
	if !revoked(alice.ID, device(1)) || revoked(alice.ID, device(2)) || revoked(bob.ID, device(1)) {
		t.Fatal("want the laptop's device revoked for alice, and nothing else")
	}
	wantCode(t, db.RevokeSession(ctx, alice.ID, laptop.ID, year), loremnews.ENOTFOUND)
	if err := db.DeleteSession(ctx, alice.ID, phone.ID); err != nil {
		t.Fatal(err)
	}
	if revoked(alice.ID, device(2)) {
		t.Fatal("signing out revoked the phone's device")
	}
	if err := db.RevokeSession(ctx, alice.ID, old.ID, year); err != nil {
		t.Fatalf("revoke a session without a device: %v", err)
	}

	// A digest whose cookie has expired is not revoked any more, and goes.
	tablet := session(alice.ID, "tablet", device(3))
	if err := db.RevokeSession(ctx, alice.ID, tablet.ID, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if revoked(alice.ID, device(3)) {
		t.Fatal("an expired device cookie is revoked")
	}
	if _, err := db.DeleteExpiredSessions(ctx, loremnews.SessionLimits{}); err != nil {
		t.Fatal(err)
	}
	if !revoked(alice.ID, device(1)) {
		t.Fatal("the purge forgot a revoked device that has not expired")
	}
}
