package http_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/loremnews/loremnews"
)

// TestBrowserPhone uses the site as a new user would on a phone (390 × 844,
// mobile emulation) in a real headless Chromium, without any JavaScript of
// ours: a sign-up with several errors at once, then with a 40-character
// name; a post with a 120-character unbroken title; a failed comment;
// paging back through the front page and through a user's comments; and
// deleting the post and the account through their confirmation pages. On
// every page the document must be no wider than the screen, and each page
// is saved as a screenshot in $LOREM_TEST_ARTIFACTS.
func TestBrowserPhone(t *testing.T) { forEachBackend(t, testBrowserPhone) }

func testBrowserPhone(t *testing.T, be backend) {
	chromium := chromiumPath(t) // before the site: skip early when missing
	site := newTestSite(t, be, siteOptions{users: 10, posts: 60})
	ctx := context.Background()
	// A seeded user with more comments than a user page shows at once.
	talker := site.ds.Users[1]
	for i := range 101 {
		if _, err := site.db.CreateComment(ctx, site.ds.Posts[i%len(site.ds.Posts)].ID, talker.ID,
			loremnews.CommentInput{Body: fmt.Sprintf("Talkative comment %03d", i)}); err != nil {
			t.Fatal(err)
		}
	}

	b := startBrowser(t, chromium)
	bctx, step := b.ctx, b.step
	step("emulate a phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	eval := func(expr string) string {
		t.Helper()
		sctx, scancel := context.WithTimeout(bctx, 30*time.Second)
		defer scancel()
		v, err := chromedp.Run(sctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		return v
	}
	dir := os.Getenv("LOREM_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// fits checks that the page needs no sideways scrolling and that the
	// header's last item sits on the brand's line, inside the screen; then
	// saves a screenshot of what the screen shows.
	shots := 0
	fits := func(name string) {
		t.Helper()
		if w, _ := strconv.Atoi(eval(`String(document.documentElement.scrollWidth)`)); w == 0 || w > 390 {
			t.Errorf("%s (%s): the page is %d px wide on a 390 px screen", name, eval(`location.pathname + location.search`), w)
		}
		if got := eval(`(() => {
			const brand = document.querySelector('header.site .brand').getBoundingClientRect();
			const last = document.querySelector('header.site nav').lastElementChild.getBoundingClientRect();
			return (last.right <= 390 && Math.abs(last.top + last.height / 2 - (brand.top + brand.height / 2)) < 8) ? 'ok' : 'header: last item at ' + last.left + '–' + last.right + ', top ' + last.top + '; brand top ' + brand.top;
		})()`); got != "ok" {
			t.Errorf("%s: %s", name, got)
		}
		sctx, scancel := context.WithTimeout(bctx, 30*time.Second)
		defer scancel()
		shot, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		shots++
		path := filepath.Join(dir, fmt.Sprintf("phone-%s-%02d-%s.png", be, shots, name))
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		return eval(`document.querySelector(` + jsString(sel) + `).textContent.trim()`)
	}

	step("open sign-up", chromedp.Navigate(site.srv.URL+"/signup"), chromedp.WaitVisible("#screen-name"))
	if got := text("#screen-name-hint"); !strings.Contains(got, "2 to 40 characters") {
		t.Fatalf("sign-up rules say %q", got)
	}
	fits("signup")

	// The browser checks the rules it was given before sending anything.
	step("sign up with two mistakes",
		chromedp.SendKeys("#screen-name", "no spaces!"),
		chromedp.SendKeys("#password", "short"),
		chromedp.Click("#auth-form button"),
	)
	if got := eval(`[document.querySelector('#screen-name').validity.patternMismatch, document.querySelector('#password').validity.tooShort, location.pathname].join()`); got != "true,true,/signup" {
		t.Fatalf("browser validation: %s", got)
	}
	// A browser that does not check (or an old one) sends the form: the
	// server reports both problems at once and focuses the first.
	step("send it unchecked",
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#auth-form').noValidate = true`),
		chromedp.Click("#auth-form button"),
		chromedp.WaitVisible("#password-error"),
	)
	if got := eval(`[document.activeElement.id, document.querySelector('#screen-name').getAttribute('aria-invalid'), document.querySelector('#password').getAttribute('aria-invalid'), document.querySelector('#password').getAttribute('aria-describedby')].join()`); got != "screen-name,true,true,password-hint password-error" {
		t.Fatalf("after a failed sign-up: focus and marks %q", got)
	}
	if got := text("#screen-name-error") + " | " + text("#password-error"); !strings.Contains(got, "may only contain") || !strings.Contains(got, "too short") {
		t.Fatalf("errors: %q", got)
	}
	fits("signup-errors")

	name := "Forty_characters_long_screen_name_xxxxxx"
	if len(name) != loremnews.MaxScreenNameLen {
		t.Fatalf("name is %d characters", len(name))
	}
	step("sign up",
		chromedp.Clear("#screen-name"), chromedp.SendKeys("#screen-name", name),
		chromedp.SendKeys("#password", "a long enough password"),
		chromedp.Click("#auth-form button"),
		chromedp.WaitVisible(`a[href="/posts/new"]`),
	)
	fits("front-page-signed-in")

	title := strings.Repeat("Unbroken", 15)
	step("write a post with a 120-character unbroken title",
		chromedp.Click(`a[href="/posts/new"]`),
		chromedp.WaitVisible("#post-title"),
		chromedp.SendKeys("#post-title", title),
		chromedp.SendKeys("#post-description", "Checking that a phone can read this.\n\nSecond paragraph."),
		chromedp.Click("#post-form button"),
		chromedp.WaitVisible("article.post h1"),
	)
	postPath := eval(`location.pathname`)
	fits("post")

	step("send a comment the server refuses",
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#comment-form').noValidate = true`),
		chromedp.SendKeys("#comment-body", "tiny"),
		chromedp.Click("#comment-form button"),
		chromedp.WaitVisible("#comment-body-error"),
	)
	if got := eval(`[location.pathname, document.activeElement.id].join()`); got != postPath+"/comments,comment-body" {
		t.Fatalf("after a failed comment: hash and focus %q", got)
	}
	if got := eval(`(() => { const r = document.querySelector('#comment-body-error').getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight ? 'in view' : 'out of view at ' + r.top })()`); got != "in view" {
		t.Fatalf("the comment error is %s", got)
	}
	fits("comment-error")

	step("front page", chromedp.Navigate(site.srv.URL+"/"), chromedp.WaitVisible("ol.posts"))
	if got := text("ol.posts li a.title"); got != title {
		t.Fatalf("front page starts with %q", got)
	}
	fits("front-page")
	lastOnPageOne := eval(`[...document.querySelectorAll('ol.posts li')].pop().id`)
	step("More", chromedp.Click(`p.more a`), chromedp.WaitVisible("ol.posts"))
	if got := eval(`location.search`); got != "?before="+strings.TrimPrefix(lastOnPageOne, "post-") {
		t.Fatalf("More went to %q after %s", got, lastOnPageOne)
	}
	if got := eval(`String(document.querySelectorAll('ol.posts li').length)`); got != "11" {
		t.Fatalf("page two lists %s posts, want the 11 older ones", got)
	}
	fits("front-page-2")

	step("a talkative user's page", chromedp.Navigate(fmt.Sprintf("%s/users/%d", site.srv.URL, talker.ID)), chromedp.WaitVisible("#comments"))
	if got := text("p.totals"); !strings.HasSuffix(got, "comments") {
		t.Fatalf("totals say %q", got)
	}
	fits("user")
	step("More comments", chromedp.Click(`#comments p.more a`), chromedp.WaitVisible("ol.comment-list"))
	if got := eval(`document.querySelectorAll('ol.comment-list li').length > 0 && location.pathname.endsWith('/comments') ? 'ok' : location.href`); got != "ok" {
		t.Fatalf("comments page two: %s", got)
	}
	fits("user-comments-2")

	// Two more browsers of the account, from the longest addresses there
	// are: each must stay on one line.
	me, err := site.db.FindUserByScreenName(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for i, addr := range []string{"2001:0db8:85a3:0000:0000:8a2e:0370:7334", "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255"} {
		if err := site.db.CreateSession(ctx, &loremnews.Session{UserID: me.ID, TokenDigest: []byte(fmt.Sprint("phone-", i)), IPAddress: addr,
			UserAgent: "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"}); err != nil {
			t.Fatal(err)
		}
	}
	step("own page", chromedp.Click("header.site nav a.me"), chromedp.WaitVisible("#sessions"))
	if got := text("table.sessions td"); !strings.Contains(got, " on ") {
		t.Fatalf("the session's browser is %q", got)
	}
	// A range over a cell's text has one rectangle per line it takes.
	if got := eval(`[...document.querySelectorAll('table.sessions td.ip')].map(td => {
		const r = document.createRange(); r.selectNodeContents(td);
		return r.getClientRects().length === 1 ? '' : td.textContent + ' takes ' + r.getClientRects().length + ' lines';
	}).filter(Boolean).join('; ') || (document.querySelectorAll('table.sessions td.ip').length === 3 ? 'ok' : 'not 3 addresses')`); got != "ok" {
		t.Errorf("the sessions' addresses at 390 px: %s", got)
	}
	fits("own-page")

	step("delete the post", chromedp.Navigate(site.srv.URL+postPath), chromedp.WaitVisible("article.post"),
		chromedp.Click("article.post .meta a.danger"), chromedp.WaitVisible("#confirm-form"))
	if got := text("main h1"); got != "Delete this post?" {
		t.Fatalf("confirmation asks %q", got)
	}
	fits("delete-post")
	step("confirm", chromedp.Click("#confirm-form button"), chromedp.WaitVisible("p.flash"))
	if got := text("p.flash"); got != "The post was deleted." {
		t.Fatalf("flash says %q", got)
	}

	step("delete the account", chromedp.Click("header.site nav a.me"), chromedp.WaitVisible(".danger-zone"),
		chromedp.Click(".danger-zone a.danger"), chromedp.WaitVisible("#current-password"))
	if got := text("main h1"); got != "Delete your account with its 0 posts and 0 comments?" {
		t.Fatalf("confirmation asks %q", got)
	}
	fits("delete-account")
	step("confirm with the password",
		chromedp.SendKeys("#current-password", "a long enough password"),
		chromedp.Click("#confirm-form button"),
		chromedp.WaitVisible("p.flash"),
	)
	if got := text("p.flash"); got != "Your account was deleted." {
		t.Fatalf("flash says %q", got)
	}
	if _, err := site.db.FindUserByScreenName(ctx, name); loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
		t.Fatalf("the account is still there: %v", err)
	}
	t.Logf("%d phone screenshots in %s", shots, dir)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
