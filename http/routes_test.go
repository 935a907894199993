package http_test

import (
	"context"
	"fmt"
	"html"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	lnhttp "github.com/loremnews/loremnews/http"
	"github.com/loremnews/loremnews/seed"
)

func TestPublicPages(t *testing.T) { forEachBackend(t, testPublicPages) }

func testPublicPages(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	post := site.ds.Posts[3]
	author := site.ds.Users[post.UserID-1]

	t.Run("Index", func(t *testing.T) {
		r := b.get("/")
		wantStatus(t, r, 200)
		// newest first: the last seeded post leads
		last := site.ds.Posts[len(site.ds.Posts)-1]
		wantBody(t, r, html.EscapeString(last.Title), "Sign in", "ago")
		if strings.Index(r.body, html.EscapeString(last.Title)) > strings.Index(r.body, html.EscapeString(site.ds.Posts[0].Title)) {
			t.Fatal("index is not newest first")
		}
	})
	t.Run("Post", func(t *testing.T) {
		r := b.get(fmt.Sprintf("/posts/%d", post.ID))
		wantStatus(t, r, 200)
		wantBody(t, r, html.EscapeString(post.Title), author.ScreenName, "<p>", "Sign in</a> to comment")
		if strings.Contains(r.body, "/edit") {
			t.Fatal("a visitor sees Edit links")
		}
	})
	t.Run("User", func(t *testing.T) {
		r := b.get(fmt.Sprintf("/users/%d", author.ID))
		wantStatus(t, r, 200)
		wantBody(t, r, author.ScreenName, "Joined", "Comments")
		if strings.Contains(r.body, "Delete my account") {
			t.Fatal("a visitor sees the account controls")
		}
	})
	t.Run("Up", func(t *testing.T) {
		r := b.get("/up")
		wantStatus(t, r, 200)
		wantBody(t, r, "OK")
	})
	t.Run("Static", func(t *testing.T) {
		page := b.get("/")
		css := regexp.MustCompile(`<link rel="stylesheet" href="(/static/style\.[0-9a-f]{10}\.css)">`).FindStringSubmatch(page.body)
		if css == nil {
			t.Fatalf("no fingerprinted stylesheet link in\n%.600s", page.body)
		}
		r := b.get(css[1])
		wantStatus(t, r, 200)
		wantBody(t, r, "--accent")
		if got := r.header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
			t.Errorf("Cache-Control %q", got)
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/css") {
			t.Errorf("Content-Type %q", ct)
		}
		// No listings, and no file under a name without its digest.
		for _, path := range []string{"/static/", "/static/style.css", "/static/style.0000000000.css", "/static/sub/", "/static/sub/style.css"} {
			if r := b.get(path); r.status != 404 {
				t.Errorf("GET %s = %d, want 404", path, r.status)
			}
		}
	})
	t.Run("FaviconAndRobots", func(t *testing.T) {
		r := b.get("/favicon.ico")
		wantStatus(t, r, 200)
		if ct := r.header.Get("Content-Type"); ct != "image/vnd.microsoft.icon" || !strings.HasPrefix(r.body, "\x00\x00\x01\x00") {
			t.Errorf("favicon: %q, %q…", ct, r.body[:min(8, len(r.body))])
		}
		r = b.get("/robots.txt")
		wantStatus(t, r, 200)
		wantBody(t, r, "User-agent: *", "Disallow: /benchmarking/")
	})
	t.Run("HeadDetails", func(t *testing.T) {
		for path, title := range map[string]string{
			"/": "<title>Lorem News</title>", "/signin": "<title>Sign in · Lorem News</title>",
			fmt.Sprintf("/posts/%d", post.ID): "<title>" + html.EscapeString(post.Title) + " · Lorem News</title>",
		} {
			r := b.get(path)
			wantBody(t, r, title, `<meta name="description" content="`)
			if regexp.MustCompile(`<meta name="description" content="\s*">`).MatchString(r.body) {
				t.Errorf("%s: empty description", path)
			}
		}
		// The post page describes the post by its first words.
		first := strings.Fields(post.Description)[:3]
		wantBody(t, b.get(fmt.Sprintf("/posts/%d", post.ID)), `<meta name="description" content="`+html.EscapeString(strings.Join(first, " ")))
		// Every age says its date on hover.
		r := b.get("/")
		if n, m := strings.Count(r.body, "<time "), strings.Count(r.body, `<time datetime="`); n == 0 || n != m ||
			n != len(regexp.MustCompile(`<time datetime="[^"]+" title="\d{1,2} [A-Z][a-z]{2} \d{4} \d\d:\d\d UTC">`).FindAllString(r.body, -1)) {
			t.Errorf("times without datetime or title: %d <time>", n)
		}
	})
	t.Run("SecurityHeaders", func(t *testing.T) {
		r := b.get("/")
		for k, want := range map[string]string{
			"X-Content-Type-Options": "nosniff",
			"Referrer-Policy":        "same-origin",
		} {
			if got := r.header.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		csp := r.header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("CSP = %q", csp)
		}
	})
	t.Run("UnknownIDsAre404", func(t *testing.T) {
		for _, path := range []string{
			"/posts/99999", "/posts/0", "/posts/-1", "/posts/abc", "/posts/99999999999999999999999",
			"/users/99999", "/users/x", "/comments/99999/edit", "/no/such/page",
		} {
			r := b.get(path)
			if r.status != 404 && !(strings.HasPrefix(path, "/comments") && r.status == 303) {
				t.Errorf("GET %s = %d, want 404", path, r.status)
			}
		}
	})
}

func TestSignUpInOut(t *testing.T) { forEachBackend(t, testSignUpInOut) }

func testSignUpInOut(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})

	t.Run("SignUp", func(t *testing.T) {
		b := site.browser()
		r := b.post("/signup", url.Values{"screen_name": {"newcomer"}, "password": {"longenough"}})
		wantRedirect(t, r, "/")
		r = b.get("/")
		wantBody(t, r, "newcomer", "Sign out", "Welcome to Lorem News.")
	})
	for name, tc := range map[string]struct {
		form url.Values
		msg  string
	}{
		"Taken":         {url.Values{"screen_name": {"NEWCOMER"}, "password": {"longenough"}}, "Screen name has already been taken."},
		"ShortPassword": {url.Values{"screen_name": {"shorty"}, "password": {"Xq7#z"}}, "Password is too short"},
		"BlankName":     {url.Values{"screen_name": {"   "}, "password": {"longenough"}}, "Screen name can&#39;t be blank."},
		"BadChars":      {url.Values{"screen_name": {"a b<c"}, "password": {"longenough"}}, "may only contain"},
	} {
		t.Run("Invalid"+name, func(t *testing.T) {
			r := site.browser().post("/signup", tc.form)
			wantStatus(t, r, http.StatusUnprocessableEntity)
			wantBody(t, r, tc.msg, `value="`+html.EscapeString(strings.TrimSpace(tc.form.Get("screen_name")))+`"`)
			if strings.Contains(r.body, tc.form.Get("password")) {
				t.Fatal("password echoed back")
			}
		})
	}
	t.Run("SignInWrongPassword", func(t *testing.T) {
		name := site.ds.Users[0].ScreenName
		r := site.browser().post("/signin", url.Values{"screen_name": {name}, "password": {"wrong-password"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, "Wrong screen name or password.", `value="`+name+`"`)
		r = site.browser().post("/signin", url.Values{"screen_name": {"nobody-here"}, "password": {"password"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, "Wrong screen name or password.")
	})
	t.Run("SignInReturnsToPage", func(t *testing.T) {
		b := site.browser()
		r := b.post("/signin", url.Values{"screen_name": {site.ds.Users[0].ScreenName}, "password": {seed.Password}, "return_to": {"/posts/2"}})
		wantRedirect(t, r, "/posts/2")
		r = b.post("/signin", url.Values{"screen_name": {site.ds.Users[0].ScreenName}, "password": {seed.Password}, "return_to": {"//evil.example/"}})
		if r.location() != "/" {
			t.Fatalf("open redirect: Location %q", r.location())
		}
	})
	t.Run("SessionCookie", func(t *testing.T) {
		b := site.browser()
		r := b.post("/signin", url.Values{"screen_name": {site.ds.Users[1].ScreenName}, "password": {seed.Password}})
		var c *http.Cookie
		for _, ck := range (&http.Response{Header: r.header}).Cookies() {
			if ck.Name == "lorem_session" {
				c = ck
			}
		}
		if c == nil {
			t.Fatal("no session cookie")
		}
		if !c.HttpOnly {
			t.Errorf("session cookie HttpOnly = false, want true")
		}
		if c.SameSite != http.SameSiteLaxMode {
			t.Errorf("session cookie SameSite = %v, want Lax", c.SameSite)
		}
		if len(c.Value) < 40 {
			t.Errorf("session cookie value is %d characters, want at least 40", len(c.Value))
		}
		// A forged cookie signs no one in.
		forged := site.browser()
		u, _ := url.Parse(site.srv.URL)
		forged.client.Jar.SetCookies(u, []*http.Cookie{{Name: "lorem_session", Value: c.Value[:len(c.Value)-2] + "xx"}})
		wantBody(t, forged.get("/"), "Sign in")
	})
	t.Run("SignOut", func(t *testing.T) {
		b := site.browser()
		b.signIn(2)
		wantBody(t, b.get("/"), "Sign out")
		wantRedirect(t, b.post("/signout", nil), "/")
		r := b.get("/")
		wantBody(t, r, "Sign in", "You are signed out.")
		wantRedirect(t, b.post("/signout", nil), "/signin")
	})
}

var postIDRe = regexp.MustCompile(`^/posts/(\d+)`)

func TestPosts(t *testing.T) { forEachBackend(t, testPosts) }

func testPosts(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	owner, other, visitor := site.browser(), site.browser(), site.browser()
	owner.signIn(0)
	other.signIn(1)

	t.Run("VisitorIsSentToSignIn", func(t *testing.T) {
		wantRedirect(t, visitor.get("/posts/new"), "/signin?return_to=%2Fposts%2Fnew")
		wantRedirect(t, visitor.post("/posts", url.Values{"title": {"Sneaky post"}}), "/signin")
		wantRedirect(t, visitor.get("/posts/1/edit"), "/signin")
		wantRedirect(t, visitor.post("/posts/1/delete", nil), "/signin")
	})

	wantStatus(t, owner.get("/posts/new"), 200)
	r := owner.post("/posts", url.Values{"title": {"My brand new post"}, "description": {"Para one.\n\nPara two."}})
	wantRedirect(t, r, "/posts/")
	path := postIDRe.FindString(r.location())
	r = owner.get(path)
	wantStatus(t, r, 200)
	wantBody(t, r, "My brand new post", "<p>Para one.</p>", "<p>Para two.</p>", "by you", "Edit", "Delete", "Your post was published.")
	if strings.Contains(owner.get(path).body, "Your post was published.") {
		t.Fatal("the confirmation shows again on the next page")
	}

	t.Run("Invalid", func(t *testing.T) {
		r := owner.post("/posts", url.Values{"title": {"abc"}, "description": {"kept text"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, "Title is too short (minimum is 5 characters).", `value="abc"`, "kept text")
		r = owner.post("/posts", url.Values{"title": {"My brand new post"}, "description": {"dup"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, "Title has already been taken.")
		r = owner.post("/posts", url.Values{"title": {"   "}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, "Title can&#39;t be blank.")
	})
	t.Run("OthersGet403", func(t *testing.T) {
		wantStatus(t, other.get(path+"/edit"), 403)
		wantStatus(t, other.post(path, url.Values{"title": {"Hijacked title"}}), 403)
		wantStatus(t, other.post(path+"/delete", nil), 403)
		if strings.Contains(other.get(path).body, path+"/edit") {
			t.Fatal("others see the Edit link")
		}
	})
	t.Run("UnknownIs404", func(t *testing.T) {
		wantStatus(t, owner.get("/posts/99999/edit"), 404)
		wantStatus(t, owner.post("/posts/99999", url.Values{"title": {"Whatever title"}}), 404)
		wantStatus(t, owner.post("/posts/99999/delete", nil), 404)
	})
	t.Run("Edit", func(t *testing.T) {
		r := owner.get(path + "/edit")
		wantStatus(t, r, 200)
		wantBody(t, r, `value="My brand new post"`)
		r = owner.post(path, url.Values{"title": {"x"}, "description": {"keep me"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, "Title is too short", "keep me")
		wantRedirect(t, owner.post(path, url.Values{"title": {"My edited post"}, "description": {"Edited."}}), path)
		wantBody(t, owner.get(path), "My edited post", "Edited.", "Your changes to the post were saved.")
	})
	t.Run("EscapesHTML", func(t *testing.T) {
		r := owner.post("/posts", url.Values{"title": {`<script>alert("x")</script>`}, "description": {`<img src=x onerror=alert(1)>`}})
		wantRedirect(t, r, "/posts/")
		r = owner.get(postIDRe.FindString(r.location()))
		wantBody(t, r, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;", "&lt;img src=x onerror=alert(1)&gt;")
		if strings.Contains(r.body, "<script>") || strings.Contains(r.body, "<img") {
			t.Fatal("user HTML rendered unescaped")
		}
	})
	t.Run("Delete", func(t *testing.T) {
		wantRedirect(t, owner.post(path+"/delete", nil), "/")
		wantBody(t, owner.get("/"), "The post was deleted.")
		// The deleted post's link leads to the front page with a notice.
		r := owner.get(path)
		wantRedirect(t, r, "/")
		wantBody(t, owner.get("/"), "That post has been deleted.")
		wantStatus(t, owner.post(path+"/delete", nil), 404)
		if c, _ := site.db.CheckConsistency(context.Background()); !c.OK() {
			t.Fatalf("inconsistent: %+v", c)
		}
	})
}

var commentIDRe = regexp.MustCompile(`#comment-(\d+)$`)

func TestComments(t *testing.T) { forEachBackend(t, testComments) }

func testComments(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	owner, other, visitor := site.browser(), site.browser(), site.browser()
	owner.signIn(0)
	other.signIn(1)
	post := site.ds.Posts[0]
	postPath := fmt.Sprintf("/posts/%d", post.ID)

	wantRedirect(t, visitor.post(postPath+"/comments", url.Values{"body": {"anonymous words"}}), "/signin")
	r := owner.post(postPath+"/comments", url.Values{"body": {"A thoughtful comment"}})
	wantRedirect(t, r, postPath+"#comment-")
	id := commentIDRe.FindStringSubmatch(r.location())[1]
	cpath := "/comments/" + id
	r = owner.get(postPath)
	wantBody(t, r, "A thoughtful comment", cpath+"/edit", fmt.Sprintf("%d comments", len(commentsOf(site, post.ID))+1), "Your comment was added.")

	t.Run("Invalid", func(t *testing.T) {
		r := owner.post(postPath+"/comments", url.Values{"body": {"shrt"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, "Comment is too short (minimum is 5 characters).", ">shrt</textarea>", html.EscapeString(post.Title))
		wantStatus(t, owner.post("/posts/99999/comments", url.Values{"body": {"On nothing at all"}}), 404)
	})
	t.Run("OthersGet403", func(t *testing.T) {
		wantStatus(t, other.get(cpath+"/edit"), 403)
		wantStatus(t, other.post(cpath, url.Values{"body": {"Hijacked comment"}}), 403)
		wantStatus(t, other.post(cpath+"/delete", nil), 403)
	})
	t.Run("UnknownIs404", func(t *testing.T) {
		wantStatus(t, owner.get("/comments/99999/edit"), 404)
		wantStatus(t, owner.post("/comments/99999", url.Values{"body": {"Whatever body"}}), 404)
		wantStatus(t, owner.post("/comments/99999/delete", nil), 404)
	})
	t.Run("Edit", func(t *testing.T) {
		wantBody(t, owner.get(cpath+"/edit"), "A thoughtful comment")
		r := owner.post(cpath, url.Values{"body": {"no"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, "Comment is too short", ">no</textarea>")
		wantRedirect(t, owner.post(cpath, url.Values{"body": {"An edited comment"}}), postPath+"#comment-"+id)
		wantBody(t, owner.get(postPath), "An edited comment", "Your changes to the comment were saved.")
	})
	t.Run("Delete", func(t *testing.T) {
		wantRedirect(t, owner.post(cpath+"/delete", nil), postPath)
		r := owner.get(postPath)
		if strings.Contains(r.body, "An edited comment") {
			t.Fatal("deleted comment still shown")
		}
		wantStatus(t, owner.post(cpath+"/delete", nil), 404)
		if c, _ := site.db.CheckConsistency(context.Background()); !c.OK() {
			t.Fatalf("inconsistent: %+v", c)
		}
	})
}

func commentsOf(site *testSite, postID int64) (out []*loremnews.Comment) {
	for _, c := range site.ds.Comments {
		if c.PostID == postID {
			out = append(out, c)
		}
	}
	return out
}

func TestAccount(t *testing.T) { forEachBackend(t, testAccount) }

func testAccount(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	me, myOtherBrowser, other := site.browser(), site.browser(), site.browser()
	me.signIn(0)
	myOtherBrowser.signIn(0)
	other.signIn(1)
	myID := site.ds.Users[0].ID
	myPath := fmt.Sprintf("/users/%d", myID)
	otherPath := fmt.Sprintf("/users/%d", site.ds.Users[1].ID)

	t.Run("OwnPageHasControls", func(t *testing.T) {
		r := me.get(myPath)
		wantStatus(t, r, 200)
		wantBody(t, r, "Edit profile", "Delete my account", "Your signed-in browsers", "this browser", "Revoke")
		if strings.Contains(other.get(myPath).body, "Delete my account") {
			t.Fatal("others see my account controls")
		}
	})
	t.Run("OthersGet403", func(t *testing.T) {
		wantStatus(t, me.get(otherPath+"/edit"), 403)
		wantStatus(t, me.post(otherPath, url.Values{"screen_name": {"hijack"}}), 403)
		wantStatus(t, me.post(otherPath+"/delete", nil), 403)
	})
	t.Run("Edit", func(t *testing.T) {
		wantStatus(t, me.get(myPath+"/edit"), 200)
		r := me.post(myPath, url.Values{"screen_name": {site.ds.Users[1].ScreenName}, "about": {"kept about"}, "current_password": {seed.Password}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, "Screen name has already been taken.", "kept about")
		r = me.post(myPath, url.Values{"screen_name": {"renamed"}, "about": {"x"}, "password": {"short"}, "current_password": {seed.Password}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantBody(t, r, "Password is too short")
		// The screen name is what one signs in with: changing it asks for
		// the password, as a new password does. The about text alone does not.
		for current, msg := range map[string]string{"": "Enter your current password.", "not my password": "Your current password is not right."} {
			r = me.post(myPath, url.Values{"screen_name": {"renamed"}, "about": {"Hello there."}, "current_password": {current}})
			wantStatus(t, r, http.StatusUnprocessableEntity)
			wantBody(t, r, msg)
		}
		if u, err := site.db.FindUserByID(context.Background(), myID); err != nil || u.ScreenName != site.ds.Users[0].ScreenName {
			t.Fatalf("a rename without the password was saved: %+v, %v", u, err)
		}
		wantRedirect(t, me.post(myPath, url.Values{"screen_name": {site.ds.Users[0].ScreenName}, "about": {"About alone."}}), myPath)
		wantRedirect(t, me.post(myPath, url.Values{"screen_name": {"renamed"}, "about": {"Hello there."}, "current_password": {seed.Password}}), myPath)
		wantBody(t, me.get(myPath), "renamed", "Hello there.", "Your profile was saved.")
	})
	t.Run("RevokeSessionSignsThatBrowserOut", func(t *testing.T) {
		r := me.get(myPath)
		ids := regexp.MustCompile(`action="/sessions/(\d+)/delete"`).FindAllStringSubmatch(r.body, -1)
		if len(ids) < 1 {
			t.Fatalf("no revoke buttons:\n%s", r.body)
		}
		// Someone else cannot revoke my session.
		wantStatus(t, other.post("/sessions/"+ids[0][1]+"/delete", nil), 404)
		for _, m := range ids {
			wantRedirect(t, me.post("/sessions/"+m[1]+"/delete", nil), myPath)
		}
		wantBody(t, myOtherBrowser.get("/"), "Sign in")
		wantBody(t, me.get("/"), "Sign out")
	})
	t.Run("ChangePasswordNeedsCurrentAndSignsOutOtherBrowsers", func(t *testing.T) {
		wantRedirect(t, myOtherBrowser.post("/signin", url.Values{"screen_name": {"renamed"}, "password": {seed.Password}}), "/")
		wantBody(t, myOtherBrowser.get("/"), "Sign out")
		form := func(current string) url.Values {
			return url.Values{"screen_name": {"renamed"}, "about": {"Hello there."}, "password": {"a new password"}, "current_password": {current}}
		}
		for current, msg := range map[string]string{"": "Enter your current password.", "not my password": "Your current password is not right."} {
			r := me.post(myPath, form(current))
			wantStatus(t, r, http.StatusUnprocessableEntity)
			wantBody(t, r, msg, `name="current_password"`)
			if strings.Contains(r.body, "a new password") || current != "" && strings.Contains(r.body, current) {
				t.Fatal("a password was echoed back")
			}
		}
		// Refused changes changed nothing: the old password still works.
		wantRedirect(t, site.browser().post("/signin", url.Values{"screen_name": {"renamed"}, "password": {seed.Password}}), "/")

		oldCookie := me.cookie("lorem_session")
		wantRedirect(t, me.post(myPath, form(seed.Password)), myPath)
		wantBody(t, me.get("/"), "Sign out")            // this browser stays signed in…
		wantBody(t, myOtherBrowser.get("/"), "Sign in") // every other one is signed out
		// …with a new session: a copy of its old cookie signs no one in.
		if newCookie := me.cookie("lorem_session"); newCookie == oldCookie || newCookie == "" {
			t.Fatal("the session was not renewed at the password change")
		}
		stolen := site.browser()
		u, _ := url.Parse(site.srv.URL)
		stolen.client.Jar.SetCookies(u, []*http.Cookie{{Name: "lorem_session", Value: oldCookie}})
		wantBody(t, stolen.get("/"), "Sign in")
		r := me.get(myPath)
		if n := strings.Count(r.body, `action="/sessions/`); n != 0 {
			t.Fatalf("%d other sessions still listed", n)
		}
		wantStatus(t, site.browser().post("/signin", url.Values{"screen_name": {"renamed"}, "password": {seed.Password}}), http.StatusUnprocessableEntity)
		wantRedirect(t, site.browser().post("/signin", url.Values{"screen_name": {"renamed"}, "password": {"a new password"}}), "/")
	})
	t.Run("DeleteAccountNeedsPassword", func(t *testing.T) {
		for current, msg := range map[string]string{"": "Enter your current password.", "not my password": "Your current password is not right."} {
			r := me.post(myPath+"/delete", url.Values{"current_password": {current}})
			wantStatus(t, r, http.StatusUnprocessableEntity)
			wantBody(t, r, msg, "Delete my account", `name="current_password"`)
		}
		wantStatus(t, me.get(myPath), 200)
		wantBody(t, me.get("/"), "Sign out")
	})
	t.Run("DeleteAccount", func(t *testing.T) {
		wantRedirect(t, me.post(myPath+"/delete", url.Values{"current_password": {"a new password"}}), "/")
		wantBody(t, me.get("/"), "Sign in", "Your account was deleted.")
		wantStatus(t, me.get(myPath), 404)
		if c, _ := site.db.CheckConsistency(context.Background()); !c.OK() {
			t.Fatalf("inconsistent: %+v", c)
		}
	})
}

func TestSecureCookies(t *testing.T) { forEachBackend(t, testSecureCookies) }

func testSecureCookies(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{SecureCookies: true}})
	r := site.browser().post("/signin", url.Values{"screen_name": {site.ds.Users[0].ScreenName}, "password": {seed.Password}})
	cookies := (&http.Response{Header: r.header}).Cookies()
	if len(cookies) == 0 {
		t.Fatal("no cookies")
	}
	names := map[string]bool{}
	for _, c := range cookies {
		names[c.Name] = true
		// __Host-: the browser takes the cookie only if it is Secure, for
		// path / and without a Domain, so no subdomain can plant one.
		if !c.Secure {
			t.Errorf("cookie %s: Secure = false, want true", c.Name)
		}
		if !c.HttpOnly {
			t.Errorf("cookie %s: HttpOnly = false, want true", c.Name)
		}
		if !strings.HasPrefix(c.Name, "__Host-") {
			t.Errorf("cookie %s: no __Host- prefix", c.Name)
		}
		if c.Path != "/" {
			t.Errorf("cookie %s: Path = %q, want /", c.Name, c.Path)
		}
		if c.Domain != "" {
			t.Errorf("cookie %s: Domain = %q, want none", c.Name, c.Domain)
		}
	}
	if !names["__Host-lorem_session"] || !names["__Host-lorem_device"] {
		t.Errorf("cookies set: %v", names)
	}
	if got := r.header.Get("Strict-Transport-Security"); !strings.HasPrefix(got, "max-age=") {
		t.Errorf("Strict-Transport-Security = %q", got)
	}
}

func TestNoHSTSWithoutSecureCookies(t *testing.T) { forEachBackend(t, testNoHSTSWithoutSecureCookies) }

func testNoHSTSWithoutSecureCookies(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	if got := site.browser().get("/").header.Get("Strict-Transport-Security"); got != "" {
		t.Fatalf("Strict-Transport-Security = %q on a plain-HTTP site", got)
	}
}

func TestCSRF(t *testing.T) { forEachBackend(t, testCSRF) }

func testCSRF(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	b.signIn(0)
	form := url.Values{"title": {"A post without token"}}
	t.Run("Missing", func(t *testing.T) {
		r := b.postRaw("/posts", form)
		wantStatus(t, r, 403)
		wantBody(t, r, "security token")
	})
	t.Run("Wrong", func(t *testing.T) {
		f := url.Values{"title": {"A post with bad token"}, "csrf_token": {strings.Repeat("A", 43)}}
		wantStatus(t, b.postRaw("/posts", f), 403)
	})
	t.Run("CrossOrigin", func(t *testing.T) {
		f := url.Values{"title": {"A cross-site post"}, "csrf_token": {b.csrf()}}
		req, _ := http.NewRequest(http.MethodPost, site.srv.URL+"/posts", strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		wantStatus(t, b.do(req), 403)
	})
	t.Run("BoundToTheSession", func(t *testing.T) {
		// Another signed-in browser's token, sent with this browser's
		// cookies, is refused: a token works only for its own session.
		other := site.browser()
		other.signIn(1)
		f := url.Values{"title": {"A post with another session's token"}, "csrf_token": {other.csrf()}}
		wantStatus(t, b.postRaw("/posts", f), 403)
	})
	t.Run("RotatedAtSignIn", func(t *testing.T) {
		v := site.browser()
		before := v.csrf()
		v.signIn(2)
		after := v.csrf()
		if before == after {
			t.Fatal("the CSRF token did not change at sign-in")
		}
		f := url.Values{"title": {"A post with the visitor token"}, "csrf_token": {before}}
		wantStatus(t, v.postRaw("/posts", f), 403)
		// Signing in again (a new session) issues another token.
		v.signIn(2)
		if v.csrf() == after {
			t.Fatal("a second sign-in kept the token")
		}
	})
	t.Run("SignInNeedsTokenToo", func(t *testing.T) {
		wantStatus(t, site.browser().postRaw("/signin", url.Values{"screen_name": {"x"}, "password": {"y"}}), 403)
	})
	recent, _ := site.db.PostsBefore(context.Background(), math.MaxInt64, 100)
	for _, p := range recent {
		if strings.Contains(p.Title, "token") || strings.Contains(p.Title, "cross-site") || strings.Contains(p.Title, "session") {
			t.Fatalf("a rejected form created %q", p.Title)
		}
	}
}

func TestLimits(t *testing.T) { forEachBackend(t, testLimits) }

func testLimits(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	b.signIn(0)
	r := b.post("/posts", url.Values{"title": {"A huge post"}, "description": {strings.Repeat("x", 100<<10)}})
	wantStatus(t, r, http.StatusRequestEntityTooLarge)
	r = b.post("/posts", url.Values{"title": {"Bad \xff UTF-8"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantBody(t, r, "not valid UTF-8")
}

func TestBenchmarkingEndpoints(t *testing.T) { forEachBackend(t, testBenchmarkingEndpoints) }

func testBenchmarkingEndpoints(t *testing.T, be backend) {
	t.Run("OffByDefault", func(t *testing.T) {
		site := newTestSite(t, be, siteOptions{})
		wantStatus(t, site.browser().postRaw("/benchmarking/balanced", nil), 404)
		wantStatus(t, site.browser().postRaw("/benchmarking/ceiling", nil), 404)
		wantStatus(t, site.browser().get("/benchmarking/balanced"), 404)
	})
	site := newTestSite(t, be, siteOptions{benchmarking: true})
	b := site.browser()
	for action, want := range map[string]string{
		"post_create": "/posts/", "comment_create": "/posts/", "post_destroy": "/", "comment_destroy": "/posts/",
		"post_show": "200", "posts_index": "200", "user_show": "200",
	} {
		t.Run(action, func(t *testing.T) {
			r := b.postRaw("/benchmarking/"+action, nil)
			if want == "200" {
				wantStatus(t, r, 200)
				wantBody(t, r, "Lorem News")
			} else {
				wantRedirect(t, r, want)
			}
		})
	}
	t.Run("PostCreateDescribesHeaders", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, site.srv.URL+"/benchmarking/post_create", nil)
		req.Header.Set("User-Agent", "bench-test/1.0")
		r := b.do(req)
		wantRedirect(t, r, "/posts/")
		page := b.get(r.location())
		wantBody(t, page, "Post ", "User-Agent: bench-test/1.0")
	})
	t.Run("Mixes", func(t *testing.T) {
		for _, mix := range []string{"read_heavy", "write_heavy", "balanced"} {
			for range 20 {
				r := b.postRaw("/benchmarking/"+mix, nil)
				if r.status != 200 && r.status != 303 {
					t.Fatalf("%s: %d\n%s", mix, r.status, r.body)
				}
			}
		}
	})
	t.Run("PointRead", func(t *testing.T) {
		before, err := site.db.CheckConsistency(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var lastSeen []time.Time
		for id := int64(1); id <= 3; id++ {
			u, err := site.db.FindUserByID(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			lastSeen = append(lastSeen, u.LastSeenAt)
		}
		for range 20 {
			r := b.postRaw("/benchmarking/point_read", nil)
			wantStatus(t, r, 200)
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Fatalf("Content-Type %q, want text/plain", ct)
			}
			if !strings.HasPrefix(r.body, "Hello ") || strings.Contains(r.body, "<") {
				t.Fatalf("body %q, want \"Hello NAME!\"", r.body)
			}
		}
		after, err := site.db.CheckConsistency(context.Background())
		if err != nil || after.Posts != before.Posts || after.Comments != before.Comments {
			t.Fatalf("counts %+v → %+v, %v", before, after, err)
		}
		for i, id := range []int64{1, 2, 3} {
			if u, err := site.db.FindUserByID(context.Background(), id); err != nil || !u.LastSeenAt.Equal(lastSeen[i]) {
				t.Fatalf("user %d touched by a point read: %v → %v, %v", id, lastSeen[i], u.LastSeenAt, err)
			}
		}
	})
	t.Run("Ceiling", func(t *testing.T) {
		r := b.postRaw("/benchmarking/ceiling", nil)
		wantStatus(t, r, 200)
		wantBody(t, r, "ok")
	})
	t.Run("UnknownAction", func(t *testing.T) {
		wantStatus(t, b.postRaw("/benchmarking/drop_tables", nil), 404)
	})
	t.Run("OtherMethods", func(t *testing.T) {
		for _, path := range []string{"/benchmarking/balanced", "/benchmarking/ceiling", "/benchmarking/drop_tables"} {
			r := b.get(path)
			wantStatus(t, r, http.StatusMethodNotAllowed)
			if got := r.header.Get("Allow"); got != "POST" {
				t.Errorf("GET %s: Allow %q, want POST", path, got)
			}
			wantBody(t, r, "take POST")
		}
	})
	if c, err := site.db.CheckConsistency(context.Background()); err != nil || !c.OK() {
		t.Fatalf("inconsistent: %+v, %v", c, err)
	}
}
