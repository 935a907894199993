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
// 127.0.0.1) cannot drive the benchmarking endpoints, or read pages, from
// a browser on this machine.
func TestHostHeaderMustBeAllowed(t *testing.T) { forEachBackend(t, testHostHeaderMustBeAllowed) }

func testHostHeaderMustBeAllowed(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{benchmarking: true})
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
				Benchmark: site.db.Benchmark()})
			if err != nil {
				t.Fatal(err)
			}
			for _, route := range []struct{ method, path string }{
				{"POST", "/benchmarking/ceiling"}, {"GET", "/"},
			} {
				req := httptest.NewRequest(route.method, route.path, nil)
				req.Host, req.RemoteAddr = tc.host, "127.0.0.1:5000"
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != tc.want {
					t.Errorf("%s %s, Host %q: %d, want %d", route.method, route.path, tc.host, rec.Code, tc.want)
				}
				if tc.want == 400 && strings.Contains(rec.Body.String(), "Lorem News") && route.path != "/" {
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

// TestNoMetricsOrProfilerOnTheSite: the site's handler serves neither
// /metrics nor the profiler to anyone, this machine included, with or
// without a forwarding header (a proxy that adds none, nginx's default,
// rewrites Host to 127.0.0.1): they have a listener of their own.
func TestNoMetricsOrProfilerOnTheSite(t *testing.T) {
	forEachBackend(t, testNoMetricsOrProfilerOnTheSite)
}

func testNoMetricsOrProfilerOnTheSite(t *testing.T, be backend) {
	site := newTestSite(t, be, siteOptions{})
	proxies, _ := lnhttp.ParseTrustedProxies("127.0.0.1")
	for _, cfg := range []lnhttp.Config{{BcryptCost: 4}, {BcryptCost: 4, TrustedProxies: proxies}} {
		h, err := lnhttp.NewHandler(site.db, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, peer := range []string{"127.0.0.1:5000", "[::1]:5000", "203.0.113.5:5000"} {
			for _, header := range []string{"", "X-Forwarded-For: ", "True-Client-IP: 203.0.113.5", "CF-Connecting-IP: 203.0.113.5"} {
				for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/goroutine?debug=1"} {
					req := httptest.NewRequest("GET", path, nil)
					req.Host, req.RemoteAddr = "127.0.0.1:3000", peer
					if k, v, ok := strings.Cut(header, ": "); ok {
						req.Header.Set(k, v)
					}
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusNotFound || strings.Contains(rec.Body.String(), "# TYPE") || strings.Contains(rec.Body.String(), "goroutine") {
						t.Errorf("GET %s from %s %q: %d, want 404", path, peer, header, rec.Code)
					}
				}
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
