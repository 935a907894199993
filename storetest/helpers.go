package storetest

import (
	"context"
	"testing"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/seed"
)

// MustSeed loads a small deterministic data set.
func MustSeed(tb testing.TB, db loremnews.Database, users, posts int) *seed.Dataset {
	tb.Helper()
	ds, err := seed.Generate(seed.Config{Users: users, Posts: posts, Seed: 7, BcryptCost: 4})
	if err != nil {
		tb.Fatal(err)
	}
	if err := db.ImportDataset(context.Background(), ds); err != nil {
		tb.Fatal(err)
	}
	return ds
}

// MustBeConsistent fails the test unless integrity, foreign keys and every
// counter cache check out.
func MustBeConsistent(tb testing.TB, db loremnews.Database) loremnews.Consistency {
	tb.Helper()
	c, err := db.CheckConsistency(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if !c.OK() {
		tb.Fatalf("database inconsistent: %+v", c)
	}
	return c
}

// MustCreateUser creates a user with the password digest "digest".
func MustCreateUser(tb testing.TB, db loremnews.Store, name string) *loremnews.User {
	tb.Helper()
	u, err := db.CreateUser(context.Background(), name, "digest")
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// MustCreatePost creates a post with the description "Some text.".
func MustCreatePost(tb testing.TB, db loremnews.Store, userID int64, title string) *loremnews.Post {
	tb.Helper()
	p, err := db.CreatePost(context.Background(), userID, loremnews.PostInput{Title: title, Description: "Some text."})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// MustCreateComment creates a comment.
func MustCreateComment(tb testing.TB, db loremnews.Store, postID, userID int64, body string) *loremnews.Comment {
	tb.Helper()
	c, err := db.CreateComment(context.Background(), postID, userID, loremnews.CommentInput{Body: body})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// WantCode fails the test unless err has the domain error code.
func WantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	if got := loremnews.ErrorCode(err); got != code {
		tb.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}

func wantCode(tb testing.TB, err error, code string) {
	tb.Helper()
	WantCode(tb, err, code)
}
