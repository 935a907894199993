package http_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/loremnews/loremnews/internal/testenv"
)

// chromiumPath finds Chromium: $LOREM_CHROMIUM when set, else Debian's
// chromium, which scripts/install-test-deps installs. Without it the test
// skips, or fails under LOREM_REQUIRE_ALL=1.
func chromiumPath(t *testing.T) string {
	t.Helper()
	candidates := []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"}
	if p := os.Getenv("LOREM_CHROMIUM"); p != "" {
		candidates = []string{p}
	}
	for _, p := range candidates {
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	testenv.Missing(t, "needs Chromium, not found at %s: run scripts/install-test-deps, or set LOREM_CHROMIUM", strings.Join(candidates, " or "))
	return ""
}

// headless is one test's Chromium, without a window, closed when the test ends.
type headless struct {
	t   *testing.T
	ctx context.Context
}

// browserLifetime bounds a test's whole Chromium, its start included: the
// first action on a chromedp context starts the browser and ties the
// browser's life to that action's context, so the start cannot have a
// deadline shorter than the browser's life. step bounds each later action.
const browserLifetime = 3 * time.Minute

// startBrowser starts Chromium at path with the options every browser test
// shares, plus extra; a browser that does not start within a minute fails
// the test.
func startBrowser(t *testing.T, path string, extra ...chromedp.ExecAllocatorOption) *headless {
	t.Helper()
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		// The machine has no internet: keep Chromium from trying.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
	}, extra...)
	life, cancelLife := context.WithTimeout(context.Background(), browserLifetime)
	alloc, cancelAlloc := chromedp.NewExecAllocator(life, opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc(); cancelLife() })
	// No action: only the start, given a minute before the browser's life
	// is cut short.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start chromium: %v", err)
		}
	case <-time.After(time.Minute):
		cancelLife()
		t.Fatalf("Chromium did not start within a minute: %v", <-started)
	}
	return &headless{t: t, ctx: ctx}
}

// step runs actions within 30 seconds, failing the test with name.
func (b *headless) step(name string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", name, err)
	}
}

// TestBrowserJourney drives a real headless Chromium through the site with
// no JavaScript of ours: sign in as a seeded user, write a post, comment on
// it, delete the comment, sign out. It saves a screenshot of the post page.
func TestBrowserJourney(t *testing.T) { forEachBackend(t, testBrowserJourney) }

func testBrowserJourney(t *testing.T, be backend) {
	chromium := chromiumPath(t) // before the site: skip early when missing
	site := newTestSite(t, be, siteOptions{})
	user := site.ds.Users[0]

	b := startBrowser(t, chromium, chromedp.WindowSize(1100, 1400))
	ctx, step := b.ctx, b.step
	text := func(sel string) string {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		defer scancel()
		s, err := chromedp.Run(sctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	step("open sign-in", chromedp.Navigate(site.srv.URL+"/signin"))

	step("sign in",
		chromedp.SendKeys("#screen-name", user.ScreenName),
		chromedp.SendKeys("#password", "password"),
		chromedp.Click("#auth-form button"),
		chromedp.WaitVisible(`a[href="/posts/new"]`),
	)
	if got := text("header.site nav"); !strings.Contains(got, user.ScreenName) {
		t.Fatalf("after sign-in the header says %q", got)
	}

	title := "A post written in a real browser"
	step("create post",
		chromedp.Click(`a[href="/posts/new"]`),
		chromedp.WaitVisible("#post-title"),
		chromedp.SendKeys("#post-title", title),
		chromedp.SendKeys("#post-description", "First paragraph from Chromium.\n\nSecond paragraph."),
		chromedp.Click("#post-form button"),
		chromedp.WaitVisible("article.post h1"),
	)
	if got := text("article.post h1"); got != title {
		t.Fatalf("post page title %q", got)
	}

	comment := "A comment typed into Chromium"
	step("comment",
		chromedp.SendKeys("#comment-body", comment),
		chromedp.Click("#comment-form button"),
		chromedp.WaitVisible("ol.comment-list li"),
	)
	if got := text("ol.comment-list li .body"); got != comment {
		t.Fatalf("comment shows %q", got)
	}
	if got := text("#comments h2"); got != "1 comment" {
		t.Fatalf("comment count says %q", got)
	}

	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	shot, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("LOREM_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shotPath := filepath.Join(dir, "browser-post-page-"+string(be)+".png")
	if err := os.WriteFile(shotPath, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the post page: %s (%d bytes)", shotPath, len(shot))

	step("delete comment, through its confirmation",
		chromedp.Click("ol.comment-list li a.danger"),
		chromedp.WaitVisible("#confirm-form"),
	)
	if got := text("main h1"); !strings.HasPrefix(got, "Delete this comment on") {
		t.Fatalf("confirmation asks %q", got)
	}
	step("confirm",
		chromedp.Click("#confirm-form button"),
		chromedp.WaitVisible("p.flash"),
	)
	if got := text("p.flash"); got != "The comment was deleted." {
		t.Fatalf("flash says %q", got)
	}
	if got := text("#comments h2"); got != "0 comments" {
		t.Fatalf("after delete the count says %q", got)
	}

	step("sign out",
		chromedp.Click("header.site nav form button"),
		chromedp.WaitVisible(`header.site a[href="/signin"]`),
	)
	if got := text("p.flash"); got != "You are signed out." {
		t.Fatalf("flash says %q", got)
	}
	c, err := site.db.CheckConsistency(context.Background())
	if err != nil || !c.OK() {
		t.Fatalf("inconsistent: %+v, %v", c, err)
	}

}
