// Package storetest is the test suite every loremnews.Database must pass:
// the SQLite and PostgreSQL stores run the same tests (sqlite/store_test.go,
// postgres/store_test.go), so the two backends behave the same.
package storetest

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
)

// Opener opens a fresh, empty, migrated database that is closed (and
// removed) when the test ends.
type Opener func(tb testing.TB) loremnews.Database

// Run runs the whole suite against the databases open returns, but for the
// tests named in except.
func Run(t *testing.T, open Opener, except ...string) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"Users", testUsers},
		{"Posts", testPosts},
		{"Comments", testComments},
		{"Sessions", testSessions},
		{"SessionLimits", testSessionLimits},
		{"ChangePassword", testChangePassword},
		{"KeysetPaging", testKeysetPaging},
		{"SeedLoad", testSeedLoad},
		{"ExportLoadRoundTrip", testExportLoad},
		{"ImportStream", testImportStream},
		{"BenchmarkOperations", testBenchmarkOperations},
		{"ConcurrentWriters", testConcurrentWriters},
	} {
		if slices.Contains(except, tc.name) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

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

func testPosts(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice := MustCreateUser(t, db, "alice")
	bob := MustCreateUser(t, db, "bob")

	p := MustCreatePost(t, db, alice.ID, "Hello, world")
	t.Run("CreateCountsInAuthor", func(t *testing.T) {
		u, _ := db.FindUserByID(ctx, alice.ID)
		if u.PostsCount != 1 {
			t.Fatalf("posts_count = %d", u.PostsCount)
		}
		got, err := db.FindPostByID(ctx, p.ID)
		if err != nil || got.Title != "Hello, world" || got.Author.ScreenName != "alice" || got.Description != "Some text." {
			t.Fatalf("find = %+v, %v", got, err)
		}
	})
	t.Run("DuplicateTitleIsValidationError", func(t *testing.T) {
		_, err := db.CreatePost(ctx, bob.ID, loremnews.PostInput{Title: "Hello, world"})
		wantCode(t, err, loremnews.EINVALID)
		if msg := loremnews.ErrorMessage(err); msg != "Title has already been taken." {
			t.Fatalf("message = %q", msg)
		}
		u, _ := db.FindUserByID(ctx, bob.ID)
		if u.PostsCount != 0 {
			t.Fatal("failed create changed posts_count")
		}
	})
	t.Run("UnknownAuthor", func(t *testing.T) {
		_, err := db.CreatePost(ctx, 999, loremnews.PostInput{Title: "Orphan post"})
		wantCode(t, err, loremnews.ENOTFOUND)
	})
	t.Run("Update", func(t *testing.T) {
		got, err := db.UpdatePost(ctx, p.ID, loremnews.PostInput{Title: "Hello again", Description: "New."})
		if err != nil || got.Title != "Hello again" || got.Description != "New." {
			t.Fatalf("update = %+v, %v", got, err)
		}
		MustCreatePost(t, db, bob.ID, "Bob's post")
		_, err = db.UpdatePost(ctx, p.ID, loremnews.PostInput{Title: "Bob's post"})
		wantCode(t, err, loremnews.EINVALID)
		_, err = db.UpdatePost(ctx, 999, loremnews.PostInput{Title: "Whatever"})
		wantCode(t, err, loremnews.ENOTFOUND)
	})
	t.Run("ListsNewestFirst", func(t *testing.T) {
		for i := range 5 {
			MustCreatePost(t, db, bob.ID, fmt.Sprintf("Listing post %d", i))
		}
		recent, err := db.RecentPosts(ctx, 3)
		if err != nil || len(recent) != 3 || recent[0].Title != "Listing post 4" || recent[0].Author.ScreenName != "bob" {
			t.Fatalf("recent = %v, %v", recent, err)
		}
	})
	t.Run("DeleteCascadesComments", func(t *testing.T) {
		MustCreateComment(t, db, p.ID, bob.ID, "Nice post!")
		MustCreateComment(t, db, p.ID, bob.ID, "Really nice.")
		if err := db.DeletePost(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
		_, err := db.FindPostByID(ctx, p.ID)
		wantCode(t, err, loremnews.ENOTFOUND)
		_, _, err = db.PostPage(ctx, p.ID)
		wantCode(t, err, loremnews.EGONE)
		_, _, err = db.PostPage(ctx, 1_000_000)
		wantCode(t, err, loremnews.ENOTFOUND)
		wantCode(t, db.DeletePost(ctx, p.ID), loremnews.ENOTFOUND)
		c := MustBeConsistent(t, db)
		if c.Comments != 0 {
			t.Fatalf("comments left: %d", c.Comments)
		}
	})
}

func testComments(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice := MustCreateUser(t, db, "alice")
	p := MustCreatePost(t, db, alice.ID, "A post to discuss")

	c1 := MustCreateComment(t, db, p.ID, alice.ID, "First comment")
	c2 := MustCreateComment(t, db, p.ID, alice.ID, "Second comment")
	t.Run("PostPageNewestFirstWithCount", func(t *testing.T) {
		post, comments, err := db.PostPage(ctx, p.ID)
		if err != nil || post.CommentsCount != 2 || len(comments) != 2 || comments[0].ID != c2.ID || comments[0].Author.ScreenName != "alice" {
			t.Fatalf("page = %+v %v, %v", post, comments, err)
		}
	})
	t.Run("OnMissingPost", func(t *testing.T) {
		_, err := db.CreateComment(ctx, 999, alice.ID, loremnews.CommentInput{Body: "Into the void"})
		wantCode(t, err, loremnews.ENOTFOUND)
		MustBeConsistent(t, db)
	})
	t.Run("FindUpdate", func(t *testing.T) {
		got, err := db.UpdateComment(ctx, c1.ID, loremnews.CommentInput{Body: "First, edited"})
		if err != nil || got.Body != "First, edited" || got.Post.Title != "A post to discuss" {
			t.Fatalf("update = %+v, %v", got, err)
		}
		_, err = db.FindCommentByID(ctx, 999)
		wantCode(t, err, loremnews.ENOTFOUND)
		_, err = db.UpdateComment(ctx, 999, loremnews.CommentInput{Body: "nobody home"})
		wantCode(t, err, loremnews.ENOTFOUND)
	})
	t.Run("DeleteUncounts", func(t *testing.T) {
		if err := db.DeleteComment(ctx, c1.ID); err != nil {
			t.Fatal(err)
		}
		wantCode(t, db.DeleteComment(ctx, c1.ID), loremnews.ENOTFOUND)
		post, _ := db.FindPostByID(ctx, p.ID)
		if post.CommentsCount != 1 {
			t.Fatalf("comments_count = %d", post.CommentsCount)
		}
		MustBeConsistent(t, db)
	})
	t.Run("UserPageHasCommentsWithPostTitles", func(t *testing.T) {
		u, posts, comments, err := db.UserPage(ctx, alice.ID, 10)
		if err != nil || u.ID != alice.ID || len(posts) != 1 || len(comments) != 1 || comments[0].Post.Title != "A post to discuss" {
			t.Fatalf("user page = %v %v %v, %v", u, posts, comments, err)
		}
	})
}

// testKeysetPaging walks the front page, a user's posts and a user's
// comments page by page while, between any two pages, rows are inserted
// (newer than every cursor) and deleted (both already shown and not yet
// shown). Every row that was there at the start and is still there must be
// shown exactly once, in order; an OFFSET would skip a row for each deletion
// behind it and show one twice for each insertion ahead of it.
func testKeysetPaging(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice := MustCreateUser(t, db, "alice")
	bob := MustCreateUser(t, db, "bob")
	target := MustCreatePost(t, db, bob.ID, "The post everyone comments on")
	const n, pageSize = 40, 6
	var postIDs, commentIDs []int64
	for i := range n {
		postIDs = append(postIDs, MustCreatePost(t, db, alice.ID, fmt.Sprintf("Paged post %02d", i)).ID)
		commentIDs = append(commentIDs, MustCreateComment(t, db, target.ID, alice.ID, fmt.Sprintf("Paged comment %02d", i)).ID)
	}
	u, posts, comments, err := db.UserPage(ctx, alice.ID, pageSize)
	if err != nil || u.PostsCount != n || u.CommentsCount != n || len(posts) != pageSize || len(comments) != pageSize ||
		posts[0].ID != postIDs[n-1] || comments[0].ID != commentIDs[n-1] || comments[0].Post.Title != target.Title {
		t.Fatalf("user page: %+v, %d posts, %d comments, %v", u, len(posts), len(comments), err)
	}

	// walk pages through one listing; between pages, churn changes rows.
	walk := func(t *testing.T, name string, ids []int64, page func(before int64) ([]int64, error),
		insert func(i int) int64, remove func(id int64) error) {
		deleted, unseenDeleted := map[int64]bool{}, map[int64]bool{}
		seen := map[int64]bool{}
		var inserted []int64
		before := int64(math.MaxInt64)
		for pages := 0; ; pages++ {
			if pages > 2*n {
				t.Fatalf("%s: still paging after %d pages", name, pages)
			}
			got, err := page(before)
			if err != nil {
				t.Fatalf("%s: page before %d: %v", name, before, err)
			}
			for _, id := range got {
				if id >= before || seen[id] {
					t.Fatalf("%s: id %d out of order or repeated (cursor %d)", name, id, before)
				}
				seen[id] = true
				before = id
			}
			if len(got) < pageSize {
				break
			}
			// Churn: newer rows, one shown row deleted, one row not yet
			// shown deleted.
			for range 2 {
				inserted = append(inserted, insert(len(inserted)))
			}
			for _, id := range ids {
				if seen[id] && !deleted[id] {
					deleted[id] = true
					if err := remove(id); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			for _, id := range ids {
				if !seen[id] && !deleted[id] && id < before {
					deleted[id], unseenDeleted[id] = true, true
					if err := remove(id); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
		}
		for _, id := range ids {
			if !deleted[id] && !seen[id] {
				t.Errorf("%s: row %d was never shown", name, id)
			}
			if unseenDeleted[id] && seen[id] {
				t.Errorf("%s: row %d was shown after it was deleted", name, id)
			}
		}
		for _, id := range inserted {
			if seen[id] {
				t.Errorf("%s: row %d, inserted after the walk began, was shown on a later page", name, id)
			}
		}
		if len(deleted) < 4 || len(inserted) < 4 {
			t.Fatalf("%s: too little churn to prove anything: %d deleted, %d inserted", name, len(deleted), len(inserted))
		}
	}
	postIDsOf := func(ps []*loremnews.Post, err error) ([]int64, error) {
		var ids []int64
		for _, p := range ps {
			ids = append(ids, p.ID)
		}
		return ids, err
	}

	t.Run("FrontPage", func(t *testing.T) {
		walk(t, "front page", postIDs, func(before int64) ([]int64, error) {
			ps, err := db.PostsBefore(ctx, before, pageSize)
			for _, p := range ps {
				if p.Author == nil || p.Author.ScreenName == "" {
					t.Fatalf("post %d without its author", p.ID)
				}
			}
			return postIDsOf(ps, err)
		}, func(i int) int64 {
			return MustCreatePost(t, db, bob.ID, fmt.Sprintf("Front page newcomer %d", i)).ID
		}, func(id int64) error { return db.DeletePost(ctx, id) })
	})
	t.Run("UserPosts", func(t *testing.T) {
		var left []int64
		for _, id := range postIDs {
			switch _, err := db.FindPostByID(ctx, id); loremnews.ErrorCode(err) {
			case "":
				left = append(left, id)
			case loremnews.EGONE, loremnews.ENOTFOUND: // deleted while paging
			default:
				t.Fatalf("post %d: %v", id, err)
			}
		}
		walk(t, "user posts", left, func(before int64) ([]int64, error) {
			return postIDsOf(db.UserPosts(ctx, alice.ID, before, pageSize))
		}, func(i int) int64 {
			return MustCreatePost(t, db, alice.ID, fmt.Sprintf("Alice's newcomer %d", i)).ID
		}, func(id int64) error { return db.DeletePost(ctx, id) })
	})
	t.Run("UserComments", func(t *testing.T) {
		walk(t, "user comments", commentIDs, func(before int64) ([]int64, error) {
			cs, err := db.UserComments(ctx, alice.ID, before, pageSize)
			var ids []int64
			for _, c := range cs {
				if c.Post == nil || c.Post.Title != target.Title || c.Author.ScreenName != "alice" {
					t.Fatalf("comment %d: post %+v, author %+v", c.ID, c.Post, c.Author)
				}
				ids = append(ids, c.ID)
			}
			return ids, err
		}, func(i int) int64 {
			return MustCreateComment(t, db, target.ID, alice.ID, fmt.Sprintf("A newer comment %d", i)).ID
		}, func(id int64) error { return db.DeleteComment(ctx, id) })
	})
	t.Run("ConcurrentChurn", func(t *testing.T) {
		// A writer inserts and deletes posts while the front page is walked
		// page by page, for real at the same time: every post there before
		// the walk and never deleted is shown exactly once, in order.
		var before []int64
		for i := range 60 {
			before = append(before, MustCreatePost(t, db, bob.ID, fmt.Sprintf("Churned post %02d", i)).ID)
		}
		var (
			mu      sync.Mutex
			deleted = map[int64]bool{}
			stop    = make(chan struct{})
			done    = make(chan error, 1)
		)
		go func() {
			var err error
			defer func() { done <- err }()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err = db.CreatePost(ctx, bob.ID, loremnews.PostInput{Title: fmt.Sprintf("Churn newcomer %d", i)}); err != nil {
					return
				}
				if id := before[(i*7)%len(before)]; i%2 == 0 {
					mu.Lock()
					gone := deleted[id]
					deleted[id] = true
					mu.Unlock()
					if !gone {
						if err = db.DeletePost(ctx, id); err != nil {
							return
						}
					}
				}
			}
		}()
		seen := map[int64]bool{}
		last := int64(math.MaxInt64)
		for pages := 0; ; pages++ {
			if pages > 1000 {
				t.Fatal("still paging after 1000 pages")
			}
			ps, err := db.PostsBefore(ctx, last, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if p.ID >= last || seen[p.ID] {
					t.Fatalf("post %d out of order or repeated (cursor %d)", p.ID, last)
				}
				seen[p.ID], last = true, p.ID
			}
			if len(ps) < 5 {
				break
			}
		}
		close(stop)
		if err := <-done; err != nil {
			t.Fatalf("writer: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, id := range before {
			if !deleted[id] && !seen[id] {
				t.Errorf("post %d, never deleted, was never shown", id)
			}
		}
		MustBeConsistent(t, db)
	})
	t.Run("CountsFollowChanges", func(t *testing.T) {
		u, _, _, err := db.UserPage(ctx, alice.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := db.UserComments(ctx, alice.ID, math.MaxInt64, 1000)
		if err != nil || u.CommentsCount != len(cs) {
			t.Fatalf("counted %d comments, listed %d, %v", u.CommentsCount, len(cs), err)
		}
		MustBeConsistent(t, db)
	})
	t.Run("UnknownUser", func(t *testing.T) {
		_, err := db.UserPosts(ctx, 999, math.MaxInt64, 10)
		wantCode(t, err, loremnews.ENOTFOUND)
		_, err = db.UserComments(ctx, 999, math.MaxInt64, 10)
		wantCode(t, err, loremnews.ENOTFOUND)
	})
}

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
	if err := db.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	_, _, err = db.FindSessionByTokenDigest(ctx, []byte("digest-1"), loremnews.SessionLimits{})
	wantCode(t, err, loremnews.ENOTFOUND)
	wantCode(t, db.DeleteSession(ctx, s.ID), loremnews.ENOTFOUND)
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

func testSeedLoad(t *testing.T, open Opener) {
	db := open(t)
	ds := MustSeed(t, db, 20, 50)
	c := MustBeConsistent(t, db)
	if c.Users != 20 || c.Posts != 50 || c.Comments != len(ds.Comments) || c.Comments < 50*5 || c.Comments > 50*15 {
		t.Fatalf("counts = %+v", c)
	}
	// Reseeding replaces everything, ids start again at 1.
	MustSeed(t, db, 10, 5)
	c = MustBeConsistent(t, db)
	if c.Users != 10 || c.Posts != 5 {
		t.Fatalf("after reseed: %+v", c)
	}
	if _, err := db.FindPostByID(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if empty, err := db.Empty(context.Background()); err != nil || empty {
		t.Fatalf("empty = %v, %v", empty, err)
	}
}
