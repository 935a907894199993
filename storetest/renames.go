package storetest

import (
	"context"
	"testing"

	"github.com/loremnews/loremnews"
)

// testRenames renames a user (once only in case, once wholly) and retitles
// a post, and checks that every page shows the new name or title at once:
// the front page's author, the post page's author and commenters, the
// user page's titles of the posts commented on, a single comment's post
// and author, and the benchmarking reads. A store may keep copies of a
// name or title beside the rows that show it; they must follow.
func testRenames(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice := MustCreateUser(t, db, "alice")
	bob := MustCreateUser(t, db, "bob")
	p := MustCreatePost(t, db, alice.ID, "The first title")
	c := MustCreateComment(t, db, p.ID, bob.ID, "A comment by bob")
	MustCreateComment(t, db, p.ID, alice.ID, "A reply by alice")

	check := func(t *testing.T, aliceName, bobName, title string) {
		t.Helper()
		posts, err := db.PostsBefore(ctx, p.ID+1, 10)
		if err != nil || len(posts) != 1 || posts[0].Author.ScreenName != aliceName || posts[0].Author.ID != alice.ID || posts[0].Title != title {
			t.Errorf("front page = %+v, %v; want %q's post %q", posts, err, aliceName, title)
		}
		post, comments, err := db.PostPage(ctx, p.ID)
		if err != nil || post.Author.ScreenName != aliceName || post.Title != title || len(comments) != 2 ||
			comments[0].Author.ScreenName != aliceName || comments[1].Author.ScreenName != bobName {
			t.Errorf("post page = %+v %+v, %v; want by %q, comments by %q and %q", post, comments, err, aliceName, aliceName, bobName)
		}
		_, _, bobs, err := db.UserPage(ctx, bob.ID, 10)
		if err != nil || len(bobs) != 1 || bobs[0].Post.Title != title || bobs[0].Post.ID != p.ID {
			t.Errorf("bob's page's comments = %+v, %v; want one on %q", bobs, err, title)
		}
		got, err := db.FindCommentByID(ctx, c.ID)
		if err != nil || got.Post.Title != title || got.Author.ScreenName != bobName {
			t.Errorf("comment = %+v, %v; want bob's %q on %q", got, err, bobName, title)
		}
		MustBeConsistent(t, db)
	}
	check(t, "alice", "bob", "The first title")

	t.Run("RenameInCaseOnly", func(t *testing.T) {
		if _, err := db.UpdateProfile(ctx, alice.ID, loremnews.ProfileChange{ScreenName: "Alice"}); err != nil {
			t.Fatal(err)
		}
		check(t, "Alice", "bob", "The first title")
	})
	t.Run("Rename", func(t *testing.T) {
		if _, err := db.UpdateProfile(ctx, bob.ID, loremnews.ProfileChange{ScreenName: "robert"}); err != nil {
			t.Fatal(err)
		}
		check(t, "Alice", "robert", "The first title")
	})
	t.Run("Retitle", func(t *testing.T) {
		if _, err := db.UpdatePost(ctx, p.ID, loremnews.PostInput{Title: "A better title", Description: "now with words"}); err != nil {
			t.Fatal(err)
		}
		check(t, "Alice", "robert", "A better title")
	})
	t.Run("TakenNameChangesNothing", func(t *testing.T) {
		_, err := db.UpdateProfile(ctx, bob.ID, loremnews.ProfileChange{ScreenName: "ALICE"})
		wantCode(t, err, loremnews.EINVALID)
		check(t, "Alice", "robert", "A better title")
	})
	t.Run("NewRowsTakeTheCurrentNames", func(t *testing.T) {
		q := MustCreatePost(t, db, bob.ID, "Bob's own post")
		MustCreateComment(t, db, q.ID, alice.ID, "Alice on bob's post")
		post, comments, err := db.PostPage(ctx, q.ID)
		if err != nil || post.Author.ScreenName != "robert" || len(comments) != 1 || comments[0].Author.ScreenName != "Alice" {
			t.Errorf("post page = %+v %+v, %v", post, comments, err)
		}
		_, _, alices, err := db.UserPage(ctx, alice.ID, 10)
		if err != nil || len(alices) != 2 || alices[0].Post.Title != "Bob's own post" {
			t.Errorf("alice's page's comments = %+v, %v", alices, err)
		}
		MustBeConsistent(t, db)
	})
}
