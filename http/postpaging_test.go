package http_test

import (
	"context"
	"flag"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	lnhttp "github.com/loremnews/loremnews/http"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite http/testdata/*.golden.html from the pages rendered now")

var (
	commentItemRe = regexp.MustCompile(`<li id="comment-(\d+)">`)
	csrfValueRe   = regexp.MustCompile(`name="csrf_token" value="[^"]+"`)
	stylesheetRe  = regexp.MustCompile(`/static/style\.[0-9a-f]+\.css`)
)

// pageClock is the fixed time the golden pages are rendered at: the seed's
// times are anchored to it and the handler's clock stops there.
var pageClock = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// commentIDs are the ids of the comments a page lists, in its order.
func commentIDs(body string) []int64 {
	var ids []int64
	for _, m := range commentItemRe.FindAllStringSubmatch(body, -1) {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		ids = append(ids, id)
	}
	return ids
}

// golden compares got with testdata/name, or writes it with -update-golden.
// The stylesheet's fingerprint is blanked: a change of style.css is not
// one of the page.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = stylesheetRe.ReplaceAllString(got, "/static/style.….css")
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: the page differs from the one rendered before comments were paged, at byte %d of %d (want %d):\ngot  …%.300s\nwant …%.300s",
			name, i, len(got), len(want), got[min(i, len(got)):], want[min(i, len(want)):])
	}
}

// TestPostPageUpToOnePageUnchanged: a seeded post (5 to 15 comments, fewer
// than a page) renders byte for byte as it did before a post's comments
// were paged: the golden files were rendered by the code before the
// change, for a visitor and for a signed-in commenter (whose own comments
// carry Edit and Delete links; the CSRF token, random, is blanked).
func TestPostPageUpToOnePageUnchanged(t *testing.T) {
	forEachBackend(t, testPostPageUpToOnePageUnchanged)
}

func testPostPageUpToOnePageUnchanged(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{now: pageClock})
	var post *loremnews.Post
	for _, p := range site.ds.Posts {
		if len(commentsOf(site, p.ID)) == 15 {
			post = p
			break
		}
	}
	if post == nil {
		t.Fatal("no seeded post with 15 comments")
	}
	comments := commentsOf(site, post.ID)
	var want []int64 // newest first, as the page has always listed them
	for _, c := range comments {
		want = append(want, c.ID)
	}
	slices.Sort(want)
	slices.Reverse(want)

	commenter := -1
	for i, u := range site.ds.Users {
		if u.ID == comments[0].UserID {
			commenter = i
		}
	}
	visitor, signedIn := site.browser(), site.browser()
	signedIn.signIn(commenter)
	signedIn.get("/") // takes the "signed in" notice, which is not the post page's

	for _, v := range []struct {
		name string
		b    *browser
	}{{"visitor", visitor}, {"signed-in", signedIn}} {
		r := v.b.get(fmt.Sprintf("/posts/%d", post.ID))
		wantStatus(t, r, 200)
		if got := commentIDs(r.body); !slices.Equal(got, want) {
			t.Fatalf("%s: the page lists comments %v, want all 15, newest first: %v", v.name, got, want)
		}
		if moreRe.MatchString(r.body) || regexp.MustCompile(`rel="next"|before=`).MatchString(r.body) {
			t.Fatalf("%s: a post with 15 comments has a paging link", v.name)
		}
		wantBody(t, r, `<h2>15 comments</h2>`)
		golden(t, "post_page_15_comments_"+v.name+".golden.html", csrfValueRe.ReplaceAllString(r.body, `name="csrf_token" value="…"`))
	}
}

// TestPostCommentsPaging: a post with more comments than a page shows the
// newest page and "Older comments", and the links visit every comment
// once, newest first, with the total in every heading; cursors are checked
// as the other lists' are.
func TestPostCommentsPaging(t *testing.T) { forEachBackend(t, testPostCommentsPaging) }

func testPostCommentsPaging(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	ctx := context.Background()
	const size = loremnews.PostCommentsPageSize
	owner, commenter := site.ds.Users[0], site.ds.Users[1]
	post, err := site.db.CreatePost(ctx, owner.ID, loremnews.PostInput{Title: "A long thread"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*size + 5
	var newestFirst []int64
	mine := map[int64]bool{} // the commenter's
	for i := range n {
		u := site.ds.Users[2+i%5]
		if i%4 == 0 {
			u = commenter
		}
		c, err := site.db.CreateComment(ctx, post.ID, u.ID, loremnews.CommentInput{Body: fmt.Sprintf("Reply number %02d", i)})
		if err != nil {
			t.Fatal(err)
		}
		newestFirst = append([]int64{c.ID}, newestFirst...)
		mine[c.ID] = u.ID == commenter.ID
	}
	postPath := fmt.Sprintf("/posts/%d", post.ID)
	visitor, signedIn := site.browser(), site.browser()
	signedIn.signIn(1)

	for _, v := range []struct {
		name string
		b    *browser
	}{{"visitor", visitor}, {"signed-in", signedIn}} {
		r := v.b.get(postPath)
		wantStatus(t, r, 200)
		wantBody(t, r, fmt.Sprintf("<h2>%d comments</h2>", n))
		seen := commentIDs(r.body)
		if !slices.Equal(seen, newestFirst[:size]) {
			t.Fatalf("%s: the post page lists %v, want the newest %d: %v", v.name, seen, size, newestFirst[:size])
		}
		next := more(r.body)["Older comments"]
		if want := fmt.Sprintf("/posts/%d/comments?before=%d", post.ID, newestFirst[size-1]); next != want {
			t.Fatalf("%s: Older comments links to %q, want %q", v.name, next, want)
		}
		pages := 1
		for ; next != ""; pages++ {
			if pages > n {
				t.Fatalf("%s: still paging after %d pages", v.name, pages)
			}
			r := v.b.get(next)
			wantStatus(t, r, 200)
			wantBody(t, r, "<h1>Comments on A long thread</h1>",
				fmt.Sprintf(`<a href="%s">Back to the post</a> · %d comments`, postPath, n))
			ids := commentIDs(r.body)
			if len(ids) == 0 || len(ids) > size {
				t.Fatalf("%s: %s lists %d comments, want 1 to %d", v.name, next, len(ids), size)
			}
			for _, id := range ids {
				if v.b == signedIn && mine[id] != strings.Contains(r.body, fmt.Sprintf(`href="/comments/%d/edit"`, id)) {
					t.Fatalf("%s: comment %d (the reader's: %v) with the wrong Edit link", v.name, id, mine[id])
				}
			}
			seen = append(seen, ids...)
			next = more(r.body)["Older comments"]
		}
		if !slices.Equal(seen, newestFirst) {
			t.Fatalf("%s: paged through %v, want every comment once, newest first: %v", v.name, seen, newestFirst)
		}
		if pages != 3 {
			t.Fatalf("%s: %d pages, want 3 (%d, %d and %d comments)", v.name, pages, size, size, n-2*size)
		}
	}

	t.Run("ExactlyOnePage", func(t *testing.T) {
		p, err := site.db.CreatePost(ctx, owner.ID, loremnews.PostInput{Title: "A page of replies"})
		if err != nil {
			t.Fatal(err)
		}
		path := fmt.Sprintf("/posts/%d", p.ID)
		var last int64
		for i := range size + 1 {
			if i == size {
				// A full page and no more: no link.
				r := visitor.get(path)
				if ids := commentIDs(r.body); len(ids) != size || strings.Contains(r.body, `rel="next"`) {
					t.Fatalf("a post with %d comments lists %d, link %q", size, len(ids), more(r.body)["Older comments"])
				}
			}
			c, err := site.db.CreateComment(ctx, p.ID, commenter.ID, loremnews.CommentInput{Body: fmt.Sprintf("Reply %d", i)})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				last = c.ID
			}
		}
		r := visitor.get(path)
		next := more(r.body)["Older comments"]
		if ids := commentIDs(r.body); len(ids) != size || next == "" {
			t.Fatalf("a post with %d comments lists %d, link %q", size+1, len(ids), next)
		}
		r = visitor.get(next)
		if ids := commentIDs(r.body); !slices.Equal(ids, []int64{last}) || strings.Contains(r.body, `rel="next"`) {
			t.Fatalf("the second page lists %v, want [%d] and no link", ids, last)
		}
	})
	t.Run("BadCursors", func(t *testing.T) {
		for _, q := range []string{"abc", "0", "-5", "1e3", "99999999999999999999", "12;drop"} {
			r := visitor.get(fmt.Sprintf("/posts/%d/comments?before=%s", post.ID, url.QueryEscape(q)))
			wantStatus(t, r, http.StatusBadRequest)
			wantBody(t, r, "must be a positive whole number")
		}
		r := visitor.get(fmt.Sprintf("/posts/%d/comments?before=%d", post.ID, newestFirst[n-1]))
		wantStatus(t, r, 200)
		wantBody(t, r, "No older comments.")
		wantRedirect(t, visitor.get(fmt.Sprintf("/posts/%d/comments?before=", post.ID)), postPath+"#comments")
		wantStatus(t, visitor.get("/posts/99999/comments?before=5"), http.StatusNotFound)
		wantStatus(t, visitor.get("/posts/abc/comments?before=5"), http.StatusNotFound)
		wantStatus(t, visitor.get("/posts/01/comments?before=5"), http.StatusNotFound)
	})
	t.Run("DeletedPost", func(t *testing.T) {
		if err := site.db.DeletePost(ctx, post.ID); err != nil {
			t.Fatal(err)
		}
		// As the post page itself: to the front page, with a notice.
		for _, path := range []string{fmt.Sprintf("/posts/%d/comments?before=%d", post.ID, newestFirst[size-1]), postPath} {
			r := visitor.get(path)
			if r.status != http.StatusSeeOther || r.location() != "/" {
				t.Fatalf("%s: status %d to %q, want 303 to /", path, r.status, r.location())
			}
		}
	})
}

// Worst cases of rendered HTML, in bytes. A character of text is at most
// 5 bytes once escaped (& ' " are 5, < > 4, any other character at most
// its 4 bytes of UTF-8); paragraphs add "<p></p>", and each blank line
// that splits them (2 characters) "</p><p>" (7 bytes, 3.5 a character).
// rowMarkup is a row's own markup: ids, links, the time element, the
// owner's Edit and Delete links; pageMarkup the layout, headings and forms.
const (
	maxTextHTML  = 5
	rowMarkup    = 512
	pageMarkup   = 16 << 10
	maxBodyHTML  = maxTextHTML*loremnews.MaxBodyLen + len("<p></p>")
	maxTitleHTML = maxTextHTML * loremnews.MaxTitleLen
	maxNameHTML  = maxTextHTML * loremnews.MaxScreenNameLen
)

// maxPostPage bounds a post page, whatever its post: a page of the
// longest comments, the longest title (twice: <title> and <h1>),
// description and meta description (155 characters), and a refused
// comment of the longest length back in the form.
func maxPostPage() int {
	row := rowMarkup + maxNameHTML + maxBodyHTML
	return loremnews.PostCommentsPageSize*row + pageMarkup + 2*maxTitleHTML + maxNameHTML +
		maxTextHTML*155 + maxTextHTML*loremnews.MaxDescriptionLen + len("<p></p>") + maxTextHTML*loremnews.MaxBodyLen
}

// TestPostPageSizeBounded is the finding's attack: one account's hourly
// allowance of comments (60, each 10,000 "&", 50,000 bytes escaped) on
// one post grew its page to 3 MB. Now the page holds one page of them
// and its size is bounded by maxPostPage, far below all of them; the
// older pages are bounded alike, and post_show renders the same first page.
func TestPostPageSizeBounded(t *testing.T) { forEachBackend(t, testPostPageSizeBounded) }

func testPostPageSizeBounded(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{users: 2, posts: 1, benchmarking: true})
	ctx := context.Background()
	const size = loremnews.PostCommentsPageSize
	post, attacker := site.ds.Posts[0], site.ds.Users[1]
	path := fmt.Sprintf("/posts/%d", post.ID)
	before := len(site.browser().get(path).body)
	body := strings.Repeat("&", loremnews.MaxBodyLen)
	const n = 3 * size // three pages' worth, as many as an hour's allowance
	for range n {
		if _, err := site.db.CreateComment(ctx, post.ID, attacker.ID, loremnews.CommentInput{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	all := n * len(html.EscapeString(body))
	bound := maxPostPage()
	b := site.browser()
	r := b.get(path)
	wantStatus(t, r, 200)
	t.Logf("post page: %d bytes before the comments, %d after %d comments of %d × &; bound %d; the comments alone escape to %d",
		before, len(r.body), n, loremnews.MaxBodyLen, bound, all)
	if len(r.body) > bound {
		t.Fatalf("the post page is %d bytes, over its bound %d", len(r.body), bound)
	}
	if len(r.body) > all/2 {
		t.Fatalf("the post page is %d bytes: not much smaller than its %d comments together (%d bytes)", len(r.body), n, all)
	}
	if got := len(commentIDs(r.body)); got != size {
		t.Fatalf("the post page lists %d comments, want %d", got, size)
	}
	for next, pages := more(r.body)["Older comments"], 1; next != ""; pages++ {
		if pages > n {
			t.Fatalf("still paging after %d pages", pages)
		}
		r := b.get(next)
		wantStatus(t, r, 200)
		if len(r.body) > bound {
			t.Fatalf("%s is %d bytes, over its bound %d", next, len(r.body), bound)
		}
		next = more(r.body)["Older comments"]
	}

	// The load test's post_show renders the first page (the one post).
	r = b.postRaw("/benchmarking/post_show", nil)
	wantStatus(t, r, 200)
	if got := len(commentIDs(r.body)); got != size || len(r.body) > bound || more(r.body)["Older comments"] == "" {
		t.Fatalf("post_show: %d comments, %d bytes, link %q", got, len(r.body), more(r.body)["Older comments"])
	}
}

// TestUserPageSizeBounded checks the user page's bound with the longest
// comments: it lists at most UserPageLimit of a user's comments (with
// their posts' titles) and of their posts, so its size is bounded too, if
// by more than a post page's: UserPageLimit comments of 50,000 bytes.
func TestUserPageSizeBounded(t *testing.T) { forEachBackend(t, testUserPageSizeBounded) }

func testUserPageSizeBounded(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{users: 2, posts: 1})
	ctx := context.Background()
	const limit = lnhttp.UserPageLimit
	post, attacker := site.ds.Posts[0], site.ds.Users[1]
	body := strings.Repeat("&", loremnews.MaxBodyLen)
	n := limit + 20
	for range n {
		if _, err := site.db.CreateComment(ctx, post.ID, attacker.ID, loremnews.CommentInput{Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	// A user's comments are listed as excerpts of 1,500 characters.
	commentRow := rowMarkup + maxTitleHTML + maxTextHTML*1500 + len("…<p></p>")
	postRow := rowMarkup + maxTitleHTML
	bound := limit*(commentRow+postRow) + pageMarkup + 3*maxNameHTML + maxTextHTML*loremnews.MaxAboutLen + len("<p></p>")
	b := site.browser()
	r := b.get(fmt.Sprintf("/users/%d", attacker.ID))
	wantStatus(t, r, 200)
	t.Logf("user page with %d comments of %d × &: %d bytes; bound %d", n, loremnews.MaxBodyLen, len(r.body), bound)
	if got := len(commentIDs(r.body)); got != limit {
		t.Fatalf("the user page lists %d comments, want %d", got, limit)
	}
	if len(r.body) > bound {
		t.Fatalf("the user page is %d bytes, over its bound %d", len(r.body), bound)
	}
	u, _, _, err := site.db.UserPage(ctx, attacker.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	next := more(r.body)["More comments"]
	r = b.get(next)
	wantStatus(t, r, 200)
	if got := len(commentIDs(r.body)); got != u.CommentsCount-limit || len(r.body) > bound {
		t.Fatalf("%s: %d comments, %d bytes (bound %d)", next, got, len(r.body), bound)
	}
}
