package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/bench/setups"
	lnhttp "github.com/loremnews/loremnews/http"
	"github.com/loremnews/loremnews/metrics"
	"github.com/loremnews/loremnews/pgcluster/pgtest"
	"github.com/loremnews/loremnews/postgres"
	"github.com/loremnews/loremnews/seed"
	"github.com/loremnews/loremnews/sqlite"
)

// TestMetricsSeeRequestsAndWrites serves a seeded site with metrics on,
// sends benchmarking requests, and checks the scrape reports them.
func TestMetricsSeeRequestsAndWrites(t *testing.T) {
	m := metrics.New()
	m.Build("v1.2.3", "0123abcd")
	db, err := sqlite.Open(context.Background(), sqlite.Config{DSN: filepath.Join(t.TempDir(), "m.sqlite3"), OnWriteWait: m.ObserveWriteWait})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	text := scrapeAfterCreates(t, m, db)
	// Writes: the seed load, its PRAGMA optimize, and the 10 creates (the
	// migrations run before the writer starts, and wait for no turn).
	writes := 1 + 1 + 10
	for _, want := range []string{
		`loremnews_http_request_duration_seconds_count{code="303",route="POST /benchmarking/post_create"} 10`,
		`loremnews_http_request_duration_seconds_count{code="200",route="GET /posts/{id}"} 10`,
		fmt.Sprintf("loremnews_write_wait_seconds_count %d", writes),
		`loremnews_db_setup_info{setup="split"} 1`,
		`loremnews_build_info{commit="0123abcd",version="v1.2.3"} 1`,
		fmt.Sprintf("loremnews_sqlite_writer_writes_total %d", writes),
		`loremnews_sqlite_pool_open_connections{pool="read"}`,
		`loremnews_sqlite_pool_open_connections{pool="write"} 1`,
		`loremnews_sqlite_busy_errors_total 0`,
		`loremnews_sqlite_checkpoints_total{kind="background"}`,
		`loremnews_sqlite_read_waits_total`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestMetricsOnPostgres: the same scrape from a site on PostgreSQL shows its
// pool and retry counters instead of SQLite's.
func TestMetricsOnPostgres(t *testing.T) {
	m := metrics.New()
	db, err := postgres.Open(context.Background(), postgres.Config{URL: pgtest.NewDatabase(t), OnWriteWait: m.ObserveWriteWait})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	text := scrapeAfterCreates(t, m, db)
	for _, want := range []string{
		`loremnews_http_request_duration_seconds_count{code="303",route="POST /benchmarking/post_create"} 10`,
		`loremnews_write_wait_seconds_count 10`, // the 10 creates (migration and seed load run outside write)
		`loremnews_db_setup_info{setup="postgres"} 1`,
		`loremnews_postgres_pool_open_connections`,
		`loremnews_postgres_pool_in_use_connections`,
		`loremnews_postgres_pool_waits_total`,
		`loremnews_postgres_deadlocks_total 0`,
		`loremnews_postgres_write_retries_total 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, sqliteOnly := range []string{"loremnews_sqlite_writer_queue_depth", "loremnews_sqlite_busy_errors_total"} {
		if strings.Contains(text, sqliteOnly) {
			t.Errorf("metrics on PostgreSQL show SQLite's %s", sqliteOnly)
		}
	}
}

// TestMetricsOnABaseline: a baseline setup, on database/sql alone, shows
// its busy counters under SQLite's names and its one pool as database/sql's
// metrics, and no writer or checkpointer it does not have.
func TestMetricsOnABaseline(t *testing.T) {
	m := metrics.New()
	db, err := setups.Open(context.Background(), setups.Naive, sqlite.Config{DSN: filepath.Join(t.TempDir(), "b.sqlite3"), OnWriteWait: m.ObserveWriteWait})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	text := scrapeAfterCreates(t, m, db)
	for _, want := range []string{
		`loremnews_db_setup_info{setup="naive"} 1`,
		`loremnews_sqlite_busy_errors_total 0`,
		`loremnews_sqlite_busy_retries_total 0`,
		`go_sql_max_open_connections{db_name="loremnews"} 5`,
		`go_sql_open_connections{db_name="loremnews"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, absent := range []string{"loremnews_sqlite_writer_", "loremnews_sqlite_checkpoints_total"} {
		if strings.Contains(text, absent) {
			t.Errorf("a baseline's metrics show %s", absent)
		}
	}
}

func TestMain(m *testing.M) { pgtest.Main(m) }

// scrapeAfterCreates serves db with metrics on, creates 10 posts through
// the benchmarking endpoint, and returns the /metrics text.
func scrapeAfterCreates(t *testing.T, m *metrics.Metrics, db interface {
	loremnews.Database
	metrics.Source
}) string {
	t.Helper()
	ds, _ := seed.Generate(seed.Config{Users: 5, Posts: 10, BcryptCost: 4})
	if err := db.ImportDataset(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	m.Watch(db)
	h, err := lnhttp.NewHandler(db, lnhttp.Config{Benchmark: db.Benchmark(), Observer: m})
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
	ops := httptest.NewServer(m.Handler())
	defer ops.Close()
	resp, err := http.Get(ops.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return string(body)
}
