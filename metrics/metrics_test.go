package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	lnhttp "github.com/loremnews/loremnews/http"
	"github.com/loremnews/loremnews/metrics"
	"github.com/loremnews/loremnews/seed"
	"github.com/loremnews/loremnews/sqlite"
)

// TestMetricsSeeRequestsAndWrites serves a seeded site with metrics on,
// sends benchmarking requests, and checks the scrape reports them.
func TestMetricsSeeRequestsAndWrites(t *testing.T) {
	m := metrics.New()
	db, err := sqlite.Open(context.Background(), sqlite.Config{DSN: filepath.Join(t.TempDir(), "m.sqlite3"), OnWriteWait: m.ObserveWriteWait})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ds, _ := seed.Generate(seed.Config{Users: 5, Posts: 10, BcryptCost: 4})
	if err := db.LoadDataset(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	m.Watch(db)
	h, err := lnhttp.NewHandler(db, lnhttp.Config{Benchmarking: true, Observer: m, Metrics: m.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for range 10 {
		resp, err := http.Post(srv.URL+"/benchmarking/post_create", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`loremnews_http_request_duration_seconds_count{code="303",route="POST /benchmarking/post_create"} 10`,
		`loremnews_http_request_duration_seconds_count{code="200",route="GET /posts/{id}"} 10`,
		`loremnews_write_wait_seconds_count 13`, // 2 at migration, the seed load, 10 creates
		`loremnews_db_profile_info{profile="split"} 1`,
		`loremnews_writer_queue_turns_total`,
		`loremnews_db_pool_open_connections{pool="read"}`,
		`loremnews_sqlite_busy_errors_total 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
