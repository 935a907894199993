package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

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

// TimesOf lists every time in ds by "table id column" ("users 3
// created_at"), so a test can compare the times two reads of the same rows
// gave, as the stores' migration tests do.
func TimesOf(ds *loremnews.Dataset) map[string]time.Time {
	times := map[string]time.Time{}
	put := func(table string, id int64, col string, v time.Time) {
		times[fmt.Sprintf("%s %d %s", table, id, col)] = v
	}
	for _, u := range ds.Users {
		put("users", u.ID, "last_seen_at", u.LastSeenAt)
		put("users", u.ID, "created_at", u.CreatedAt)
		put("users", u.ID, "updated_at", u.UpdatedAt)
	}
	for _, p := range ds.Posts {
		put("posts", p.ID, "published_at", p.PublishedAt)
		put("posts", p.ID, "created_at", p.CreatedAt)
		put("posts", p.ID, "updated_at", p.UpdatedAt)
	}
	for _, c := range ds.Comments {
		put("comments", c.ID, "created_at", c.CreatedAt)
		put("comments", c.ID, "updated_at", c.UpdatedAt)
	}
	for _, s := range ds.Sessions {
		put("sessions", s.ID, "created_at", s.CreatedAt)
		put("sessions", s.ID, "updated_at", s.UpdatedAt)
	}
	return times
}
