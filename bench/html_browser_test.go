package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/loremnews/loremnews/internal/testenv"
)

// TestHTMLTablesFit1280: the HTML report of make bench's eight setups,
// with the widest cells a failing setup writes ("22461 (503×22461)") and
// the server's cost, shows every table whole in a 1280 px window: no
// table scrolls and the page has no horizontal scroll bar.
func TestHTMLTablesFit1280(t *testing.T) {
	chromium := os.Getenv("LOREM_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(chromium); err != nil {
		testenv.Missing(t, "needs Chromium, not found at %s: run scripts/install-test-deps, or set LOREM_CHROMIUM", chromium)
	}
	r := eightSetups()
	naive := *r.Setups[0]
	naive.Runs = nil
	for _, failed := range []int64{22461, 20004, 11222} {
		run := withCost(r.Setups[1].Runs[0], 1287, 104.4)
		run.Failures, run.Requests = failed, run.Successes+failed
		run.StatusCodes = map[string]int64{"200": run.Successes, "503": failed}
		naive.Runs = append(naive.Runs, run)
	}
	r.Setups[0] = &naive
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	life, cancelLife := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelLife()
	alloc, cancelAlloc := chromedp.NewExecAllocator(life, chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("disable-background-networking", true), chromedp.Flag("no-first-run", true))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate("file://"+path)); err != nil {
		t.Fatalf("open the report in Chromium: %v", err)
	}
	// The title of each table whose box scrolls, and the page's own width.
	overflow, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.scroll')]
		.filter(d => d.scrollWidth > d.clientWidth + 1)
		.map(d => d.previousElementSibling.closest('h2, p').textContent + ': ' + d.scrollWidth + ' px in ' + d.clientWidth)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range overflow {
		t.Errorf("a table scrolls at 1280 px: %s", o)
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if err != nil {
		t.Fatal(err)
	}
	if page > 1280 {
		t.Errorf("the page is %d px wide in a 1280 px window", page)
	}
}
