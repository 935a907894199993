package http_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/loremnews/loremnews"
	lnhttp "github.com/loremnews/loremnews/http"
	"github.com/loremnews/loremnews/seed"
	"golang.org/x/crypto/bcrypt"
)

// signInForm is a sign-in form with b's CSRF token, to send as it is.
func signInForm(b *browser, name, password string) url.Values {
	return url.Values{"screen_name": {name}, "password": {password}, "csrf_token": {b.csrf()}}
}

// TestSignInBurstIsCounted: 30 wrong passwords sent at once to one account
// from one address: only 5 are judged, the rest get 429 with Retry-After.
func TestSignInBurstIsCounted(t *testing.T) { forEachBackend(t, testSignInBurstIsCounted) }

func testSignInBurstIsCounted(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	// bcrypt's default cost, as on a real site: each check takes long
	// enough for the whole burst to arrive while the first is judged.
	digest, err := bcrypt.GenerateFromPassword([]byte(seed.Password), bcrypt.DefaultCost)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := site.db.CreateUser(context.Background(), "burst_target", string(digest)); err != nil {
		t.Fatal(err)
	}
	b := site.browser()
	form := signInForm(b, "burst_target", "wrong-password")
	const n = 30
	results := make(chan *response, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results <- b.postRaw("/signin", form)
		}()
	}
	close(start)
	wg.Wait()
	close(results)
	counts := map[int]int{}
	for r := range results {
		counts[r.status]++
		if r.status == http.StatusTooManyRequests && r.header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	if counts[http.StatusUnprocessableEntity] != 5 || counts[http.StatusTooManyRequests] != n-5 {
		t.Fatalf("statuses %v: want 5 × 422 (judged) and %d × 429", counts, n-5)
	}
}

// TestOwnerGetsInWhileAnotherAddressHammers: behind a trusted proxy, one
// address guessing an account's password is stopped after 5, and the owner
// signing in from another address gets in. When many addresses guess, the
// account refuses new browsers, but not one that has signed in before.
func TestOwnerGetsInWhileAnotherAddressHammers(t *testing.T) {
	forEachBackend(t, testOwnerGetsInWhileAnotherAddressHammers)
}

func testOwnerGetsInWhileAnotherAddressHammers(t *testing.T, be backend) {
	proxies, _ := lnhttp.ParseTrustedProxies("127.0.0.0/8,::1")
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{TrustedProxies: proxies, SignInFailuresPerAccount: 8}})
	victim := site.ds.Users[0].ScreenName

	// The owner's laptop signed in yesterday: it holds a device cookie.
	laptop := site.browser()
	laptop.forwardedFor = "198.51.100.20"
	wantRedirect(t, laptop.post("/signin", url.Values{"screen_name": {victim}, "password": {seed.Password}}), "/")
	wantRedirect(t, laptop.post("/signout", nil), "/")

	attacker := site.browser()
	attacker.forwardedFor = "203.0.113.5"
	for i := range 8 {
		r := attacker.post("/signin", url.Values{"screen_name": {victim}, "password": {fmt.Sprint("guess-", i)}})
		if want := http.StatusUnprocessableEntity; i >= 5 {
			wantStatus(t, r, http.StatusTooManyRequests)
		} else {
			wantStatus(t, r, want)
		}
	}
	// The right password from the attacker's address is refused too…
	wantStatus(t, attacker.post("/signin", url.Values{"screen_name": {victim}, "password": {seed.Password}}), http.StatusTooManyRequests)
	// …but the owner, on a new browser at another address, gets in.
	phone := site.browser()
	phone.forwardedFor = "198.51.100.7"
	wantRedirect(t, phone.post("/signin", url.Values{"screen_name": {victim}, "password": {seed.Password}}), "/")

	// A second attacking address takes the account past its limit for
	// browsers that never signed in (8: 5 + 3 more judged).
	second := site.browser()
	second.forwardedFor = "2001:db8:1:2::99"
	for i := range 5 {
		second.post("/signin", url.Values{"screen_name": {victim}, "password": {fmt.Sprint("guess2-", i)}})
	}
	stranger := site.browser()
	stranger.forwardedFor = "192.0.2.77"
	r := stranger.post("/signin", url.Values{"screen_name": {victim}, "password": {seed.Password}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantBody(t, r, "from a browser you have signed in with before")
	// The laptop's device cookie lets the owner in all the same.
	wantRedirect(t, laptop.post("/signin", url.Values{"screen_name": {victim}, "password": {seed.Password}}), "/")
	// Other accounts are untouched.
	wantRedirect(t, stranger.post("/signin", url.Values{"screen_name": {site.ds.Users[1].ScreenName}, "password": {seed.Password}}), "/")
}

// TestRefusedSignInsDoNotCloseTheAccount: thirty wrong sign-ins to one
// account from one address: 5 are judged, the other 25 refused by the
// limit for that account from that address — and the refused ones do not
// count toward the account's cap on password checks from browsers it does
// not know (30), so the owner, on a new browser at another address, gets in.
func TestRefusedSignInsDoNotCloseTheAccount(t *testing.T) {
	forEachBackend(t, testRefusedSignInsDoNotCloseTheAccount)
}

func testRefusedSignInsDoNotCloseTheAccount(t *testing.T, be backend) {
	proxies, _ := lnhttp.ParseTrustedProxies("127.0.0.0/8,::1")
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{TrustedProxies: proxies}})
	victim := site.ds.Users[0].ScreenName
	attacker := site.browser()
	attacker.forwardedFor = "203.0.113.5"
	for i := range 30 {
		r := attacker.post("/signin", url.Values{"screen_name": {victim}, "password": {fmt.Sprint("guess-", i)}})
		if i < 5 {
			wantStatus(t, r, http.StatusUnprocessableEntity)
		} else {
			wantStatus(t, r, http.StatusTooManyRequests)
		}
	}
	phone := site.browser()
	phone.forwardedFor = "198.51.100.7"
	wantRedirect(t, phone.post("/signin", url.Values{"screen_name": {victim}, "password": {seed.Password}}), "/")
}

// TestOwnersBrowserIsSparedItsAddressesGuesses: an attacker behind the
// owner's own address (an office's NAT) who guesses the owner's password
// 5 times does not lock out the owner's browser that holds the account's
// device cookie: its own 5 count instead of the account's from that address.
func TestOwnersBrowserIsSparedItsAddressesGuesses(t *testing.T) {
	forEachBackend(t, testOwnersBrowserIsSparedItsAddressesGuesses)
}

func testOwnersBrowserIsSparedItsAddressesGuesses(t *testing.T, be backend) {
	proxies, _ := lnhttp.ParseTrustedProxies("127.0.0.0/8,::1")
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{TrustedProxies: proxies}})
	victim := site.ds.Users[0].ScreenName
	laptop := site.browser()
	laptop.forwardedFor = "198.51.100.20"
	wantRedirect(t, laptop.post("/signin", url.Values{"screen_name": {victim}, "password": {seed.Password}}), "/")
	wantRedirect(t, laptop.post("/signout", nil), "/")
	colleague := site.browser()
	colleague.forwardedFor = "198.51.100.20"
	for i := range 6 {
		r := colleague.post("/signin", url.Values{"screen_name": {victim}, "password": {fmt.Sprint("guess-", i)}})
		if i < 5 {
			wantStatus(t, r, http.StatusUnprocessableEntity)
		} else {
			wantStatus(t, r, http.StatusTooManyRequests)
		}
	}
	wantRedirect(t, laptop.post("/signin", url.Values{"screen_name": {victim}, "password": {seed.Password}}), "/")
}

// TestSignInLimitPerAddress: one address failing on many accounts is
// stopped too, even on the right password for another account.
func TestSignInLimitPerAddress(t *testing.T) { forEachBackend(t, testSignInLimitPerAddress) }

func testSignInLimitPerAddress(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{SignInFailuresPerIP: 6}})
	b := site.browser()
	for i := range 6 {
		r := b.post("/signin", url.Values{"screen_name": {site.ds.Users[i%3].ScreenName}, "password": {"wrong-password"}})
		wantStatus(t, r, http.StatusUnprocessableEntity)
	}
	r := b.post("/signin", url.Values{"screen_name": {site.ds.Users[5].ScreenName}, "password": {seed.Password}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantBody(t, r, "Too many failed sign-ins")
}

// TestIPv6ClientsGroupedBy64: the addresses of one IPv6 /64 share their
// limits; the next /64 does not.
func TestIPv6ClientsGroupedBy64(t *testing.T) { forEachBackend(t, testIPv6ClientsGroupedBy64) }

func testIPv6ClientsGroupedBy64(t *testing.T, be backend) {
	proxies, _ := lnhttp.ParseTrustedProxies("127.0.0.1,::1")
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{TrustedProxies: proxies, SignInFailuresPerIP: 3}})
	for i := range 3 {
		b := site.browser()
		b.forwardedFor = fmt.Sprintf("2001:db8:1:2::%x", i+1)
		wantStatus(t, b.post("/signin", url.Values{"screen_name": {site.ds.Users[i].ScreenName}, "password": {"wrong-password"}}), http.StatusUnprocessableEntity)
	}
	sameNet := site.browser()
	sameNet.forwardedFor = "2001:db8:1:2:ffff:ffff:ffff:fffe"
	wantStatus(t, sameNet.post("/signin", url.Values{"screen_name": {site.ds.Users[5].ScreenName}, "password": {seed.Password}}), http.StatusTooManyRequests)
	nextNet := site.browser()
	nextNet.forwardedFor = "2001:db8:1:3::1"
	wantRedirect(t, nextNet.post("/signin", url.Values{"screen_name": {site.ds.Users[5].ScreenName}, "password": {seed.Password}}), "/")
}

// TestForwardedForIgnoredFromUntrustedPeers: without --trusted-proxies, a
// client cannot dodge the limits by sending X-Forwarded-For.
func TestForwardedForIgnoredFromUntrustedPeers(t *testing.T) {
	forEachBackend(t, testForwardedForIgnoredFromUntrustedPeers)
}

func testForwardedForIgnoredFromUntrustedPeers(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	victim := site.ds.Users[0].ScreenName
	for i := range 5 {
		b := site.browser()
		b.forwardedFor = fmt.Sprintf("203.0.113.%d", i+1)
		wantStatus(t, b.post("/signin", url.Values{"screen_name": {victim}, "password": {"wrong-password"}}), http.StatusUnprocessableEntity)
	}
	b := site.browser()
	b.forwardedFor = "198.51.100.7"
	wantStatus(t, b.post("/signin", url.Values{"screen_name": {victim}, "password": {"wrong-password"}}), http.StatusTooManyRequests)
}

// TestHugeScreenNamesKeepNothing: 200 sign-ins with 500 KiB screen names
// leave the server's memory where it was: an invalid name is refused
// before it reaches the limiters, which hold only fixed-size digests.
// Sign-ins with valid-length names then show the limiters at work: had the
// huge names been counted, the address would be stopped at once; as it is,
// it is stopped after exactly its limit. So the test fails if either
// protection goes: the refusal before the limiters, or the limiting.
func TestHugeScreenNamesKeepNothing(t *testing.T) { forEachBackend(t, testHugeScreenNamesKeepNothing) }

func testHugeScreenNamesKeepNothing(t *testing.T, be backend) {
	// Far fewer failures per address than huge names sent: had they
	// reached the limiters, most would have been answered 429.
	const perAddress = 20
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{MaxBodyBytes: 1 << 20, SignInFailuresPerIP: perAddress}})
	b := site.browser()
	token := b.csrf()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	const n, workers = 200, 4
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				name := fmt.Sprintf("%06d", i) + strings.Repeat("a", 500<<10)
				statuses <- b.postRaw("/signin", url.Values{"screen_name": {name}, "password": {"wrong-password"}, "csrf_token": {token}}).status
			}
		}()
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != http.StatusUnprocessableEntity {
			t.Fatalf("a 500 KiB name got %d, want 422", s)
		}
	}
	after := heap()
	grown := int64(after) - int64(before)
	t.Logf("heap before %d KiB, after %d KiB", before>>10, after>>10)
	// 200 names of 500 KiB are 100 MB; a limiter keeping them would hold
	// all of it. Allow 8 MB for whatever the runtime and pools keep.
	if grown > 8<<20 {
		t.Fatalf("heap grew by %d MiB after 200 sign-ins with 500 KiB names", grown>>20)
	}
	// The limiters were never touched: a valid sign-in still gets in…
	wantRedirect(t, b.post("/signin", url.Values{"screen_name": {site.ds.Users[0].ScreenName}, "password": {seed.Password}}), "/")
	// …and the address has its whole budget of failures left: names of
	// the longest valid length, none of them an account, fail perAddress
	// times before the address is stopped.
	other := site.browser()
	for i := range perAddress + 1 {
		name := fmt.Sprintf("%06d", i) + strings.Repeat("b", loremnews.MaxScreenNameLen-6)
		got := other.post("/signin", url.Values{"screen_name": {name}, "password": {"wrong-password"}}).status
		if i < perAddress && got == http.StatusTooManyRequests {
			t.Fatalf("valid-length sign-in failure %d was stopped: the huge names were counted", i+1)
		}
		if i == perAddress && got != http.StatusTooManyRequests {
			t.Fatalf("failure %d from one address got %d, want 429: the limiter did not stop it", i+1, got)
		}
	}
}

// TestSignUpThrottledPerAddress: sign-ups are limited per address.
func TestSignUpThrottledPerAddress(t *testing.T) { forEachBackend(t, testSignUpThrottledPerAddress) }

func testSignUpThrottledPerAddress(t *testing.T, be backend) {
	proxies, _ := lnhttp.ParseTrustedProxies("127.0.0.1")
	site := newTestSite(t, be, siteOptions{handler: lnhttp.Config{SignUpsPerIP: 3, TrustedProxies: proxies}})
	b := site.browser()
	b.forwardedFor = "203.0.113.5"
	for i := range 3 {
		wantRedirect(t, b.post("/signup", url.Values{"screen_name": {fmt.Sprint("newcomer", i)}, "password": {"long enough"}}), "/")
	}
	r := b.post("/signup", url.Values{"screen_name": {"newcomer3"}, "password": {"long enough"}})
	wantStatus(t, r, http.StatusTooManyRequests)
	wantBody(t, r, "Too many sign-ups")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	if _, err := site.db.FindUserByScreenName(context.Background(), "newcomer3"); loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
		t.Fatalf("the refused sign-up created an account: %v", err)
	}
	other := site.browser()
	other.forwardedFor = "198.51.100.7"
	wantRedirect(t, other.post("/signup", url.Values{"screen_name": {"newcomer3"}, "password": {"long enough"}}), "/")
}

// TestSessionsExpireOnTheServer: a session row signed in 90 days ago, or
// idle for longer than the limit, signs no one in, whatever the cookie.
func TestSessionsExpireOnTheServer(t *testing.T) { forEachBackend(t, testSessionsExpireOnTheServer) }

func testSessionsExpireOnTheServer(t *testing.T, be backend) {
	day := 24 * time.Hour
	now := time.Now().UTC()
	var id int64
	session := func(token string, signedIn, lastActive time.Duration) *loremnews.Session {
		d := sha256.Sum256([]byte(token))
		id++
		return &loremnews.Session{ID: id, UserID: 1, TokenDigest: d[:], UserAgent: "UA", CreatedAt: now.Add(-signedIn), UpdatedAt: now.Add(-lastActive)}
	}
	site := newTestSite(t, be, siteOptions{sessions: []*loremnews.Session{
		session("ninety-days-old-session-token-0123456789", 90*day, 90*day),
		session("signed-in-long-ago-but-active-0123456789", 90*day, time.Hour),
		session("idle-for-twenty-days-session-0123456789a", 25*day, 20*day),
		session("fresh-session-token-0123456789abcdefghij", day, time.Hour),
	}})
	u, _ := url.Parse(site.srv.URL)
	for token, signedIn := range map[string]bool{
		"ninety-days-old-session-token-0123456789": false,
		"signed-in-long-ago-but-active-0123456789": false,
		"idle-for-twenty-days-session-0123456789a": false,
		"fresh-session-token-0123456789abcdefghij": true,
	} {
		b := site.browser()
		b.client.Jar.SetCookies(u, []*http.Cookie{{Name: "lorem_session", Value: token}})
		r := b.get("/")
		if got := strings.Contains(r.body, "Sign out"); got != signedIn {
			t.Errorf("session %s: signed in %v, want %v", token, got, signedIn)
		}
		if !signedIn && !strings.Contains(r.header.Get("Set-Cookie"), "lorem_session=;") {
			t.Errorf("session %s: the stale cookie was not cleared", token)
		}
	}
}

// TestReturnToStaysOnSite: only a path on this site is followed after
// signing in; anything a browser could read as another host goes to /.
func TestReturnToStaysOnSite(t *testing.T) { forEachBackend(t, testReturnToStaysOnSite) }

func testReturnToStaysOnSite(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	for returnTo, want := range map[string]string{
		"/posts/2":               "/posts/2",
		"/posts/2?x=1#comment-3": "/posts/2?x=1#comment-3",
		"/%09/evil.example":      "/%09/evil.example", // stays a path: browsers do not decode it
		"/\t/evil.example":       "/",
		"/\n/evil.example":       "/",
		"/\r/evil.example":       "/",
		"/\x00/evil.example":     "/",
		"/\\evil.example":        "/",
		"/\\/evil.example":       "/",
		"//evil.example/":        "/",
		"///evil.example/":       "/",
		"https://evil.example/":  "/",
		"javascript:alert(1)":    "/",
		"evil.example":           "/",
		"/\u202e/evil.example":   "/",
		"/ok\u0085/evil.example": "/",
	} {
		b := site.browser()
		r := b.post("/signin", url.Values{"screen_name": {site.ds.Users[0].ScreenName}, "password": {seed.Password}, "return_to": {returnTo}})
		if r.status != http.StatusSeeOther || r.location() != want {
			t.Errorf("return_to %q: %d → %q, want → %q", returnTo, r.status, r.location(), want)
		}
	}
	// The sign-in page does not carry a refused value into its form.
	r := site.browser().get("/signin?return_to=" + url.QueryEscape("/\t/evil.example"))
	wantStatus(t, r, 200)
	if strings.Contains(r.body, "evil.example") {
		t.Fatal("the sign-in form kept a refused return_to")
	}
}

// TestBenchmarkPostLeavesOutCredentials: post_create describes the
// request's headers publicly, so it publishes only the few that describe
// the client's software, and no credential or address under any name.
func TestBenchmarkPostLeavesOutCredentials(t *testing.T) {
	forEachBackend(t, testBenchmarkPostLeavesOutCredentials)
}

func testBenchmarkPostLeavesOutCredentials(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{benchmarking: true})
	b := site.browser()
	req, _ := http.NewRequest(http.MethodPost, site.srv.URL+"/benchmarking/post_create", nil)
	secrets := map[string]string{
		"Cookie":               "lorem_session=SECRET-cookie",
		"Authorization":        "Bearer SECRET-bearer",
		"Proxy-Authorization":  "Basic SECRET-proxy",
		"Proxy-Connection":     "SECRET-proxy-conn",
		"X-Api-Key":            "SECRET-api-key",
		"X-Auth-Token":         "SECRET-auth-token",
		"X-Csrf-Token":         "SECRET-csrf",
		"X-Amz-Security-Token": "SECRET-amz",
		"X-Forwarded-For":      "SECRET.203.0.113.5",
		"X-Real-Ip":            "SECRET.203.0.113.6",
		"Forwarded":            "for=SECRET",
		// Credentials and addresses no word of a block-list names.
		"Cf-Access-Jwt-Assertion":  "SECRET-cf-jwt",
		"X-Amzn-Oidc-Data":         "SECRET-oidc",
		"X-Goog-Iap-Jwt-Assertion": "SECRET-iap",
		"Dpop":                     "SECRET-dpop",
		"From":                     "SECRET@example.com",
		"X-Originating-Ip":         "SECRET.203.0.113.7",
		"Cf-Connecting-Ip":         "SECRET.203.0.113.8",
		"True-Client-Ip":           "SECRET.203.0.113.9",
		"X-Client-Cert":            "SECRET-cert",
	}
	for k, v := range secrets {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", "bench-test/1.0")
	req.Header.Set("Accept-Language", "de-CH")
	r := b.do(req)
	wantRedirect(t, r, "/posts/")
	page := b.get(r.location())
	wantBody(t, page, "User-Agent: bench-test/1.0", "Accept-Language: de-CH")
	if strings.Contains(page.body, "SECRET") {
		i := strings.Index(page.body, "SECRET")
		t.Fatalf("a credential was published: …%s…", page.body[max(0, i-80):min(len(page.body), i+40)])
	}

	t.Run("HeadersThatAreNotPlainTextLeftOut", func(t *testing.T) {
		// Invalid UTF-8, and a text-direction override that would flip the
		// rest of the line on the post's page: the site's forms refuse both
		// in a one-line field, and post_create leaves such headers out.
		req, _ := http.NewRequest(http.MethodPost, site.srv.URL+"/benchmarking/post_create", nil)
		req.Header.Set("User-Agent", "bench\xff\xfe/1.0")
		req.Header.Set("Accept-Language", "en\u202eSU-ne")
		req.Header.Set("Accept", "text/html")
		r := b.do(req)
		wantRedirect(t, r, "/posts/")
		page := b.get(r.location())
		wantBody(t, page, "Accept: text/html")
		if strings.Contains(page.body, "\u202e") || !utf8.ValidString(page.body) || strings.Contains(page.body, "User-Agent: bench") {
			t.Fatalf("a header that is not plain text was published:\n%s", page.body)
		}
	})
	t.Run("CrossOriginRefused", func(t *testing.T) {
		for k, v := range map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"} {
			req, _ := http.NewRequest(http.MethodPost, site.srv.URL+"/benchmarking/post_create", nil)
			req.Header.Set(k, v)
			wantStatus(t, b.do(req), http.StatusForbidden)
		}
	})
}

// TestCanonicalIDsOnly: one page, one URL.
func TestCanonicalIDsOnly(t *testing.T) { forEachBackend(t, testCanonicalIDsOnly) }

func testCanonicalIDsOnly(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	wantStatus(t, b.get("/posts/1"), 200)
	wantStatus(t, b.get("/users/1"), 200)
	for _, path := range []string{"/posts/+1", "/posts/001", "/posts/01", "/users/+1", "/users/0001", "/posts/%2B1"} {
		if r := b.get(path); r.status != 404 {
			t.Errorf("GET %s = %d, want 404", path, r.status)
		}
	}
}

// TestNoStoreOnPrivatePages: signed-in pages and forms are never cached.
func TestNoStoreOnPrivatePages(t *testing.T) { forEachBackend(t, testNoStoreOnPrivatePages) }

func testNoStoreOnPrivatePages(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	visitor, member := site.browser(), site.browser()
	member.signIn(0)
	for _, tc := range []struct {
		b       *browser
		path    string
		noStore bool
	}{
		{member, "/", true},
		{member, "/users/1", true},
		{member, "/posts/new", true},
		{member, "/users/1/edit", true},
		{visitor, "/signin", true},
		{visitor, "/signup", true},
		{visitor, "/", false},
	} {
		r := tc.b.get(tc.path)
		wantStatus(t, r, 200)
		if got := r.header.Get("Cache-Control") == "no-store"; got != tc.noStore {
			t.Errorf("GET %s: Cache-Control %q, want no-store %v", tc.path, r.header.Get("Cache-Control"), tc.noStore)
		}
	}
}

// TestSlowBodyIs408: a form body that does not arrive within the read
// timeout is answered 408, and logs no error.
func TestSlowBodyIs408(t *testing.T) { forEachBackend(t, testSlowBodyIs408) }

func testSlowBodyIs408(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	var logs bytes.Buffer
	var mu sync.Mutex
	h, err := lnhttp.NewHandler(site.db, lnhttp.Config{BcryptCost: 4,
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ReadTimeout = 500 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "POST /signin HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nscreen_name=slow")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("status %d, want 408\n%s", resp.StatusCode, logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), "level=ERROR") || strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("a slow client was logged as a problem:\n%s", logs.String())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestTrustedProxiesFlagFormat: the parser takes what --trusted-proxies
// documents.
func TestTrustedProxiesFlagFormat(t *testing.T) {
	got, err := lnhttp.ParseTrustedProxies(" 10.0.0.0/8 ,192.168.1.7,fd00::/8,::1 ")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("::1/128")}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestSignInAgainReplacesTheSession: signing in on a browser that is
// already signed in ends its old session, so the old cookie is worthless.
func TestSignInAgainReplacesTheSession(t *testing.T) {
	forEachBackend(t, testSignInAgainReplacesTheSession)
}

func testSignInAgainReplacesTheSession(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	b.signIn(0)
	first := b.cookie("lorem_session")
	b.signIn(1)
	if b.cookie("lorem_session") == first {
		t.Fatal("the session cookie did not change")
	}
	copied := site.browser()
	u, _ := url.Parse(site.srv.URL)
	copied.client.Jar.SetCookies(u, []*http.Cookie{{Name: "lorem_session", Value: first}})
	wantBody(t, copied.get("/"), "Sign in")
	list, err := site.db.UserSessions(context.Background(), site.ds.Users[0].ID, loremnews.SessionLimits{})
	if err != nil || len(list) != 0 {
		t.Fatalf("the first account still has %d sessions (%v)", len(list), err)
	}
}

// TestCurrentPasswordGuessesAreLimited: a stolen session cannot be used to
// guess the password through the account forms: wrong current passwords
// count like failed sign-ins.
func TestCurrentPasswordGuessesAreLimited(t *testing.T) {
	forEachBackend(t, testCurrentPasswordGuessesAreLimited)
}

func testCurrentPasswordGuessesAreLimited(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	b.signIn(0)
	path := fmt.Sprintf("/users/%d", site.ds.Users[0].ID)
	for i := range 5 {
		wantStatus(t, b.post(path+"/delete", url.Values{"current_password": {fmt.Sprint("guess-", i)}}), http.StatusUnprocessableEntity)
	}
	r := b.post(path+"/delete", url.Values{"current_password": {seed.Password}})
	wantStatus(t, r, http.StatusTooManyRequests)
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	r = b.post(path, url.Values{"screen_name": {site.ds.Users[0].ScreenName}, "password": {"a new password"}, "current_password": {seed.Password}})
	wantStatus(t, r, http.StatusTooManyRequests)
	if _, err := site.db.FindUserByID(context.Background(), site.ds.Users[0].ID); err != nil {
		t.Fatalf("the account is gone: %v", err)
	}
}

// TestFormFromEndedSession: a form loaded in a session that has since
// ended does nothing and leads to the sign-in page with a notice.
func TestFormFromEndedSession(t *testing.T) { forEachBackend(t, testFormFromEndedSession) }

func testFormFromEndedSession(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	b := site.browser()
	b.signIn(0)
	token := b.csrf()
	// The session ends elsewhere (here: every session of the account).
	u := site.ds.Users[0]
	if _, err := site.db.UpdateProfile(context.Background(), u.ID, loremnews.ProfileChange{ScreenName: u.ScreenName, About: u.About, PasswordDigest: u.PasswordDigest}); err != nil {
		t.Fatal(err)
	}
	r := b.postRaw("/posts", url.Values{"title": {"Written after the session ended"}, "csrf_token": {token}})
	wantRedirect(t, r, "/signin")
	wantBody(t, b.get("/signin"), "Your session has ended. Please sign in again.")
	recent, _ := site.db.PostsBefore(context.Background(), math.MaxInt64, 5)
	for _, p := range recent {
		if strings.Contains(p.Title, "session ended") {
			t.Fatal("a form from an ended session created a post")
		}
	}
}
