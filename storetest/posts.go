package storetest

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/loremnews/loremnews"
)

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
		recent, err := db.PostsBefore(ctx, math.MaxInt64, 3)
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

// testKeysetPaging walks the front page, a user's posts, a user's comments
// and a post's comments page by page while, between any two pages, rows
// are inserted (newer than every cursor) and deleted (both already shown
// and not yet shown). Every row that was there at the start and is still
// there must be shown exactly once, in order; an OFFSET would skip a row
// for each deletion behind it and show one twice for each insertion ahead
// of it.
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

	postIDsOf := func(ps []*loremnews.Post, err error) ([]int64, error) {
		var ids []int64
		for _, p := range ps {
			ids = append(ids, p.ID)
		}
		return ids, err
	}

	t.Run("FrontPage", func(t *testing.T) {
		walkPages(t, "front page", pageSize, postIDs, func(before int64) ([]int64, error) {
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
		walkPages(t, "user posts", pageSize, left, func(before int64) ([]int64, error) {
			return postIDsOf(db.UserPosts(ctx, alice.ID, before, pageSize))
		}, func(i int) int64 {
			return MustCreatePost(t, db, alice.ID, fmt.Sprintf("Alice's newcomer %d", i)).ID
		}, func(id int64) error { return db.DeletePost(ctx, id) })
	})
	t.Run("UserComments", func(t *testing.T) {
		walkPages(t, "user comments", pageSize, commentIDs, func(before int64) ([]int64, error) {
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
	t.Run("PostComments", func(t *testing.T) {
		// The target's comments still there (UserComments deleted some).
		var left []int64
		for _, id := range commentIDs {
			switch _, err := db.FindCommentByID(ctx, id); loremnews.ErrorCode(err) {
			case "":
				left = append(left, id)
			case loremnews.ENOTFOUND: // deleted while paging
			default:
				t.Fatalf("comment %d: %v", id, err)
			}
		}
		walkPages(t, "post comments", pageSize, left, func(before int64) ([]int64, error) {
			p, cs, err := db.PostComments(ctx, target.ID, before, pageSize)
			if err == nil && p.ID != target.ID {
				t.Fatalf("PostComments of post %d returned post %d", target.ID, p.ID)
			}
			var ids []int64
			for _, c := range cs {
				if c.PostID != target.ID || c.Author == nil || c.Author.ScreenName == "" {
					t.Fatalf("comment %d: post %d, author %+v", c.ID, c.PostID, c.Author)
				}
				ids = append(ids, c.ID)
			}
			return ids, err
		}, func(i int) int64 {
			return MustCreateComment(t, db, target.ID, bob.ID, fmt.Sprintf("A newer comment on the post %d", i)).ID
		}, func(id int64) error { return db.DeleteComment(ctx, id) })
	})
	t.Run("ConcurrentChurn", func(t *testing.T) { frontPageUnderChurn(t, db, bob) })
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

// walkPages walks one listing page by page, pageSize rows a page, from
// the newest (ids are the rows it holds at the start); between pages,
// churn changes it: two newer rows inserted, one row already shown and
// one not yet shown deleted. Every row never deleted is shown exactly
// once, in order; none inserted after the walk began is shown, nor any
// deleted before it was reached.
func walkPages(t *testing.T, name string, pageSize int, ids []int64, page func(before int64) ([]int64, error),
	insert func(i int) int64, remove func(id int64) error) {
	t.Helper()
	deleted, unseenDeleted := map[int64]bool{}, map[int64]bool{}
	seen := map[int64]bool{}
	var inserted []int64
	before := int64(math.MaxInt64)
	for pages := 0; ; pages++ {
		if pages > 2*len(ids)+2 {
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

// frontPageUnderChurn walks the front page page by page while a writer
// inserts and deletes posts, for real at the same time: every post there
// before the walk and never deleted is shown exactly once, in order.
func frontPageUnderChurn(t *testing.T, db loremnews.Database, bob *loremnews.User) {
	t.Helper()
	ctx := context.Background()
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
}
