package http_test

import (
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/loremnews/loremnews"
	lnhttp "github.com/loremnews/loremnews/http"
)

// Native Go fuzz tests. `go test` runs their seed corpora (f.Add and
// testdata/fuzz/); `go test -fuzz=FuzzPostForm ./http/` explores further.
// The property: whatever the input, the answer is a success, a redirect or
// a clear 4xx — never a 500 — and user text comes back escaped.

// fuzzSite is a seeded site and a signed-in session, driven in-process.
// It runs on SQLite: what is fuzzed is the handler's parsing and escaping,
// the same whatever the store, and a fuzz target cannot have subtests.
type fuzzSite struct {
	site    *testSite
	h       http.Handler
	cookies string
	csrf    string
}

func newFuzzSite(t testing.TB) *fuzzSite {
	site := newTestSite(t, sqliteBackend, siteOptions{benchmarking: true})
	token := "fuzz-session-token-0123456789abcdefghijklmnop"
	digest := sha256.Sum256([]byte(token))
	if err := site.db.CreateSession(context.Background(), &loremnews.Session{UserID: site.ds.Users[0].ID, TokenDigest: digest[:]}); err != nil {
		t.Fatal(err)
	}
	// httptest.NewRequest's requests are for example.com.
	h, err := lnhttp.NewHandler(site.db, lnhttp.Config{Benchmark: site.db.Benchmark(), BcryptCost: 4, MaxBodyBytes: 64 << 10, AllowedHosts: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	// The form token is bound to the session: read it from a page.
	req := httptest.NewRequest(http.MethodGet, "/signin", nil)
	req.Header.Set("Cookie", "lorem_session="+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	m := csrfRe.FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("no CSRF token on the signed-in page (%d)", rec.Code)
	}
	return &fuzzSite{site: site, h: h, cookies: "lorem_session=" + token, csrf: m[1]}
}

// do serves one request in-process and fails on a 5xx.
func (f *fuzzSite) do(t *testing.T, method, target string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		form.Set("csrf_token", f.csrf)
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	if _, err := url.ParseRequestURI(target); err != nil {
		return &httptest.ResponseRecorder{Code: http.StatusBadRequest} // net/http answers 400 before any handler
	}
	req := httptest.NewRequest(method, target, body)
	req.Header.Set("Cookie", f.cookies)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %q → %d\n%.1000s", method, target, rec.Code, rec.Body.String())
	}
	return rec
}

// mustBeEscaped fails if a page holds markup that only user input could
// have put there: our pages have no <script>, <img>, <iframe> or <svg>.
func mustBeEscaped(t *testing.T, page string) {
	t.Helper()
	lower := strings.ToLower(page)
	for _, tag := range []string{"<script", "<img", "<iframe", "<svg"} {
		if strings.Contains(lower, tag) {
			t.Fatalf("page contains unescaped %s:\n%.2000s", tag, page)
		}
	}
}

func FuzzPostForm(f *testing.F) {
	for _, s := range [][2]string{
		{"A normal title", "Some text."},
		{"", ""},
		{"   ", "\n\n"},
		{"<script>alert(1)</script>", `"><img src=x onerror=alert(1)>`},
		{"'; DROP TABLE posts; --", "' OR 1=1 --"},
		{"bad \xff\xfe utf8", "\x00\x01"},
		{strings.Repeat("long ", 100), strings.Repeat("x", 30000)},
	} {
		f.Add(s[0], s[1])
	}
	fs := newFuzzSite(f)
	f.Fuzz(func(t *testing.T, title, description string) {
		rec := fs.do(t, "POST", "/posts", url.Values{"title": {title}, "description": {description}})
		switch rec.Code {
		case http.StatusSeeOther:
			mustBeEscaped(t, fs.do(t, "GET", rec.Header().Get("Location"), nil).Body.String())
		case http.StatusUnprocessableEntity, http.StatusRequestEntityTooLarge:
			mustBeEscaped(t, rec.Body.String())
		default:
			t.Fatalf("POST /posts → %d", rec.Code)
		}
	})
}

func FuzzCommentForm(f *testing.F) {
	for _, s := range []string{"A fine comment", "", "abc", "<b>bold</b> claim", "<script>alert(1)</script>", "\xff\xfe", "Robert'); DROP TABLE comments;--"} {
		f.Add(s)
	}
	fs := newFuzzSite(f)
	f.Fuzz(func(t *testing.T, body string) {
		rec := fs.do(t, "POST", "/posts/1/comments", url.Values{"body": {body}})
		if rec.Code != http.StatusSeeOther && rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("comment → %d", rec.Code)
		}
		mustBeEscaped(t, rec.Body.String())
		if rec.Code == http.StatusSeeOther {
			mustBeEscaped(t, fs.do(t, "GET", "/posts/1", nil).Body.String())
		}
	})
}

func FuzzPathIDs(f *testing.F) {
	for _, s := range []string{"1", "0", "-1", "abc", "99999999999999999999999", "1.5", "%00", "1%2F2", "１", "0x10", " 1", "1e3"} {
		f.Add(s)
	}
	fs := newFuzzSite(f)
	f.Fuzz(func(t *testing.T, id string) {
		esc := url.PathEscape(id)
		for _, target := range []string{"/posts/" + esc, "/users/" + esc, "/posts/" + esc + "/edit", "/comments/" + esc + "/edit"} {
			if rec := fs.do(t, "GET", target, nil); !okCode(rec.Code, http.StatusOK, http.StatusNotFound, http.StatusForbidden, http.StatusBadRequest) {
				t.Fatalf("GET %s → %d", target, rec.Code)
			}
		}
		for _, target := range []string{"/posts/" + esc + "/delete", "/comments/" + esc + "/delete", "/sessions/" + esc + "/delete"} {
			if rec := fs.do(t, "POST", target, url.Values{}); !okCode(rec.Code, http.StatusNotFound, http.StatusForbidden, http.StatusBadRequest) {
				t.Fatalf("POST %s → %d", target, rec.Code)
			}
		}
	})
}

func FuzzBenchmarkingAction(f *testing.F) {
	for _, s := range []string{"balanced", "post_create", "ceiling", "", "drop_tables", "../up", "balanced%00", "BALANCED"} {
		f.Add(s)
	}
	fs := newFuzzSite(f)
	f.Fuzz(func(t *testing.T, action string) {
		if rec := fs.do(t, "POST", "/benchmarking/"+url.PathEscape(action), nil); !okCode(rec.Code, http.StatusOK, http.StatusNotFound, http.StatusBadRequest) {
			t.Fatalf("POST /benchmarking/%q → %d", action, rec.Code)
		}
	})
}

// okCode reports whether code is a redirect (the mux cleans odd paths with
// 301/307/308; the site answers 303) or one of the allowed codes.
func okCode(code int, allowed ...int) bool {
	if code >= 300 && code < 400 {
		return true
	}
	for _, a := range allowed {
		if code == a {
			return true
		}
	}
	return false
}
