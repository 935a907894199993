package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/loremnews/loremnews"
)

func testUsers(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)

	t.Run("CreateAndFind", func(t *testing.T) {
		u := MustCreateUser(t, db, "Carol")
		if u.ID == 0 || u.CreatedAt.IsZero() || u.PostsCount != 0 {
			t.Fatalf("created = %+v", u)
		}
		got, err := db.FindUserByScreenName(ctx, "carol") // case-insensitive
		if err != nil || got.ID != u.ID {
			t.Fatalf("by name = %+v, %v", got, err)
		}
	})
	t.Run("DuplicateScreenNameIsValidationError", func(t *testing.T) {
		_, err := db.CreateUser(ctx, "CAROL", "x")
		wantCode(t, err, loremnews.EINVALID)
		if msg := loremnews.ErrorMessage(err); msg != "Screen name has already been taken." {
			t.Fatalf("message = %q", msg)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		_, err := db.FindUserByID(ctx, 999)
		wantCode(t, err, loremnews.ENOTFOUND)
		_, err = db.FindUserByScreenName(ctx, "nobody")
		wantCode(t, err, loremnews.ENOTFOUND)
		_, err = db.UpdateProfile(ctx, 999, loremnews.ProfileChange{ScreenName: "x1"})
		wantCode(t, err, loremnews.ENOTFOUND)
		_, err = db.UpdateProfile(ctx, 999, loremnews.ProfileChange{ScreenName: "x1", PasswordDigest: "x",
			NewSession: &loremnews.Session{TokenDigest: []byte("nobody-0")}})
		wantCode(t, err, loremnews.ENOTFOUND)
		wantCode(t, db.DeleteUser(ctx, 999), loremnews.ENOTFOUND)
		_, _, _, err = db.UserPage(ctx, 999, 10)
		wantCode(t, err, loremnews.ENOTFOUND)
	})
	t.Run("Update", func(t *testing.T) {
		u := MustCreateUser(t, db, "dave")
		got, err := db.UpdateProfile(ctx, u.ID, loremnews.ProfileChange{ScreenName: "david", About: "I write things."})
		if err != nil || got.ScreenName != "david" || got.About != "I write things." || got.PasswordDigest != "digest" {
			t.Fatalf("update = %+v, %v", got, err)
		}
		got, err = db.UpdateProfile(ctx, u.ID, loremnews.ProfileChange{ScreenName: "david", PasswordDigest: "newdigest"})
		if err != nil || got.PasswordDigest != "newdigest" || got.About != "" {
			t.Fatalf("password update = %+v, %v", got, err)
		}
		_, err = db.UpdateProfile(ctx, u.ID, loremnews.ProfileChange{ScreenName: "carol"})
		wantCode(t, err, loremnews.EINVALID)
	})
	t.Run("DeleteCascadesAndFixesOtherPostsCounters", func(t *testing.T) {
		author := MustCreateUser(t, db, "erin")
		leaver := MustCreateUser(t, db, "frank")
		p1 := MustCreatePost(t, db, author.ID, "Erin's first post")
		own := MustCreatePost(t, db, leaver.ID, "Frank's own post")
		MustCreateComment(t, db, p1.ID, leaver.ID, "Frank was here")
		MustCreateComment(t, db, p1.ID, leaver.ID, "Frank again here")
		keep := MustCreateComment(t, db, p1.ID, author.ID, "Erin replies")
		MustCreateComment(t, db, own.ID, author.ID, "Erin on Frank's")
		if err := db.CreateSession(ctx, &loremnews.Session{UserID: leaver.ID, TokenDigest: []byte("frank-token")}); err != nil {
			t.Fatal(err)
		}

		if err := db.DeleteUser(ctx, leaver.ID); err != nil {
			t.Fatal(err)
		}
		p, comments, err := db.PostPage(ctx, p1.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.CommentsCount != 1 || len(comments) != 1 || comments[0].ID != keep.ID {
			t.Fatalf("after delete: count %d, comments %v", p.CommentsCount, comments)
		}
		_, _, err = db.PostPage(ctx, own.ID)
		wantCode(t, err, loremnews.EGONE)
		_, _, err = db.FindSessionByTokenDigest(ctx, []byte("frank-token"), loremnews.SessionLimits{})
		wantCode(t, err, loremnews.ENOTFOUND)
		MustBeConsistent(t, db)
	})
}

// testChangePassword: a profile change with a new password stores the
// digest, ends every session of the user and starts the new one in their
// place, all in one call; other users' sessions stay. A change that fails
// (a taken screen name) changes nothing: not the password, not the
// sessions.
func testChangePassword(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice, bob := MustCreateUser(t, db, "alice"), MustCreateUser(t, db, "bob")
	for i := range 3 {
		if err := db.CreateSession(ctx, &loremnews.Session{UserID: alice.ID, TokenDigest: []byte(fmt.Sprint("alice-", i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateSession(ctx, &loremnews.Session{UserID: bob.ID, TokenDigest: []byte("bob-0")}); err != nil {
		t.Fatal(err)
	}
	sessionsOf := func(id int64) []*loremnews.Session {
		t.Helper()
		list, err := db.UserSessions(ctx, id, loremnews.SessionLimits{})
		if err != nil {
			t.Fatal(err)
		}
		return list
	}

	t.Run("FailedChangeChangesNothing", func(t *testing.T) {
		_, err := db.UpdateProfile(ctx, alice.ID, loremnews.ProfileChange{ScreenName: "bob", PasswordDigest: "new-digest",
			NewSession: &loremnews.Session{TokenDigest: []byte("alice-new")}})
		wantCode(t, err, loremnews.EINVALID)
		if u, _ := db.FindUserByID(ctx, alice.ID); u.PasswordDigest != "digest" || u.ScreenName != "alice" {
			t.Errorf("after a refused change: screen name %q, digest %q; want alice, digest", u.ScreenName, u.PasswordDigest)
		}
		if got := len(sessionsOf(alice.ID)); got != 3 {
			t.Errorf("alice's sessions after a refused change: %d, want 3", got)
		}
		if _, _, err := db.FindSessionByTokenDigest(ctx, []byte("alice-new"), loremnews.SessionLimits{}); loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
			t.Errorf("the new session of a refused change: %v, want ENOTFOUND", err)
		}
	})
	t.Run("NewPassword", func(t *testing.T) {
		fresh := &loremnews.Session{TokenDigest: []byte("alice-new"), UserAgent: "Firefox"}
		got, err := db.UpdateProfile(ctx, alice.ID, loremnews.ProfileChange{ScreenName: "alice", About: "Hi.", PasswordDigest: "new-digest", NewSession: fresh})
		if err != nil {
			t.Fatal(err)
		}
		if got.PasswordDigest != "new-digest" || got.About != "Hi." {
			t.Errorf("returned user: digest %q, about %q; want new-digest, Hi.", got.PasswordDigest, got.About)
		}
		if u, _ := db.FindUserByID(ctx, alice.ID); u.PasswordDigest != "new-digest" {
			t.Errorf("stored digest = %q, want new-digest", u.PasswordDigest)
		}
		if fresh.ID == 0 || fresh.UserID != alice.ID || fresh.CreatedAt.IsZero() {
			t.Errorf("new session not filled in: %+v", fresh)
		}
		list := sessionsOf(alice.ID)
		if len(list) != 1 || list[0].ID != fresh.ID {
			t.Errorf("alice's sessions after the change = %v, want only the new one (%d)", list, fresh.ID)
		}
		if s, u, err := db.FindSessionByTokenDigest(ctx, []byte("alice-new"), loremnews.SessionLimits{}); err != nil || s.ID != fresh.ID || u.ID != alice.ID {
			t.Errorf("the new session signs in: %+v, %+v, %v", s, u, err)
		}
		if _, _, err := db.FindSessionByTokenDigest(ctx, []byte("bob-0"), loremnews.SessionLimits{}); err != nil {
			t.Errorf("bob's session: %v", err)
		}
	})
	t.Run("NewPasswordWithoutSession", func(t *testing.T) {
		if _, err := db.UpdateProfile(ctx, alice.ID, loremnews.ProfileChange{ScreenName: "alice", PasswordDigest: "newer-digest"}); err != nil {
			t.Fatal(err)
		}
		if list := sessionsOf(alice.ID); len(list) != 0 {
			t.Errorf("alice's sessions = %v, want none", list)
		}
	})
}

// testRehashPassword: the digest is replaced only while it is the one the
// caller read, and no session ends.
func testRehashPassword(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice := MustCreateUser(t, db, "alice")
	s := &loremnews.Session{UserID: alice.ID, TokenDigest: []byte("alice-0")}
	if err := db.CreateSession(ctx, s); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		old, new string
		want     bool
		stored   string
	}{
		{alice.PasswordDigest, "rehashed", true, "rehashed"},
		{alice.PasswordDigest, "stale", false, "rehashed"}, // changed meanwhile: left alone
	} {
		done, err := db.RehashPassword(ctx, alice.ID, tc.old, tc.new)
		if err != nil || done != tc.want {
			t.Fatalf("RehashPassword(%q → %q) = %v, %v; want %v", tc.old, tc.new, done, err, tc.want)
		}
		if u, _ := db.FindUserByID(ctx, alice.ID); u.PasswordDigest != tc.stored {
			t.Fatalf("digest = %q, want %q", u.PasswordDigest, tc.stored)
		}
	}
	if done, err := db.RehashPassword(ctx, 999, "x", "y"); done || err != nil {
		t.Fatalf("no such user: %v, %v", done, err)
	}
	if _, _, err := db.FindSessionByTokenDigest(ctx, []byte("alice-0"), loremnews.SessionLimits{}); err != nil {
		t.Fatalf("the session ended: %v", err)
	}
}
