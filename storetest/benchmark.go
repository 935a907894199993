package storetest

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
)

// testBenchmarkOperations checks the benchmarking actions: each touches a
// random user (but PointRead), picks its rows at random and wraps past
// deleted ones, and leaves the counters consistent.
func testBenchmarkOperations(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	bm := db.Benchmark()

	t.Run("EmptyTablesAreNotFound", func(t *testing.T) {
		_, _, _, err := bm.ShowUser(ctx, 10)
		wantCode(t, err, loremnews.ENOTFOUND)
		_, _, err = bm.ShowPost(ctx)
		wantCode(t, err, loremnews.ENOTFOUND)
		_, err = bm.CreatePost(ctx, loremnews.PostInput{Title: "Nobody's post"})
		wantCode(t, err, loremnews.ENOTFOUND)
		_, err = bm.PointRead(ctx)
		wantCode(t, err, loremnews.ENOTFOUND)
	})

	MustSeed(t, db, 10, 20)
	before, _ := db.CheckConsistency(ctx)

	t.Run("PointReadReadsWithoutWriting", func(t *testing.T) {
		users := map[string]time.Time{}
		for id := int64(1); id <= 10; id++ {
			u, err := db.FindUserByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			users[u.ScreenName] = u.LastSeenAt
		}
		seen := map[string]bool{}
		for range 100 {
			name, err := bm.PointRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := users[name]; !ok {
				t.Fatalf("point read returned %q, not a seeded user", name)
			}
			seen[name] = true
		}
		// 100 uniform picks among 10 users hit nearly all of them.
		if len(seen) < 6 {
			t.Fatalf("100 point reads among 10 users found only %d distinct users", len(seen))
		}
		for id := int64(1); id <= 10; id++ {
			u, err := db.FindUserByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !u.LastSeenAt.Equal(users[u.ScreenName]) {
				t.Fatalf("user %d: last_seen_at %v → %v: a point read wrote", id, users[u.ScreenName], u.LastSeenAt)
			}
		}
	})

	t.Run("ReadsTouchAndPickSpread", func(t *testing.T) {
		// 100 uniform picks among 20 posts hit ~20 of them; fewer than 10
		// means the pick is not random (it once always took the first).
		seen := map[int64]bool{}
		touched := map[int64]bool{}
		start := time.Now().Add(-time.Second)
		for range 100 {
			p, comments, err := bm.ShowPost(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if p.Author == nil || p.Author.ID != p.UserID || len(comments) != p.CommentsCount {
				t.Fatalf("post page %+v with %d comments", p, len(comments))
			}
			seen[p.ID] = true
			u, posts, comments, err := bm.ShowUser(ctx, 5)
			if err != nil {
				t.Fatal(err)
			}
			if u.LastSeenAt.Before(start) {
				t.Fatalf("shown user %d last seen %v: not touched", u.ID, u.LastSeenAt)
			}
			if len(posts) > 5 || len(comments) > 5 || u.CommentsCount < len(comments) {
				t.Fatalf("user page: %d posts, %d comments (of %d)", len(posts), len(comments), u.CommentsCount)
			}
			touched[u.ID] = true
		}
		if len(seen) < 10 {
			t.Fatalf("100 random picks among 20 posts found only %d distinct posts", len(seen))
		}
		if len(touched) < 6 {
			t.Fatalf("100 random touches among 10 users found only %d distinct users", len(touched))
		}
	})

	t.Run("ListPostsFromARandomID", func(t *testing.T) {
		froms := map[int64]bool{}
		for range 50 {
			from, posts, err := bm.ListPosts(ctx, 7)
			if err != nil {
				t.Fatal(err)
			}
			if len(posts) == 0 || len(posts) > 7 || posts[0].ID < from {
				t.Fatalf("from %d: %d posts, first %+v", from, len(posts), posts[0])
			}
			for i := 1; i < len(posts); i++ {
				if posts[i].ID <= posts[i-1].ID {
					t.Fatalf("from %d: ids not ascending: %d after %d", from, posts[i].ID, posts[i-1].ID)
				}
			}
			froms[from] = true
		}
		if len(froms) < 10 {
			t.Fatalf("50 listings among 20 posts started at only %d distinct ids", len(froms))
		}
	})

	p, err := bm.CreatePost(ctx, loremnews.PostInput{Title: "Post by someone", Description: "H: v"})
	if err != nil || p.ID == 0 {
		t.Fatalf("create post = %+v, %v", p, err)
	}
	if u, err := db.FindUserByID(ctx, p.UserID); err != nil || time.Since(u.LastSeenAt) > time.Minute {
		t.Fatalf("author %+v, %v: last_seen_at not now", u, err)
	}
	c, err := bm.CreateComment(ctx, loremnews.CommentInput{Body: "Comment on something"})
	if err != nil || c.PostID == 0 {
		t.Fatalf("create comment = %+v, %v", c, err)
	}
	deleted, err := bm.DeletePost(ctx)
	if err != nil || deleted == 0 {
		t.Fatalf("delete post = %d, %v", deleted, err)
	}
	if _, err := db.FindPostByID(ctx, deleted); loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
		t.Fatalf("the post delete post named (%d) is still there: %v", deleted, err)
	}
	id, postID, err := bm.DeleteComment(ctx)
	if err != nil || id == 0 || postID == 0 {
		t.Fatalf("delete comment = %d on %d, %v", id, postID, err)
	}
	if _, err := db.FindCommentByID(ctx, id); loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
		t.Fatalf("the comment delete comment named (%d) is still there: %v", id, err)
	}
	after := MustBeConsistent(t, db)
	if after.Posts != before.Posts {
		t.Fatalf("posts %d → %d, want unchanged (one created, one deleted)", before.Posts, after.Posts)
	}

	t.Run("PickWrapsAroundDeletedTail", func(t *testing.T) {
		// Delete every post but the first: most random ids now land in a
		// gap with no row at or after them, and must wrap to the first.
		recent, err := db.PostsBefore(ctx, math.MaxInt64, 1000)
		if err != nil {
			t.Fatal(err)
		}
		first := recent[len(recent)-1].ID
		for _, p := range recent[:len(recent)-1] {
			if err := db.DeletePost(ctx, p.ID); err != nil {
				t.Fatal(err)
			}
		}
		for range 50 {
			p, _, err := bm.ShowPost(ctx)
			if err != nil || p.ID != first {
				t.Fatalf("picked post %+v, %v; want %d", p, err, first)
			}
			c, err := bm.CreateComment(ctx, loremnews.CommentInput{Body: "On the last post standing"})
			if err != nil || c.PostID != first {
				t.Fatalf("comment %+v, %v; want one on post %d", c, err, first)
			}
		}
		from, posts, err := bm.ListPosts(ctx, 100)
		if err != nil || from != first || len(posts) != 1 || posts[0].ID != first {
			t.Fatalf("list from %d: %d posts, %v; want only post %d", from, len(posts), err, first)
		}
		MustBeConsistent(t, db)
	})
}
