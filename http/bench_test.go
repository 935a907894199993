package http_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/loremnews/loremnews"
	lnhttp "github.com/loremnews/loremnews/http"
)

// Go benchmarks of the web layer on the full seed (100 users, 1,000 posts),
// SQLite's default setup, no network: where a benchmarking request's server
// time goes, next to the data layer's own benchmarks (sqlite/hotpaths_bench_test.go).
//
//	go test -run '^$' -bench . -count 6 ./http/ > new.txt
//	benchstat old.txt new.txt

// benchSite is the full seed behind the real handler, benchmarking on.
func benchSite(b *testing.B) (loremnews.Database, http.Handler) {
	b.Helper()
	s := newTestSite(b, sqliteBackend, siteOptions{benchmarking: true, users: 100, posts: 1000})
	s.srv.Close() // requests go straight to the handler
	return s.db, s.srv.Config.Handler
}

// BenchmarkActions serves each benchmarking action as the load generator
// sees it: the POST, and for a write the GET its 303 points to.
func BenchmarkActions(b *testing.B) {
	_, h := benchSite(b)
	for _, action := range []string{"post_show", "posts_index", "user_show", "post_create", "comment_create", "comment_destroy", "post_destroy", "balanced"} {
		b.Run(action, func(b *testing.B) {
			var bytesOut int64
			// The site answers only a Host naming this machine (allowHosts).
			request := func(method, target string) *http.Request {
				r := httptest.NewRequest(method, target, nil)
				r.Host = "127.0.0.1"
				return r
			}
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, request("POST", "/benchmarking/"+action))
				if w.Code == http.StatusSeeOther {
					loc := w.Header().Get("Location")
					w = httptest.NewRecorder()
					h.ServeHTTP(w, request("GET", loc))
				}
				if w.Code != http.StatusOK {
					b.Fatalf("%s: status %d: %s", action, w.Code, w.Body)
				}
				bytesOut += int64(w.Body.Len())
			}
			b.ReportMetric(float64(bytesOut)/float64(b.N), "bytes/op")
		})
	}
}

// BenchmarkRender renders each benchmarked page from data read once: the
// templates' share of a request, with no database and no network.
func BenchmarkRender(b *testing.B) {
	db, _ := benchSite(b)
	ctx := context.Background()
	u, userPosts, userComments, err := db.UserPage(ctx, 50, 100)
	if err != nil {
		b.Fatal(err)
	}
	post, postComments, err := db.PostPage(ctx, 500)
	if err != nil {
		b.Fatal(err)
	}
	indexPosts, err := db.PostsBefore(ctx, 501, 100)
	if err != nil {
		b.Fatal(err)
	}
	for name, render := range map[string]func(*bytes.Buffer) error{
		"UserPage":  func(w *bytes.Buffer) error { return lnhttp.RenderUserPage(w, u, userPosts, userComments) },
		"PostPage":  func(w *bytes.Buffer) error { return lnhttp.RenderPostPage(w, post, postComments) },
		"IndexPage": func(w *bytes.Buffer) error { return lnhttp.RenderIndexPage(w, indexPosts) },
	} {
		b.Run(name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := render(&buf); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}
