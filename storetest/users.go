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
		_, err = db.UpdateUser(ctx, 999, "x1", "", "")
		wantCode(t, err, loremnews.ENOTFOUND)
		wantCode(t, db.DeleteUser(ctx, 999), loremnews.ENOTFOUND)
		_, _, _, err = db.UserPage(ctx, 999, 10)
		wantCode(t, err, loremnews.ENOTFOUND)
	})
	t.Run("Update", func(t *testing.T) {
		u := MustCreateUser(t, db, "dave")
		got, err := db.UpdateUser(ctx, u.ID, "david", "I write things.", "")
		if err != nil || got.ScreenName != "david" || got.About != "I write things." || got.PasswordDigest != "digest" {
			t.Fatalf("update = %+v, %v", got, err)
		}
		got, err = db.UpdateUser(ctx, u.ID, "david", "", "newdigest")
		if err != nil || got.PasswordDigest != "newdigest" {
			t.Fatalf("password update = %+v, %v", got, err)
		}
		_, err = db.UpdateUser(ctx, u.ID, "carol", "", "")
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

// testChangePassword: the new digest is stored and every other session of
// the user is gone; other users' sessions stay.
func testChangePassword(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice, bob := MustCreateUser(t, db, "alice"), MustCreateUser(t, db, "bob")
	var mine []*loremnews.Session
	for i := range 3 {
		s := &loremnews.Session{UserID: alice.ID, TokenDigest: []byte(fmt.Sprint("alice-", i))}
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
		mine = append(mine, s)
	}
	if err := db.CreateSession(ctx, &loremnews.Session{UserID: bob.ID, TokenDigest: []byte("bob-0")}); err != nil {
		t.Fatal(err)
	}
	if err := db.ChangePassword(ctx, alice.ID, "new-digest", mine[1].ID); err != nil {
		t.Fatal(err)
	}
	if u, _ := db.FindUserByID(ctx, alice.ID); u.PasswordDigest != "new-digest" {
		t.Fatalf("digest = %q", u.PasswordDigest)
	}
	list, err := db.UserSessions(ctx, alice.ID, loremnews.SessionLimits{})
	if err != nil || len(list) != 1 || list[0].ID != mine[1].ID {
		t.Fatalf("alice's sessions after the change = %v, %v", list, err)
	}
	if _, _, err := db.FindSessionByTokenDigest(ctx, []byte("bob-0"), loremnews.SessionLimits{}); err != nil {
		t.Fatalf("bob's session: %v", err)
	}
	wantCode(t, db.ChangePassword(ctx, 999, "x", 0), loremnews.ENOTFOUND)
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
