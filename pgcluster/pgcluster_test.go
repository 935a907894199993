package pgcluster_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/loremnews/loremnews/pgcluster"
	"github.com/loremnews/loremnews/pgcluster/pgtest"
)

// TestStartStop starts a cluster with the test settings, checks they took
// effect, stops it, and checks nothing is left: no server, no directory.
func TestStartStop(t *testing.T) {
	pgtest.SkipIfMissing(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := pgcluster.Start(ctx, pgcluster.Fast)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"fsync": "off", "shared_buffers": "128MB", "jit": "off", "listen_addresses": ""} {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	conn.Close(ctx)
	dir := c.Dir
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cluster directory %s left behind: %v", dir, err)
	}
	if conn, err := pgx.Connect(ctx, c.URL+"&connect_timeout=2"); err == nil {
		conn.Close(ctx)
		t.Error("server still answers after Stop")
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestDatabaseURL(t *testing.T) {
	got := pgcluster.DatabaseURL("postgres://postgres@/postgres?host=/tmp/x&port=5432", "lorem")
	if want := "postgres://postgres@/lorem?host=/tmp/x&port=5432"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
