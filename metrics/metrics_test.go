package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
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
		`loremnews_db_profile_info{profile="postgres"} 1`,
		`loremnews_db_pool_open_connections{pool="postgres"}`,
		`loremnews_postgres_deadlocks_total 0`,
		`loremnews_postgres_write_retries_total 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, sqliteOnly := range []string{"loremnews_writer_queue_depth", "loremnews_sqlite_busy_errors_total"} {
		if strings.Contains(text, sqliteOnly) {
			t.Errorf("metrics on PostgreSQL show SQLite's %s", sqliteOnly)
		}
	}
}

// fakeDB reports fixed stats.
type fakeDB loremnews.DatabaseStats

func (f fakeDB) DatabaseStats() loremnews.DatabaseStats { return loremnews.DatabaseStats(f) }

// TestDatabaseStatsNames: each part of a database's stats is exported under
// its metric names and labels, and a part the database lacks is left out.
func TestDatabaseStatsNames(t *testing.T) {
	for name, tc := range map[string]struct {
		stats loremnews.DatabaseStats
		want  []string
	}{
		"sqlite": {
			stats: loremnews.DatabaseStats{Setup: "split", Lock: &loremnews.LockStats{BusyRetries: 7, BusyErrors: 2},
				WriterQueue: &loremnews.WriterQueueStats{Depth: 3, MaxDepth: 19, Turns: 1000, Abandoned: 4, Commits: 600},
				Pools:       []loremnews.PoolStats{{Name: "write", Open: 1, InUse: 1, Waits: 5, WaitTime: 1500 * time.Millisecond}, {Name: "read", Open: 8, InUse: 2}}},
			want: []string{
				`loremnews_db_pool_in_use_connections{pool="read"} 2`,
				`loremnews_db_pool_in_use_connections{pool="write"} 1`,
				`loremnews_db_pool_open_connections{pool="read"} 8`,
				`loremnews_db_pool_open_connections{pool="write"} 1`,
				`loremnews_db_pool_wait_seconds_total{pool="read"} 0`,
				`loremnews_db_pool_wait_seconds_total{pool="write"} 1.5`,
				`loremnews_db_pool_waits_total{pool="read"} 0`,
				`loremnews_db_pool_waits_total{pool="write"} 5`,
				`loremnews_db_profile_info{profile="split"} 1`,
				`loremnews_sqlite_busy_errors_total 2`,
				`loremnews_sqlite_busy_retries_total 7`,
				`loremnews_writer_commits_total 600`,
				`loremnews_writer_queue_abandoned_total 4`,
				`loremnews_writer_queue_depth 3`,
				`loremnews_writer_queue_max_depth 19`,
				`loremnews_writer_queue_turns_total 1000`,
			},
		},
		"postgres": {
			stats: loremnews.DatabaseStats{Setup: "postgres", Restarts: &loremnews.RestartStats{Retries: 6, Deadlocks: 1},
				Pools: []loremnews.PoolStats{{Name: "postgres", Open: 4, InUse: 3, Waits: 2, WaitTime: 250 * time.Millisecond}}},
			want: []string{
				`loremnews_db_pool_in_use_connections{pool="postgres"} 3`,
				`loremnews_db_pool_open_connections{pool="postgres"} 4`,
				`loremnews_db_pool_wait_seconds_total{pool="postgres"} 0.25`,
				`loremnews_db_pool_waits_total{pool="postgres"} 2`,
				`loremnews_db_profile_info{profile="postgres"} 1`,
				`loremnews_postgres_deadlocks_total 1`,
				`loremnews_postgres_write_retries_total 6`,
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			m := metrics.New()
			m.Watch(fakeDB(tc.stats))
			w := httptest.NewRecorder()
			m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
			var got []string
			for _, line := range strings.Split(w.Body.String(), "\n") {
				if strings.HasPrefix(line, "loremnews_") && !strings.HasPrefix(line, "loremnews_write_wait_") && !strings.HasPrefix(line, "loremnews_http_") {
					got = append(got, line)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("database metrics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestMain(m *testing.M) { pgtest.Main(m) }

// scrapeAfterCreates serves db with metrics on, creates 10 posts through
// the benchmarking endpoint, and returns the /metrics text.
func scrapeAfterCreates(t *testing.T, m *metrics.Metrics, db loremnews.Database) string {
	t.Helper()
	ds, _ := seed.Generate(seed.Config{Users: 5, Posts: 10, BcryptCost: 4})
	if err := db.ImportDataset(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	m.Watch(db)
	h, err := lnhttp.NewHandler(db, lnhttp.Config{Benchmark: db.Benchmark(), Observer: m, Metrics: m.Handler()})
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
	return string(body)
}
