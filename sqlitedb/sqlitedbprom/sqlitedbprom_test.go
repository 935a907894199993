package sqlitedbprom_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/loremnews/loremnews/sqlitedb/sqlitedbprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func open(t *testing.T, opts sqlitedb.Options) *sqlitedb.DB {
	t.Helper()
	opts.Setup = func(ctx context.Context, conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)`)
		return err
	}
	db, err := sqlitedb.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"), &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// work runs n writes, one after another, and one read.
func work(t *testing.T, db *sqlitedb.DB, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO t (v) VALUES (?)`, i)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		var count int
		return rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&count)
	}); err != nil {
		t.Fatal(err)
	}
}

// With the default options every metric is there, and the counters count
// what the database did.
func TestCollectorDefaults(t *testing.T) {
	db := open(t, sqlitedb.Options{})
	work(t, db, 5)
	c := sqlitedbprom.NewCollector(db, "test")

	// 6 writer metrics, 2 busy, 4 checkpoint kinds, their errors, whether
	// they stopped and the signals another's checkpoint answered, 2 mapped
	// files, 4 for each of the 2 pools, 2 for the reads' own queue.
	if n := testutil.CollectAndCount(c); n != 6+3+7+2+2*4+2+6 {
		t.Errorf("CollectAndCount = %d, want %d", n, 6+3+7+2+2*4+2+6)
	}
	healthy := `# HELP test_sqlite_checkpoints_stopped 1 once a sync of the database file failed: no checkpoint runs any more, the WAL keeps every frame, and opening the database again copies them (restart the process).
# TYPE test_sqlite_checkpoints_stopped gauge
test_sqlite_checkpoints_stopped 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(healthy), "test_sqlite_checkpoints_stopped"); err != nil {
		t.Errorf("a healthy database: %v", err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil {
		t.Fatal(err)
	} else {
		for _, p := range problems {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
	// A pedantic registry checks that every metric collected was described.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}

	const want = `
# HELP test_sqlite_writer_writes_total Writes the writer ran, ordinary and coalesced.
# TYPE test_sqlite_writer_writes_total counter
test_sqlite_writer_writes_total 5
# HELP test_sqlite_writer_commits_total Transactions the writer committed (coalesced writes share one).
# TYPE test_sqlite_writer_commits_total counter
test_sqlite_writer_commits_total 5
# HELP test_sqlite_writer_abandoned_total Writes whose caller left (context ended, Timeout passed) before their turn; they never ran.
# TYPE test_sqlite_writer_abandoned_total counter
test_sqlite_writer_abandoned_total 0
# HELP test_sqlite_writer_process_queue 1 if the writers of all processes using the file take turns in arrival order; 0 if they poll for SQLite's lock.
# TYPE test_sqlite_writer_process_queue gauge
test_sqlite_writer_process_queue 1
# HELP test_sqlite_writer_queue_depth Writes waiting for the writer now.
# TYPE test_sqlite_writer_queue_depth gauge
test_sqlite_writer_queue_depth 0
# HELP test_sqlite_busy_errors_total Reads and writes that failed with ErrBusy: the database stayed locked past Timeout.
# TYPE test_sqlite_busy_errors_total counter
test_sqlite_busy_errors_total 0
# HELP test_sqlite_timeouts_total Reads and writes that waited Timeout for their connection or their turn and did not run (ErrTimeout).
# TYPE test_sqlite_timeouts_total counter
test_sqlite_timeouts_total 0
# HELP test_sqlite_pool_open_connections Open connections, by pool (read, write).
# TYPE test_sqlite_pool_open_connections gauge
test_sqlite_pool_open_connections{pool="read"} 1
test_sqlite_pool_open_connections{pool="write"} 1
# HELP test_sqlite_pool_in_use_connections Connections in use, by pool.
# TYPE test_sqlite_pool_in_use_connections gauge
test_sqlite_pool_in_use_connections{pool="read"} 0
test_sqlite_pool_in_use_connections{pool="write"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"test_sqlite_writer_writes_total", "test_sqlite_writer_commits_total", "test_sqlite_writer_abandoned_total",
		"test_sqlite_writer_queue_depth", "test_sqlite_busy_errors_total", "test_sqlite_timeouts_total", "test_sqlite_writer_process_queue",
		"test_sqlite_pool_open_connections", "test_sqlite_pool_in_use_connections"); err != nil {
		t.Error(err)
	}

	// The counters follow the database: three more writes.
	work(t, db, 3)
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP test_sqlite_writer_writes_total Writes the writer ran, ordinary and coalesced.
# TYPE test_sqlite_writer_writes_total counter
test_sqlite_writer_writes_total 8
`), "test_sqlite_writer_writes_total"); err != nil {
		t.Error(err)
	}
}

// The checkpoint counters are labelled by kind, all four reported from the
// start.
func TestCollectorCheckpointKinds(t *testing.T) {
	db := open(t, sqlitedb.Options{})
	c := sqlitedbprom.NewCollector(db, "app")
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP app_sqlite_checkpoints_total WAL checkpoints, by kind: background (PASSIVE, own connection), inline (the writer finishing a background one), restart (the writer, past the hard limit), truncate (once writes stopped).
# TYPE app_sqlite_checkpoints_total counter
app_sqlite_checkpoints_total{kind="background"} 0
app_sqlite_checkpoints_total{kind="inline"} 0
app_sqlite_checkpoints_total{kind="restart"} 0
app_sqlite_checkpoints_total{kind="truncate"} 0
`), "app_sqlite_checkpoints_total"); err != nil {
		t.Error(err)
	}
}
