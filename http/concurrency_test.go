package http_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/bench/setups"
	lnhttp "github.com/loremnews/loremnews/http"
	"github.com/loremnews/loremnews/internal/testenv"
	"github.com/loremnews/loremnews/postgres"
	"github.com/loremnews/loremnews/sqlite"
)

// TestConcurrentBenchmarkLoad is the site's promise in one test: many
// clients at once on the write-heavy mixes, and not one request fails, and
// afterwards every counter cache equals the true count, the file passes
// integrity_check, and no row points at a missing parent. It runs on every
// profile that claims to be safe under concurrency.
func TestConcurrentBenchmarkLoad(t *testing.T) { forEachBackend(t, testConcurrentBenchmarkLoad) }

func testConcurrentBenchmarkLoad(t *testing.T, be backend) {
	const (
		clients  = 64
		requests = 5000 // per mix
	)
	profiles := []string{setups.Split, setups.Fair, setups.Batch}
	if be == postgresBackend {
		profiles = []string{"postgres"}
	}
	for _, profile := range profiles {
		t.Run(profile, func(t *testing.T) {
			// A generous writer timeout: the test is about no request
			// failing, not about how fast they are served.
			site := newTestSite(t, be, siteOptions{profile: profile, benchmarking: true, users: 100, posts: 300, writerTimeout: time.Minute})
			for _, mix := range []string{"balanced", "write_heavy"} {
				t.Run(mix, func(t *testing.T) {
					statuses := hammer(t, site.srv.URL+"/benchmarking/"+mix, clients, requests)
					total := 0
					for code, n := range statuses {
						total += n
						if code < 200 || code > 299 {
							t.Errorf("%d responses with status %d", n, code)
						}
					}
					if total != requests {
						t.Errorf("%d responses, want %d", total, requests)
					}
					t.Logf("%s/%s: %v", profile, mix, statuses)
				})
			}
			c, err := site.db.CheckConsistency(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !c.OK() {
				t.Fatalf("inconsistent after load: %+v", c)
			}
			t.Logf("after load: %+v", c)
		})
	}
}

// hammer sends n POSTs to url from the given number of concurrent clients,
// following redirects as hey and oha do, and counts final statuses.
// Transport errors fail the test. Each request may take two minutes: more
// than any writer timeout here, so a slow machine gets answers, not
// client timeouts.
func hammer(t *testing.T, url string, clients, n int) map[int]int {
	t.Helper()
	client := &http.Client{
		Timeout:   2 * time.Minute,
		Transport: &http.Transport{MaxIdleConnsPerHost: clients},
	}
	defer client.CloseIdleConnections()
	var (
		next     atomic.Int64
		mu       sync.Mutex
		statuses = map[int]int{}
		wg       sync.WaitGroup
	)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				resp, err := client.Post(url, "", nil)
				if err != nil {
					t.Errorf("request: %v", err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return statuses
}

// TestNaiveProfileFailsUnderConcurrentWrites documents why the other
// profiles exist: with deferred transactions, a transaction that read and
// then tries to write fails with SQLITE_BUSY as soon as another writer has
// committed in between. The failure must be real and visible (a 503), not
// silent data loss: the database stays consistent.
func TestNaiveProfileFailsUnderConcurrentWrites(t *testing.T) {
	site := newTestSite(t, sqliteBackend, siteOptions{profile: setups.Naive, benchmarking: true, users: 100, posts: 300})
	statuses := hammer(t, site.srv.URL+"/benchmarking/write_heavy", 64, 3000)
	failed := 0
	for code, n := range statuses {
		if code != 200 {
			failed += n
			if code != http.StatusServiceUnavailable {
				t.Errorf("%d responses with status %d, want only 200 or 503", n, code)
			}
		}
	}
	t.Logf("naive/write_heavy: %v", statuses)
	if failed == 0 {
		t.Errorf("naive profile had no failures under 64 concurrent writers: %v; is it still deferred?", statuses)
	}
	c, err := site.db.CheckConsistency(context.Background())
	if err != nil || !c.OK() {
		t.Fatalf("inconsistent: %+v, %v", c, err)
	}
}

// TestDuplicatesUnderConcurrency: many browsers submit the same title (and
// sign up with the same screen name) at the same moment. Exactly one wins;
// every other gets the form back with 422, none a 500.
func TestDuplicatesUnderConcurrency(t *testing.T) { forEachBackend(t, testDuplicatesUnderConcurrency) }

func testDuplicatesUnderConcurrency(t *testing.T, be backend) {
	// Every sign-up comes from 127.0.0.1: lift the per-address limit.
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{SignUpsPerIP: 100}})
	const n = 24
	browsers := make([]*browser, n)
	for i := range browsers {
		browsers[i] = site.browser()
		browsers[i].signIn(i % len(site.ds.Users))
	}
	for name, submit := range map[string]func(b *browser) *response{
		"title": func(b *browser) *response {
			return b.post("/posts", url.Values{"title": {"Everyone wants this title"}})
		},
		"screen name": func(b *browser) *response {
			return site.browser().post("/signup", url.Values{"screen_name": {"popular_name"}, "password": {"long enough"}})
		},
	} {
		t.Run(name, func(t *testing.T) {
			statuses := make(chan int, n)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for _, b := range browsers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					statuses <- submit(b).status
				}()
			}
			close(start)
			wg.Wait()
			close(statuses)
			counts := map[int]int{}
			for s := range statuses {
				counts[s]++
			}
			if counts[http.StatusSeeOther] != 1 || counts[http.StatusUnprocessableEntity] != n-1 {
				t.Fatalf("statuses %v: want exactly one 303 and %d × 422", counts, n-1)
			}
		})
	}
}

// TestOverload: 256 clients at once on the write-heavy mixes: every request
// is served, and memory stays bounded. Then 256 clients that give up after
// 2 ms: their queued writers must leave the queue (no request waits
// forever), and the site must be fine afterwards.
//
// This is about correctness, not speed: the writer timeout is a generous
// minute, so a slow machine (a loaded CI runner, -race) serves everything,
// only later; how fast is for the benchmarks.
func TestOverload(t *testing.T) { forEachBackend(t, testOverload) }

func testOverload(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{benchmarking: true, users: 100, posts: 300, writerTimeout: time.Minute})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, mix := range []string{"write_heavy", "balanced"} {
		statuses := hammer(t, site.srv.URL+"/benchmarking/"+mix, 256, 3000)
		if statuses[200] != 3000 {
			t.Errorf("%s at c=256: %v", mix, statuses)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<20 {
		t.Errorf("live heap grew by %d MB under overload", grown>>20)
	}

	// Impatient clients.
	client := &http.Client{Timeout: 2 * time.Millisecond, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var wg sync.WaitGroup
	deadline := time.Now().Add(time.Second)
	for range 256 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if resp, err := client.Post(site.srv.URL+"/benchmarking/write_heavy", "", nil); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	client.CloseIdleConnections()
	// Once the clients have left, their writers leave the queue: well
	// before the minute's writer timeout would have removed them.
	testenv.WaitFor(t, 30*time.Second, "no writer waiting or working after the impatient clients left", func() bool { return writersWaiting(site.db) == 0 })
	if statuses := hammer(t, site.srv.URL+"/benchmarking/write_heavy", 8, 200); statuses[200] != 200 {
		t.Fatalf("after the overload: %v", statuses)
	}
	c, err := site.db.CheckConsistency(context.Background())
	if err != nil || !c.OK() {
		t.Fatalf("inconsistent: %+v, %v", c, err)
	}
}

// TestMaxInFlight: with one request worked on at a time, 32 concurrent
// clients are all served, in turn.
func TestMaxInFlight(t *testing.T) { forEachBackend(t, testMaxInFlight) }

func testMaxInFlight(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{benchmarking: true, handler: lnhttp.Config{MaxInFlight: 1}})
	if statuses := hammer(t, site.srv.URL+"/benchmarking/balanced", 32, 300); statuses[200] != 300 {
		t.Fatalf("statuses %v", statuses)
	}
}

// writersWaiting is how many writes wait in the writer queue (SQLite) or,
// where writes do not queue (PostgreSQL), how many connections are in use now.
func writersWaiting(db loremnews.Database) int {
	switch db := db.(type) {
	case *sqlite.DB:
		return db.Stats().Writer.Depth
	case *postgres.DB:
		return int(db.Stats().AcquiredConn)
	}
	panic(fmt.Sprintf("writersWaiting: a %T", db))
}
