// Package pgtest gives tests PostgreSQL databases: each test gets a fresh
// database of its own on the server named by $LOREM_TEST_POSTGRES (a
// superuser URL), or, when that is unset, on a throw-away cluster this test
// binary starts on first use and stops when its tests are done (see Main).
// Without PostgreSQL installed the tests fail, naming what to install:
// they are never skipped.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// AdminURL returns a superuser URL of the test server, starting the
// throw-away cluster if needed.
func AdminURL(tb testing.TB) string {
	tb.Helper()
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
