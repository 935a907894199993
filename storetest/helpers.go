package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
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

// testExportLoad exports a database with every kind of row and loads it
// into a second one: the copy must hold the same rows, ids and counters.
func testExportLoad(t *testing.T, open Opener) {
	ctx := context.Background()
	src := open(t)
	MustSeed(t, src, 8, 12)
	u := MustCreateUser(t, src, "exporter")
	p := MustCreatePost(t, src, u.ID, "Exported post")
	MustCreateComment(t, src, p.ID, u.ID, "Exported comment")
	if err := src.DeletePost(ctx, 3); err != nil { // a gap in the ids
		t.Fatal(err)
	}
	if err := src.CreateSession(ctx, &loremnews.Session{UserID: u.ID, TokenDigest: []byte("token-digest"), UserAgent: "UA", IPAddress: "127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	ds, err := src.ExportDataset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dst := open(t)
	MustSeed(t, dst, 3, 3) // replaced by the load
	if err := dst.ImportDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	a, b := MustBeConsistent(t, src), MustBeConsistent(t, dst)
	if a.Users != b.Users || a.Posts != b.Posts || a.Comments != b.Comments || b.Sessions != 1 {
		t.Fatalf("source %+v, copy %+v", a, b)
	}
	again, err := dst.ExportDataset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(summary(again)), fmt.Sprint(summary(ds)); got != want {
		t.Fatalf("copy differs from source:\n got %s\nwant %s", got, want)
	}
	// The copy goes on issuing new ids after the copied ones, and knows
	// the deleted post was deleted.
	p2 := MustCreatePost(t, dst, u.ID, "Written after the copy")
	if p2.ID <= p.ID {
		t.Fatalf("new post id %d reuses a copied id (last %d)", p2.ID, p.ID)
	}
	if _, _, err := dst.PostPage(ctx, 3); loremnews.ErrorCode(err) != loremnews.EGONE {
		t.Fatalf("deleted post in the copy: %v, want EGONE", err)
	}
	s, owner, err := dst.FindSessionByTokenDigest(ctx, []byte("token-digest"), loremnews.SessionLimits{})
	if err != nil || owner.ID != u.ID || s.UserAgent != "UA" {
		t.Fatalf("session in the copy = %+v %+v, %v", s, owner, err)
	}
}

// summary is what must survive a copy: every row's ids, texts, counters and
// times (to the microsecond, PostgreSQL's precision).
func summary(ds *loremnews.Dataset) []string {
	var out []string
	for _, u := range ds.Users {
		out = append(out, fmt.Sprintf("u%d %s %s %q %d %s %s", u.ID, u.ScreenName, u.PasswordDigest, u.About, u.PostsCount,
			u.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000"), u.LastSeenAt.UTC().Format("2006-01-02T15:04:05.000000")))
	}
	for _, p := range ds.Posts {
		out = append(out, fmt.Sprintf("p%d %d %q %q %d %s", p.ID, p.UserID, p.Title, p.Description, p.CommentsCount,
			p.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000000")))
	}
	for _, c := range ds.Comments {
		out = append(out, fmt.Sprintf("c%d %d %d %q", c.ID, c.PostID, c.UserID, c.Body))
	}
	for _, s := range ds.Sessions {
		out = append(out, fmt.Sprintf("s%d %d %x", s.ID, s.UserID, s.TokenDigest))
	}
	return out
}

// testConcurrentWriters runs every benchmarking write from many goroutines
// at once: none may fail, and the counters must add up afterwards.
func testConcurrentWriters(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	MustSeed(t, db, 20, 200)
	before := MustBeConsistent(t, db)
	const workers, each = 16, 60
	var (
		wg                        sync.WaitGroup
		createdPosts, deletedPost atomic.Int64
		createdComments, deleted  atomic.Int64
		failures                  = make(chan error, workers*each)
	)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				var err error
				switch (w + i) % 5 {
				case 0:
					_, err = db.CreatePostByRandomUser(ctx, loremnews.PostInput{Title: fmt.Sprintf("Concurrent post %d-%d", w, i)})
					if err == nil {
						createdPosts.Add(1)
					}
				case 1:
					_, err = db.CreateCommentOnRandomPost(ctx, loremnews.CommentInput{Body: "A concurrent comment"})
					if err == nil {
						createdComments.Add(1)
					}
				case 2:
					err = db.DeleteRandomPost(ctx)
					if err == nil {
						deletedPost.Add(1)
					}
				case 3:
					_, err = db.DeleteRandomComment(ctx)
					if err == nil {
						deleted.Add(1)
					}
				case 4:
					_, err = db.TouchRandomUser(ctx)
				}
				if err != nil {
					failures <- err
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	n := 0
	for err := range failures {
		if n++; n <= 5 {
			t.Errorf("write failed: %v", err)
		}
	}
	if n > 0 {
		t.Fatalf("%d of %d writes failed", n, workers*each)
	}
	after := MustBeConsistent(t, db)
	if want := before.Posts + int(createdPosts.Load()-deletedPost.Load()); after.Posts != want {
		t.Fatalf("posts: %d, want %d (lost or doubled writes)", after.Posts, want)
	}
	if after.Comments > before.Comments+int(createdComments.Load()-deleted.Load()) {
		t.Fatalf("comments: %d, more than %d + %d - %d", after.Comments, before.Comments, createdComments.Load(), deleted.Load())
	}
}
