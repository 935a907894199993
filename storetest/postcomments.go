package storetest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/loremnews/loremnews"
)

// testPostComments: a post page holds one page of comments, whatever the
// post has. PostPage returns the newest loremnews.PostCommentsPageSize with
// the total in CommentsCount; PostComments pages on through the rest,
// newest first, never more than its limit, so each read of either is
// bounded by a LIMIT in the query, not by what the post has gathered.
func testPostComments(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	const size = loremnews.PostCommentsPageSize
	alice := MustCreateUser(t, db, "alice")
	bob := MustCreateUser(t, db, "bob")
	post := MustCreatePost(t, db, bob.ID, "A post with many comments")
	const n = 2*size + 5
	var ids []int64 // oldest first
	authors := map[int64]string{}
	for i := range n {
		author := alice
		if i%3 == 0 {
			author = bob
		}
		c := MustCreateComment(t, db, post.ID, author.ID, fmt.Sprintf("Comment number %02d", i))
		ids = append(ids, c.ID)
		authors[c.ID] = author.ScreenName
	}
	newestFirst := slices.Clone(ids)
	slices.Reverse(newestFirst)
	idsOf := func(cs []*loremnews.Comment) []int64 {
		var out []int64
		for _, c := range cs {
			if c.PostID != post.ID || c.Post == nil || c.Post.ID != post.ID || c.Author == nil ||
				c.Author.ID != c.UserID || c.Author.ScreenName != authors[c.ID] {
				t.Fatalf("comment %d: post %d %+v, author %+v (want %q)", c.ID, c.PostID, c.Post, c.Author, authors[c.ID])
			}
			out = append(out, c.ID)
		}
		return out
	}

	t.Run("PostPageIsTheNewestPage", func(t *testing.T) {
		p, comments, err := db.PostPage(ctx, post.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.CommentsCount != n || p.Title != post.Title || p.Author.ScreenName != "bob" {
			t.Fatalf("post %+v: want %d comments in all", p, n)
		}
		if got := idsOf(comments); !slices.Equal(got, newestFirst[:size]) {
			t.Fatalf("PostPage lists %v, want the newest %d: %v", got, size, newestFirst[:size])
		}
	})
	t.Run("PagesVisitEveryCommentOnce", func(t *testing.T) {
		var seen []int64
		before := int64(math.MaxInt64)
		for pages := 0; ; pages++ {
			if pages > n {
				t.Fatalf("still paging after %d pages", pages)
			}
			p, comments, err := db.PostComments(ctx, post.ID, before, size)
			if err != nil {
				t.Fatal(err)
			}
			if p.ID != post.ID || p.CommentsCount != n {
				t.Fatalf("page before %d: post %+v", before, p)
			}
			if len(comments) > size {
				t.Fatalf("page before %d: %d comments, over the limit %d", before, len(comments), size)
			}
			seen = append(seen, idsOf(comments)...)
			if len(comments) < size {
				break
			}
			before = comments[len(comments)-1].ID
		}
		if !slices.Equal(seen, newestFirst) {
			t.Fatalf("paged through %v, want every comment once, newest first: %v", seen, newestFirst)
		}
	})
	t.Run("NeverMoreThanTheLimit", func(t *testing.T) {
		for _, limit := range []int{-1, 0, 1, 7, size, size + 1, 1000} {
			_, comments, err := db.PostComments(ctx, post.ID, math.MaxInt64, limit)
			if err != nil {
				t.Fatalf("limit %d: %v", limit, err)
			}
			if want := min(max(limit, 0), n); !slices.Equal(idsOf(comments), newestFirst[:want]) {
				t.Fatalf("limit %d: %d comments, want the newest %d", limit, len(comments), want)
			}
		}
		_, comments, err := db.PostComments(ctx, post.ID, ids[0], size)
		if err != nil || len(comments) != 0 {
			t.Fatalf("before the oldest comment: %d comments, %v", len(comments), err)
		}
		_, comments, err = db.PostComments(ctx, post.ID, ids[3], size)
		if err != nil || !slices.Equal(idsOf(comments), []int64{ids[2], ids[1], ids[0]}) {
			t.Fatalf("before the fourth comment: %v, %v", idsOf(comments), err)
		}
	})
	t.Run("MaxSizeCommentsReadAPageAtATime", func(t *testing.T) {
		// Three pages of the longest comments there can be, each
		// character four bytes: a read returns one page of them.
		big := MustCreatePost(t, db, bob.ID, "A post with long comments")
		body := strings.Repeat("😀", loremnews.MaxBodyLen)
		if err := (loremnews.CommentInput{Body: body}).Validate(); err != nil {
			t.Fatal(err)
		}
		for range 3 * size {
			MustCreateComment(t, db, big.ID, alice.ID, body)
		}
		p, comments, err := db.PostPage(ctx, big.ID)
		if err != nil || p.CommentsCount != 3*size || len(comments) != size {
			t.Fatalf("PostPage: %d of %d comments, %v", len(comments), p.CommentsCount, err)
		}
		read := 0
		for _, c := range comments {
			read += len(c.Body)
		}
		if read != size*len(body) {
			t.Fatalf("PostPage read %d bytes of bodies, want one page: %d", read, size*len(body))
		}
		_, comments, err = db.PostComments(ctx, big.ID, comments[size-1].ID, size)
		if err != nil || len(comments) != size {
			t.Fatalf("PostComments: %d comments, %v", len(comments), err)
		}
		// The load test's post_show reads the same first page.
		for range 10 {
			p, comments, err := db.Benchmark().ShowPost(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(comments) != size || p.CommentsCount <= size {
				t.Fatalf("ShowPost: post %d with %d comments lists %d, want a page of %d", p.ID, p.CommentsCount, len(comments), size)
			}
		}
	})
	t.Run("MissingAndDeletedPosts", func(t *testing.T) {
		_, _, err := db.PostComments(ctx, 1_000_000, math.MaxInt64, size)
		wantCode(t, err, loremnews.ENOTFOUND)
		gone := MustCreatePost(t, db, alice.ID, "A post about to go")
		MustCreateComment(t, db, gone.ID, bob.ID, "A comment about to go")
		if err := db.DeletePost(ctx, gone.ID); err != nil {
			t.Fatal(err)
		}
		_, _, err = db.PostComments(ctx, gone.ID, math.MaxInt64, size)
		wantCode(t, err, loremnews.EGONE)
		_, _, err = db.PostPage(ctx, gone.ID)
		wantCode(t, err, loremnews.EGONE)
	})
	MustBeConsistent(t, db)
}
