// Package pgtest gives tests PostgreSQL databases: each test gets a fresh
// database of its own on the server named by $LOREM_TEST_POSTGRES (a
// superuser URL), or, when that is unset, on a throw-away cluster this test
// binary starts on first use and stops when its tests are done (see Main).
// Without PostgreSQL installed a test that needs it skips, naming what to
// install, or fails when $LOREM_REQUIRE_ALL=1 (as under `make test`), so CI
// never passes by skipping.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/loremnews/loremnews/internal/testenv"
	"github.com/loremnews/loremnews/pgcluster"
)

var (
	once     sync.Once
	adminURL string
	cluster  *pgcluster.Cluster
	startErr error
	serial   atomic.Int64
)

// Main runs the package's tests, then stops the cluster if one was started.
// Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the cluster if this process started one; for a TestMain that
// does more than Main.
func Stop() {
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stop cluster:", err)
		}
	}
}

// SkipIfMissing ends the test, through testenv.Missing, unless there is a
// PostgreSQL to test on: $LOREM_TEST_POSTGRES, or the server programs a
// throw-away cluster is started from. For tests that start a cluster of
// their own; AdminURL and NewDatabase call it.
func SkipIfMissing(tb testing.TB) {
	tb.Helper()
	if os.Getenv("LOREM_TEST_POSTGRES") != "" {
		return
	}
	bin, err := pgcluster.FindBin()
	if err == nil {
		if _, statErr := os.Stat(filepath.Join(bin, "initdb")); statErr != nil {
			err = fmt.Errorf("no initdb in %s (LOREM_PG_BIN): %w", bin, statErr)
		}
	}
	if err != nil {
		testenv.Missing(tb, "needs PostgreSQL: %v", err)
	}
}

// AdminURL returns a superuser URL of the test server, starting the
// throw-away cluster if needed.
func AdminURL(tb testing.TB) string {
	tb.Helper()
	SkipIfMissing(tb)
	once.Do(func() {
		if adminURL = os.Getenv("LOREM_TEST_POSTGRES"); adminURL != "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cluster, startErr = pgcluster.Start(ctx, pgcluster.Fast)
		if startErr == nil {
			adminURL = cluster.URL
		}
	})
	if startErr != nil {
		tb.Fatalf("PostgreSQL for the tests: %v", startErr)
	}
	return adminURL
}

// NewDatabase creates an empty database for this test, dropped when the
// test ends (after the test's own cleanups, which close its pools), and
// returns its URL.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	admin := AdminURL(tb)
	name := fmt.Sprintf("lorem_test_%d_%d", os.Getpid(), serial.Add(1))
	exec(tb, admin, `CREATE DATABASE `+name)
	tb.Cleanup(func() { exec(tb, admin, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`) })
	return pgcluster.DatabaseURL(admin, name)
}

func exec(tb testing.TB, url, sql string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		tb.Fatalf("pgtest: %s: %v", sql, err)
	}
}
