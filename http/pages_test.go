package http_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/loremnews/loremnews"
	lnhttp "github.com/loremnews/loremnews/http"
)

var (
	postLinkRe = regexp.MustCompile(`<li id="post-(\d+)">`)
	moreRe     = regexp.MustCompile(`<p class="more"><a href="([^"]+)" rel="next">([^<]+)</a></p>`)
)

// more returns the page's "More" links by label.
func more(body string) map[string]string {
	links := map[string]string{}
	for _, m := range moreRe.FindAllStringSubmatch(body, -1) {
		links[m[2]] = html.UnescapeString(m[1])
	}
	return links
}

func TestFrontPagePaging(t *testing.T) { forEachBackend(t, testFrontPagePaging) }

func testFrontPagePaging(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{users: 10, posts: 120})
	b := site.browser()
	ctx := context.Background()

	var seen []int64
	var gone int64
	path := "/"
	for pages := 0; path != ""; pages++ {
		if pages > 5 {
			t.Fatalf("still paging after %d pages", pages)
		}
		r := b.get(path)
		wantStatus(t, r, 200)
		ids := postLinkRe.FindAllStringSubmatch(r.body, -1)
		if path == "/" && len(ids) != 50 {
			t.Fatalf("front page lists %d posts, want 50", len(ids))
		}
		for _, m := range ids {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			if len(seen) > 0 && id >= seen[len(seen)-1] {
				t.Fatalf("%s: post %d after %d: not newest first", path, id, seen[len(seen)-1])
			}
			seen = append(seen, id)
		}
		path = more(r.body)["More posts"]
		if pages == 0 {
			// While the reader is on page one, its last post and a post of
			// page two are deleted and a new post is written: page two still
			// starts right after page one's last post and skips nothing else.
			last := seen[len(seen)-1]
			if want := fmt.Sprintf("/?before=%d", last); path != want {
				t.Fatalf("More links to %q, want %q", path, want)
			}
			for _, id := range []int64{last, last - 5} {
				if err := site.db.DeletePost(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := site.db.CreatePost(ctx, 1, loremnews.PostInput{Title: "Written while paging"}); err != nil {
				t.Fatal(err)
			}
			gone = last - 5
		}
	}
	if len(seen) != 119 || seen[len(seen)-1] != 1 {
		t.Fatalf("paged through %d posts down to #%d, want the 119 seeded ones not deleted before they were shown", len(seen), seen[len(seen)-1])
	}
	for _, id := range seen {
		if id == gone || id > 120 {
			t.Fatalf("post %d shown", id)
		}
	}
	t.Run("BadCursors", func(t *testing.T) {
		for _, q := range []string{"abc", "0", "-5", "1e3", "99999999999999999999", "12;drop"} {
			r := b.get("/?before=" + url.QueryEscape(q))
			wantStatus(t, r, http.StatusBadRequest)
			wantBody(t, r, "must be a positive whole number")
		}
		r := b.get("/?before=1")
		wantStatus(t, r, 200)
		wantBody(t, r, "No older posts.")
	})
}

func TestUserPagePaging(t *testing.T) { forEachBackend(t, testUserPagePaging) }

func testUserPagePaging(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	ctx := context.Background()
	user := site.ds.Users[0]
	for i := range 101 {
		if _, err := site.db.CreatePost(ctx, user.ID, loremnews.PostInput{Title: fmt.Sprintf("Prolific post %03d", i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := site.db.CreateComment(ctx, site.ds.Posts[i%len(site.ds.Posts)].ID, user.ID, loremnews.CommentInput{Body: fmt.Sprintf("Prolific comment %03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	u, _, _, err := site.db.UserPage(ctx, user.ID, 0)
	if err != nil || u.PostsCount <= 101 || u.CommentsCount <= 101 {
		t.Fatalf("counts %+v, %v", u, err)
	}
	b := site.browser()
	r := b.get(fmt.Sprintf("/users/%d", user.ID))
	wantStatus(t, r, 200)
	wantBody(t, r, fmt.Sprintf(`<p class="meta totals">%d posts · %d comments</p>`, u.PostsCount, u.CommentsCount))
	posts := strings.Count(r.body[strings.Index(r.body, `<section id="posts">`):strings.Index(r.body, `<section id="comments">`)], `<a class="title"`)
	comments := len(regexp.MustCompile(`<li id="comment-\d+">`).FindAllString(r.body, -1))
	if posts != 100 || comments != 100 {
		t.Fatalf("first page lists %d posts and %d comments, want 100 of each", posts, comments)
	}
	links := more(r.body)
	for label, total := range map[string]int{"More posts": u.PostsCount, "More comments": u.CommentsCount} {
		path, shown := links[label], 100
		for pages := 0; path != ""; pages++ {
			if pages > 3 {
				t.Fatalf("%s: still paging after %d pages", label, pages)
			}
			r := b.get(path)
			wantStatus(t, r, 200)
			wantBody(t, r, "Back to "+user.ScreenName)
			if label == "More posts" {
				shown += strings.Count(r.body, `<a class="title"`)
			} else {
				shown += len(regexp.MustCompile(`<li id="comment-\d+">`).FindAllString(r.body, -1))
			}
			path = more(r.body)[label]
		}
		if shown != total {
			t.Errorf("%s: paged through %d, the total says %d", label, shown, total)
		}
	}
	wantStatus(t, b.get(fmt.Sprintf("/users/%d/comments?before=x", user.ID)), http.StatusBadRequest)
	wantStatus(t, b.get("/users/99999/comments?before=5"), http.StatusNotFound)
	wantStatus(t, b.get("/users/99999/posts"), http.StatusNotFound)
}

func TestCommentsURLLeadsToPost(t *testing.T) { forEachBackend(t, testCommentsURLLeadsToPost) }

func testCommentsURLLeadsToPost(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	post := site.ds.Posts[2]
	wantRedirect(t, b.get(fmt.Sprintf("/posts/%d/comments", post.ID)), fmt.Sprintf("/posts/%d#comments", post.ID))
	wantStatus(t, b.get("/posts/abc/comments"), 404)

	// A failed comment renders the form with the error tied to the box,
	// which has the focus, so the browser scrolls to the form, not to the
	// top of the post's body. (A #fragment in the form's action would
	// scroll too, but browsers skip autofocus when the URL has one.)
	b.signIn(0)
	r := b.post(fmt.Sprintf("/posts/%d/comments", post.ID), url.Values{"body": {"tiny"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantBody(t, r, `<p class="error field-error" id="comment-body-error">Comment is too short (minimum is 5 characters).</p>`)
	box := regexp.MustCompile(`<textarea id="comment-body"[^>]*>`).FindString(r.body)
	for _, attr := range []string{`aria-invalid="true"`, `aria-describedby="comment-body-error"`, "autofocus"} {
		if !strings.Contains(box, attr) {
			t.Errorf("comment box %s lacks %s", box, attr)
		}
	}
	if strings.Index(r.body, "comment-body-error") < strings.Index(r.body, `class="description"`) {
		t.Error("the error is above the post's body, not at the form")
	}
	// An ordinary visit does not steal the focus.
	if strings.Contains(regexp.MustCompile(`<textarea id="comment-body"[^>]*>`).FindString(b.get(fmt.Sprintf("/posts/%d", post.ID)).body), "autofocus") {
		t.Error("the comment box has autofocus on an ordinary visit")
	}
}

func TestDeletesAskFirst(t *testing.T) { forEachBackend(t, testDeletesAskFirst) }

func testDeletesAskFirst(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	owner, other, visitor := site.browser(), site.browser(), site.browser()
	owner.signIn(0)
	other.signIn(1)
	me := site.ds.Users[0]
	var post *loremnews.Post
	for _, p := range site.ds.Posts {
		if p.UserID == me.ID && len(commentsOf(site, p.ID)) > 1 {
			post = p
			break
		}
	}
	if post == nil {
		t.Fatal("no seeded post of user 0 with comments")
	}
	postPath := fmt.Sprintf("/posts/%d", post.ID)

	t.Run("Post", func(t *testing.T) {
		page := owner.get(postPath)
		if strings.Contains(page.body, `action="`+postPath+`/delete"`) {
			t.Fatal("the post page deletes in one click")
		}
		wantBody(t, page, `href="`+postPath+`/delete"`)
		r := owner.get(postPath + "/delete")
		wantStatus(t, r, 200)
		wantBody(t, r, fmt.Sprintf("Delete this post and its %d comments?", len(commentsOf(site, post.ID))), html.EscapeString(post.Title),
			`action="`+postPath+`/delete"`, "Cancel", "This cannot be undone.")
		wantStatus(t, other.get(postPath+"/delete"), 403)
		wantRedirect(t, visitor.get(postPath+"/delete"), "/signin")
		wantStatus(t, owner.get("/posts/99999/delete"), 404)
		wantRedirect(t, owner.post(postPath+"/delete", nil), "/")
		wantRedirect(t, owner.get(postPath), "/")
	})
	t.Run("Comment", func(t *testing.T) {
		target := site.ds.Posts[1]
		r := owner.post(fmt.Sprintf("/posts/%d/comments", target.ID), url.Values{"body": {"Soon to be deleted"}})
		id := commentIDRe.FindStringSubmatch(r.location())[1]
		page := owner.get(fmt.Sprintf("/posts/%d", target.ID))
		if strings.Contains(page.body, `action="/comments/`+id+`/delete"`) {
			t.Fatal("the post page deletes a comment in one click")
		}
		r = owner.get("/comments/" + id + "/delete")
		wantStatus(t, r, 200)
		wantBody(t, r, "Delete this comment on “"+html.EscapeString(target.Title)+"”?", "Soon to be deleted", `action="/comments/`+id+`/delete"`)
		wantStatus(t, other.get("/comments/"+id+"/delete"), 403)
		wantRedirect(t, owner.post("/comments/"+id+"/delete", nil), fmt.Sprintf("/posts/%d", target.ID))
	})
	t.Run("Account", func(t *testing.T) {
		myPath := fmt.Sprintf("/users/%d", me.ID)
		if strings.Contains(owner.get(myPath).body, `action="`+myPath+`/delete"`) {
			t.Fatal("the user page deletes the account in one click")
		}
		u, _, _, err := site.db.UserPage(context.Background(), me.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := owner.get(myPath + "/delete")
		wantStatus(t, r, 200)
		counted := func(n int, noun string) string {
			if n == 1 {
				return "1 " + noun
			}
			return fmt.Sprintf("%d %ss", n, noun)
		}
		wantBody(t, r, "Delete your account with its "+counted(u.PostsCount, "post")+" and "+counted(u.CommentsCount, "comment")+"?",
			`<label for="current-password">Your password</label>`, `action="`+myPath+`/delete"`)
		field := regexp.MustCompile(`<input id="current-password"[^>]*>`).FindString(r.body)
		for _, attr := range []string{`name="current_password"`, `type="password"`, `autocomplete="current-password"`, "required"} {
			if !strings.Contains(field, attr) {
				t.Errorf("password field %s lacks %s", field, attr)
			}
		}
		wantStatus(t, other.get(myPath+"/delete"), 403)
		wantRedirect(t, owner.post(myPath+"/delete", url.Values{"current_password": {"password"}}), "/")
		wantStatus(t, owner.get(myPath), 404)
	})
	if c, err := site.db.CheckConsistency(context.Background()); err != nil || !c.OK() {
		t.Fatalf("inconsistent: %+v, %v", c, err)
	}
}

func TestSignUpForm(t *testing.T) { forEachBackend(t, testSignUpForm) }

func testSignUpForm(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	input := func(body, id string) string {
		return regexp.MustCompile(`<input id="` + id + `"[^>]*>`).FindString(body)
	}
	t.Run("RulesBeforeTheFirstTry", func(t *testing.T) {
		r := site.browser().get("/signup")
		wantBody(t, r, "2 to 40 characters: letters, digits, and _ - . (no spaces).", "At least 8 characters")
		name, pw := input(r.body, "screen-name"), input(r.body, "password")
		for _, attr := range []string{`minlength="2"`, `maxlength="40"`, `pattern="[A-Za-z0-9_.\-]+"`, `autocomplete="username"`, `aria-describedby="screen-name-hint"`, "autofocus"} {
			if !strings.Contains(name, attr) {
				t.Errorf("screen name %s lacks %s", name, attr)
			}
		}
		for _, attr := range []string{`minlength="8"`, `maxlength="72"`, `autocomplete="new-password"`, `aria-describedby="password-hint"`} {
			if !strings.Contains(pw, attr) {
				t.Errorf("password %s lacks %s", pw, attr)
			}
		}
		if strings.Contains(r.body, "aria-invalid") {
			t.Error("fields marked invalid before the first try")
		}
	})
	t.Run("AllErrorsAtOnce", func(t *testing.T) {
		r := site.browser().post("/signup", url.Values{"screen_name": {"no spaces!"}, "password": {"short"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, "Please fix the 2 problems below.",
			`<p class="error field-error" id="screen-name-error">Screen name may only contain`,
			`<p class="error field-error" id="password-error">Password is too short (minimum is 8 characters).</p>`,
			`value="no spaces!"`)
		name, pw := input(r.body, "screen-name"), input(r.body, "password")
		for field, attrs := range map[string][]string{
			name: {`aria-invalid="true"`, `aria-describedby="screen-name-hint screen-name-error"`, "autofocus"},
			pw:   {`aria-invalid="true"`, `aria-describedby="password-hint password-error"`},
		} {
			for _, a := range attrs {
				if !strings.Contains(field, a) {
					t.Errorf("%s lacks %s", field, a)
				}
			}
		}
		if strings.Contains(pw, "autofocus") {
			t.Error("focus on the second invalid field")
		}
	})
	t.Run("FocusOnTheFirstInvalid", func(t *testing.T) {
		r := site.browser().post("/signup", url.Values{"screen_name": {"fine_name"}, "password": {"short"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if name, pw := input(r.body, "screen-name"), input(r.body, "password"); strings.Contains(name, "autofocus") || strings.Contains(name, "aria-invalid") ||
			!strings.Contains(pw, "autofocus") {
			t.Errorf("focus not on the password:\n%s\n%s", name, pw)
		}
		r = site.browser().post("/signup", url.Values{"screen_name": {site.ds.Users[0].ScreenName}, "password": {"long enough"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, `id="screen-name-error">Screen name has already been taken.</p>`)
	})
}

func TestSessionsTable(t *testing.T) { forEachBackend(t, testSessionsTable) }

func testSessionsTable(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	const chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"
	form := url.Values{"screen_name": {site.ds.Users[0].ScreenName}, "password": {"password"}, "csrf_token": {b.csrf()}}
	req, _ := http.NewRequest(http.MethodPost, site.srv.URL+"/signin", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", chrome)
	wantRedirect(t, b.do(req), "/")
	r := b.get(fmt.Sprintf("/users/%d", site.ds.Users[0].ID))
	wantBody(t, r, `<td title="`+html.EscapeString(chrome)+`">Chrome on Linux</td>`)
	if strings.Contains(r.body, "<th></th>") {
		t.Error("an empty table header cell")
	}
}

func TestGzip(t *testing.T) { forEachBackend(t, testGzip) }

func testGzip(t *testing.T, be backend) {
	get := func(site *testSite, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, site.srv.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		// A transport of its own that leaves the body compressed.
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	t.Run("OffByDefault", func(t *testing.T) {
		site := newTestSite(t, be, siteOptions{})
		if enc := get(site, "/").Header.Get("Content-Encoding"); enc != "" {
			t.Fatalf("Content-Encoding %q without --gzip", enc)
		}
	})
	t.Run("On", func(t *testing.T) {
		site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{Gzip: true}})
		resp := get(site, "/")
		if enc := resp.Header.Get("Content-Encoding"); enc != "gzip" {
			t.Fatalf("Content-Encoding %q with --gzip", enc)
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(zr)
		if err != nil || !strings.Contains(string(body), "Newest posts") {
			t.Fatalf("decompressed page: %v\n%.300s", err, body)
		}
		if get(site, "/favicon.ico").Header.Get("Content-Encoding") != "" {
			t.Error("the icon (already compressed) was gzipped")
		}
	})
}

func TestPostFormErrorsAtTheirFields(t *testing.T) {
	forEachBackend(t, testPostFormErrorsAtTheirFields)
}

func testPostFormErrorsAtTheirFields(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	b.signIn(0)
	r := b.post("/posts", url.Values{"title": {"abc"}, "description": {"bell \x07 inside"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantBody(t, r, "Please fix the 2 problems below.",
		`<p class="error field-error" id="post-title-error">Title is too short (minimum is 5 characters).</p>`,
		`<p class="error field-error" id="post-description-error">Description contains control characters.</p>`)
	title := regexp.MustCompile(`<input id="post-title"[^>]*>`).FindString(r.body)
	desc := regexp.MustCompile(`<textarea id="post-description"[^>]*>`).FindString(r.body)
	for _, f := range []struct {
		field, attr string
		want        bool
	}{
		{title, `aria-invalid="true"`, true}, {title, `aria-describedby="post-title-error"`, true}, {title, "autofocus", true},
		{desc, `aria-invalid="true"`, true}, {desc, "autofocus", false},
	} {
		if got := strings.Contains(f.field, f.attr); got != f.want {
			t.Errorf("%s has %s: %v, want %v", f.field, f.attr, got, f.want)
		}
	}
	// Only the description wrong: it gets the focus, the title is not marked.
	r = b.post("/posts", url.Values{"title": {"A fine title"}, "description": {"bell \x07 inside"}})
	title = regexp.MustCompile(`<input id="post-title"[^>]*>`).FindString(r.body)
	desc = regexp.MustCompile(`<textarea id="post-description"[^>]*>`).FindString(r.body)
	if strings.Contains(title, "aria-invalid") || strings.Contains(title, "autofocus") || !strings.Contains(desc, "autofocus") {
		t.Fatalf("fields:\n%s\n%s", title, desc)
	}
	// The store's verdict (a taken title) is the title's.
	r = b.post("/posts", url.Values{"title": {site.ds.Posts[0].Title}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantBody(t, r, `id="post-title-error">Title has already been taken.</p>`)
}

// TestFormLimitsAreTheDomains: every length a form lets the browser check
// is the domain's limit, which the server checks again.
func TestFormLimitsAreTheDomains(t *testing.T) {
	site := newTestSite(t, sqliteBackend, siteOptions{})
	b := site.browser()
	b.signIn(0)
	post := site.ds.Posts[0]
	var own *loremnews.Comment
	for _, c := range site.ds.Comments {
		if c.UserID == site.ds.Users[0].ID {
			own = c
			break
		}
	}
	if own == nil {
		t.Fatal("the first user has no comment")
	}
	for _, tc := range []struct {
		page, field string
		min, max    int
	}{
		{"/posts/new", `<input id="post-title"`, loremnews.MinTitleLen, loremnews.MaxTitleLen},
		{"/posts/new", `<textarea id="post-description"`, 0, loremnews.MaxDescriptionLen},
		{fmt.Sprintf("/posts/%d", post.ID), `<textarea id="comment-body"`, loremnews.MinBodyLen, loremnews.MaxBodyLen},
		{fmt.Sprintf("/comments/%d/edit", own.ID), `<textarea id="comment-body"`, loremnews.MinBodyLen, loremnews.MaxBodyLen},
		{"/signup", `<input id="screen-name"`, loremnews.MinScreenNameLen, loremnews.MaxScreenNameLen},
	} {
		page := site.browser()
		if tc.page != "/signup" {
			page = b
		}
		r := page.get(tc.page)
		wantStatus(t, r, 200)
		field := regexp.MustCompile(regexp.QuoteMeta(tc.field) + `[^>]*>`).FindString(r.body)
		if field == "" {
			t.Fatalf("%s has no %s", tc.page, tc.field)
		}
		want := fmt.Sprintf(`maxlength="%d"`, tc.max)
		if tc.min > 0 {
			want = fmt.Sprintf(`minlength="%d" maxlength="%d"`, tc.min, tc.max)
		}
		if !strings.Contains(field, want) {
			t.Errorf("%s: %s lacks %s", tc.page, field, want)
		}
	}
}
