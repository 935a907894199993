package http_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	lnhttp "github.com/loremnews/loremnews/http"
)

// TestHostHeaderMustBeAllowed: the site answers only to the names it is
// served as, so a page on a rebinding domain (whose name now points at
// 127.0.0.1) cannot read /metrics or the profiler, or drive the
// benchmarking endpoints, from a browser on this machine.
func TestHostHeaderMustBeAllowed(t *testing.T) { forEachBackend(t, testHostHeaderMustBeAllowed) }

func testHostHeaderMustBeAllowed(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{benchmarking: true})
	secret := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "secret") })
	for _, tc := range []struct {
		name    string
		allowed []string // Config.AllowedHosts
		host    string
		want    int // for every route but /up
	}{
		{"default, loopback address", nil, "127.0.0.1:3000", 200},
		{"default, localhost", nil, "LocalHost:3000", 200},
		{"default, IPv6 loopback", nil, "[::1]:3000", 200},
		{"default, rebinding domain", nil, "rebind.attacker.example:3000", 400},
		{"default, no port", nil, "attacker.example", 400},
		{"default, empty", nil, "", 400},
		{"named, the name", []string{"news.example"}, "news.example", 200},
		{"named, trailing dot", []string{"news.example"}, "news.example.:443", 200},
		{"named, loopback address", []string{"news.example"}, "127.0.0.1:3000", 400},
		{"named, a suffix", []string{"news.example"}, "evil-news.example", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := lnhttp.NewHandler(site.db, lnhttp.Config{BcryptCost: 4, AllowedHosts: tc.allowed,
				Benchmark: site.db.Benchmark(), Metrics: secret, Profiler: secret})
			if err != nil {
				t.Fatal(err)
			}
			for _, route := range []struct{ method, path string }{
				{"GET", "/metrics"}, {"GET", "/debug/pprof/"}, {"POST", "/benchmarking/ceiling"}, {"GET", "/"},
			} {
				req := httptest.NewRequest(route.method, route.path, nil)
				req.Host, req.RemoteAddr = tc.host, "127.0.0.1:5000"
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != tc.want {
					t.Errorf("%s %s, Host %q: %d, want %d", route.method, route.path, tc.host, rec.Code, tc.want)
				}
				if tc.want == 400 && strings.Contains(rec.Body.String(), "secret") {
					t.Errorf("%s %s, Host %q: the route answered", route.method, route.path, tc.host)
				}
			}
			// Health checks by address answer whatever the Host.
			req := httptest.NewRequest("GET", "/up", nil)
			req.Host = tc.host
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Errorf("GET /up, Host %q: %d, want 200", tc.host, rec.Code)
			}
		})
	}
}

// TestLoopbackRoutesNotThroughTrustedProxies: behind a reverse proxy on
// this machine (a trusted proxy on loopback), /metrics and the profiler
// are not reachable through it, even when it adds no forwarding header.
func TestLoopbackRoutesNotThroughTrustedProxies(t *testing.T) {
	forEachBackend(t, testLoopbackRoutesNotThroughTrustedProxies)
}

func testLoopbackRoutesNotThroughTrustedProxies(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	secret := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "secret") })
	proxies, _ := lnhttp.ParseTrustedProxies("127.0.0.1")
	h, err := lnhttp.NewHandler(site.db, lnhttp.Config{BcryptCost: 4, TrustedProxies: proxies, Metrics: secret, Profiler: secret})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		peer string
		want int
	}{
		{"127.0.0.1:5000", 404}, // the proxy
		{"[::1]:5000", 200},     // this machine, not through the proxy
	} {
		for _, path := range []string{"/metrics", "/debug/pprof/"} {
			req := httptest.NewRequest("GET", path, nil)
			req.Host, req.RemoteAddr = "localhost", tc.peer
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("GET %s from %s: %d, want %d", path, tc.peer, rec.Code, tc.want)
			}
		}
	}
}

// TestAllowedHostsFlagFormat: the parser takes what --allowed-hosts
// documents and refuses what is not a bare name.
func TestAllowedHostsFlagFormat(t *testing.T) {
	got, err := lnhttp.ParseAllowedHosts(" News.Example ,192.0.2.10,[2001:db8::1],, ::1 ")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"news.example", "192.0.2.10", "2001:db8::1", "::1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, bad := range []string{"https://news.example", "news.example/path", "news example", ".news.example"} {
		if _, err := lnhttp.ParseAllowedHosts(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
