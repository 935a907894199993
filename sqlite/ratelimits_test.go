package sqlite_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestRateLimitsAcrossProcesses: two stores open on one file, as two
// serve processes would be, share each key's count, and a store opened
// again (a restart) still holds it.
func TestRateLimitsAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "limits.sqlite3")
	a, b := MustOpenDSN(t, path), MustOpenDSN(t, path)
	now := time.Now()
	key := sha256.Sum256([]byte("account"))
	for i, db := range []interface {
		ReserveAttempt(context.Context, []byte, int, time.Duration, time.Time) (bool, time.Duration, error)
	}{a, b, a, b} {
		ok, _, err := db.ReserveAttempt(ctx, key[:], 3, time.Hour, now)
		if err != nil {
			t.Fatal(err)
		}
		if want := i < 3; ok != want {
			t.Fatalf("attempt %d: ok %v, want %v (3 in all, from either store)", i+1, ok, want)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c := MustOpenDSN(t, path)
	if ok, wait, err := c.ReserveAttempt(ctx, key[:], 3, time.Hour, now.Add(time.Minute)); err != nil || ok || wait != 59*time.Minute {
		t.Fatalf("reopened: ok %v, wait %v, %v; want refused for 59m", ok, wait, err)
	}
}

// TestRateLimitRowsPurged: each reserve deletes up to 100 rows whose
// window has ended, so rows left by keys never seen again do not pile up.
func TestRateLimitRowsPurged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "limits.sqlite3")
	db := MustOpenDSN(t, path)
	now := time.Now()
	reserve := func(name string, at time.Time) {
		t.Helper()
		key := sha256.Sum256([]byte(name))
		if ok, _, err := db.ReserveAttempt(ctx, key[:], 5, time.Minute, at); err != nil || !ok {
			t.Fatalf("reserve %s: ok %v, %v", name, ok, err)
		}
	}
	for i := range 150 {
		reserve(fmt.Sprint("key ", i), now)
	}
	conn, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rowsLeft := func() (n int) {
		t.Helper()
		if err := conn.QueryRow(`SELECT count(*) FROM rate_limits`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rowsLeft(); n != 150 {
		t.Fatalf("%d rows, want 150: rows within their window were purged", n)
	}
	later := now.Add(time.Minute)
	reserve("a new key", later)
	if n := rowsLeft(); n != 51 {
		t.Fatalf("after one reserve past their window: %d rows, want 51 (100 purged, 1 added)", n)
	}
	reserve("another new key", later)
	if n := rowsLeft(); n != 2 {
		t.Fatalf("after a second: %d rows, want 2", n)
	}
}
