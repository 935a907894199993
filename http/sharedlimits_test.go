package http_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	lnhttp "github.com/loremnews/loremnews/http"
	"github.com/loremnews/loremnews/seed"
)

// The account-wide limits are kept in the database: every process serving
// it shares them, and a restart does not reset them.

// TestSignInLockoutSharedByProcesses: two processes on one database (each
// with its own store and handler, site.sibling) share an account's limit
// of failed sign-ins: guesses through the first count against the second,
// and the other way round.
func TestSignInLockoutSharedByProcesses(t *testing.T) {
	forEachBackend(t, testSignInLockoutSharedByProcesses)
}

func testSignInLockoutSharedByProcesses(t *testing.T, be backend) {
	site := proxiedSite(t, be, lnhttp.Config{SignInFailuresPerAccount: 4})
	other := site.sibling()
	victim := site.ds.Users[3].ScreenName
	// guess fails a sign-in to the victim through s, from a browser and
	// an address never seen: only the account-wide limit counts it.
	addr := 0
	stranger := func(s *testSite) *browser {
		addr++
		b := s.browser()
		b.forwardedFor = fmt.Sprintf("203.0.113.%d", addr)
		return b
	}
	guess := func(s *testSite) {
		t.Helper()
		wantStatus(t, stranger(s).post("/signin", url.Values{"screen_name": {victim}, "password": {"a wrong guess"}}), http.StatusUnprocessableEntity)
	}
	for range 3 {
		guess(site)
	}
	// 3 of 4: the right password still signs in through the other (and
	// gives its attempt back).
	wantRedirect(t, stranger(other).post("/signin", url.Values{"screen_name": {victim}, "password": {seed.Password}}), "/")
	guess(other) // the 4th
	for _, s := range []*testSite{site, other} {
		r := stranger(s).post("/signin", url.Values{"screen_name": {victim}, "password": {seed.Password}})
		wantStatus(t, r, http.StatusTooManyRequests)
		wantBody(t, r, "Too many failed sign-ins to this account from browsers it has not signed in with.")
	}
	// Another account is not locked.
	wantRedirect(t, stranger(other).post("/signin", url.Values{"screen_name": {site.ds.Users[4].ScreenName}, "password": {seed.Password}}), "/")
}

// TestSignInLockoutSurvivesRestart: a locked account stays locked when
// the process serving it ends and another starts on the same database
// (a restart, or a deploy), for the rest of its window.
func TestSignInLockoutSurvivesRestart(t *testing.T) {
	forEachBackend(t, testSignInLockoutSurvivesRestart)
}

func testSignInLockoutSurvivesRestart(t *testing.T, be backend) {
	site := proxiedSite(t, be, lnhttp.Config{SignInFailuresPerAccount: 3})
	victim := site.ds.Users[2].ScreenName
	lockAccount(t, site, victim, 3)
	site.srv.Close()
	if err := site.db.Close(); err != nil {
		t.Fatal(err)
	}
	restarted := site.sibling()
	b := restarted.browser()
	b.forwardedFor = "192.0.2.77"
	r := b.post("/signin", url.Values{"screen_name": {victim}, "password": {seed.Password}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantBody(t, r, "Too many failed sign-ins to this account from browsers it has not signed in with. Try again in 15 minutes")
	if wait, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || wait < 1 || wait > 15*60 {
		t.Fatalf("Retry-After %q, want the seconds left of the 15-minute window", r.header.Get("Retry-After"))
	}
}

// TestContentLimitsSharedByProcesses: one account's posts count against
// its hourly limit whichever process they were written through.
func TestContentLimitsSharedByProcesses(t *testing.T) {
	forEachBackend(t, testContentLimitsSharedByProcesses)
}

func testContentLimitsSharedByProcesses(t *testing.T, be backend) {
	// One secret key, as every process of one site has: a session and its
	// forms are good on either.
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{PostsPerAccount: 4, SecretKey: []byte("a secret key of at least 32 bytes, for both")}})
	other := site.sibling()
	b := site.browser()
	b.signIn(0)
	for i := range 4 {
		b.site = []*testSite{site, other}[i%2] // the cookie jar holds the session for both
		wantRedirect(t, b.post("/posts", url.Values{"title": {fmt.Sprint("Post through either ", i)}}), "/posts/")
	}
	for _, s := range []*testSite{site, other} {
		b.site = s
		r := b.post("/posts", url.Values{"title": {"One post too many"}})
		wantStatus(t, r, http.StatusTooManyRequests)
		wantBody(t, r, "You have written the most posts one account may in an hour (4).")
	}
}

// failingLimits is a database whose rate limits cannot be counted: a
// disk gone, a database that does not answer.
type failingLimits struct{ loremnews.Database }

func (failingLimits) ReserveAttempt(context.Context, []byte, int, time.Duration, time.Time) (bool, time.Duration, error) {
	return false, 0, errors.New("the disk is on fire")
}

// TestLimitFailureFailsClosed: when the database cannot count an
// account's attempts, a sign-in or a post is refused with 503 ("try
// again"), neither let through unlimited nor answered 500; limits kept in
// memory still work, and nothing is written.
func TestLimitFailureFailsClosed(t *testing.T) { forEachBackend(t, testLimitFailureFailsClosed) }

func testLimitFailureFailsClosed(t *testing.T, be backend) {
	opt := siteOptions{handler: lnhttp.Config{SecretKey: []byte("a secret key of at least 32 bytes, for both")}}
	site := newTestSite(t, be, opt)
	broken := &testSite{t: t, db: site.db, ds: site.ds, srv: serveStore(t, failingLimits{site.db}, opt)}
	b := broken.browser()
	r := b.post("/signin", url.Values{"screen_name": {site.ds.Users[0].ScreenName}, "password": {seed.Password}})
	wantStatus(t, r, http.StatusServiceUnavailable)
	wantBody(t, r, "The site cannot check its limits right now. Please try again in a moment.")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	if b.cookie("lorem_session") != "" {
		t.Fatal("signed in though its limits could not be checked")
	}
	// Signed in through a working process, the same browser cannot post
	// through the broken one.
	b.site = site
	b.signIn(0)
	b.site = broken
	before, err := site.db.UserPosts(context.Background(), site.ds.Users[0].ID, 1<<62, 1000)
	if err != nil {
		t.Fatal(err)
	}
	r = b.post("/posts", url.Values{"title": {"Posted without a limit"}})
	wantStatus(t, r, http.StatusServiceUnavailable)
	after, err := site.db.UserPosts(context.Background(), site.ds.Users[0].ID, 1<<62, 1000)
	if err != nil || len(after) != len(before) {
		t.Fatalf("posts %d before, %d after (%v): the post was written", len(before), len(after), err)
	}
}
