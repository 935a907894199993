package setups

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlite"
	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/loremnews/loremnews/storetest"
)

// mustOpen opens the setup on a fresh file in a temporary directory (or
// on dsn), closing it when the test ends.
func mustOpen(tb testing.TB, name, dsn string) *sqlite.DB {
	tb.Helper()
	if dsn == "" {
		dsn = filepath.Join(tb.TempDir(), "test.sqlite3")
	}
	db, err := Open(context.Background(), name, sqlite.Config{DSN: dsn})
	if err != nil {
		tb.Fatalf("open %s on %s: %v", dsn, name, err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return db
}

// mustOpenEngine opens the setup's engine alone (no migrations), closing
// it when the test ends.
func mustOpenEngine(tb testing.TB, name, path string) sqlite.Engine {
	tb.Helper()
	open, ok := opener(name, sqlite.Config{DSN: path})
	if !ok {
		tb.Fatalf("no setup %q", name)
	}
	e, err := open(context.Background(), sqlite.Hooks{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// TestStore runs the suite every backend passes on each setup but the
// store's own, which package sqlite runs it on.
func TestStore(t *testing.T) {
	for _, name := range Names() {
		if name == Split {
			continue
		}
		t.Run(name, func(t *testing.T) {
			var except []string
			if name == Naive {
				// naive is the setup that fails under concurrent writes
				// (SQLITE_BUSY); http's TestNaiveProfileFails shows it.
				except = append(except, "ConcurrentWriters")
			}
			storetest.Run(t, func(tb testing.TB) loremnews.Database { return mustOpen(tb, name, "") }, except...)
		})
	}
}

// TestEverySetupOpensAndMigrates: each setup gets the whole schema and
// says which it is.
func TestEverySetupOpensAndMigrates(t *testing.T) {
	want, err := mustOpen(t, Split, "").Migrations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			db := mustOpen(t, name, "")
			migs, err := db.Migrations(t.Context())
			if err != nil || strings.Join(migs, ",") != strings.Join(want, ",") {
				t.Fatalf("migrations = %v, %v; want %v", migs, err, want)
			}
			u := storetest.MustCreateUser(t, db, "alice")
			if got, err := db.FindUserByID(t.Context(), u.ID); err != nil || got.ScreenName != "alice" {
				t.Fatalf("find = %+v, %v", got, err)
			}
			if got := db.Describe(); got != "setup "+name {
				t.Errorf("Describe() = %q, want %q", got, "setup "+name)
			}
		})
	}
}

// TestOpenRefuses: an unknown setup, and a DSN a baseline cannot honour,
// are refused, naming what is wrong.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		setup, dsn string
		want       string
	}{
		"unknown setup":      {"turbo", filepath.Join(dir, "a.db"), `unknown setup "turbo"`},
		"a postgres URL":     {Naive, "postgres://localhost/x", "is a postgres URL, not a SQLite file"},
		"the busy timeout":   {Enhanced, "file:" + filepath.Join(dir, "b.db") + "?_busy_timeout=1", "parameter _busy_timeout is set by the setup"},
		"the lock mode":      {Fair, "file:" + filepath.Join(dir, "c.db") + "?_txlock=deferred", "parameter _txlock is set by the setup"},
		"read-only":          {Immediate, "file:" + filepath.Join(dir, "d.db") + "?mode=ro", "mode=ro"},
		"in memory":          {Naive, ":memory:", "in-memory databases are not supported"},
		"a pragma with SQL":  {Naive, "file:" + filepath.Join(dir, "e.db") + "?_pragma=cache_size(1)%3Bdrop(2)", `bad _pragma "cache_size(1);drop(2)"`},
		"split's own checks": {Split, "file:" + filepath.Join(dir, "f.db") + "?_txlock=deferred", "parameter _txlock is set by the package"},
	} {
		t.Run(name, func(t *testing.T) {
			db, err := Open(t.Context(), tc.setup, sqlite.Config{DSN: tc.dsn})
			if err == nil {
				db.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// pragmaOnEveryConn reads PRAGMA name on each of the engine's read
// connections at once: every read waits inside its transaction until all
// have read, so each holds a connection of its own.
func pragmaOnEveryConn(tb testing.TB, e sqlite.Engine, name string) []string {
	tb.Helper()
	n := e.Stats().ReadPool.MaxOpenConnections
	var (
		mu      sync.Mutex
		vals    []string
		arrived sync.WaitGroup
		done    sync.WaitGroup
	)
	arrived.Add(n)
	errs := make([]error, n)
	for i := range n {
		done.Go(func() {
			// A read that fails before its function runs (a busy
			// connection's open) arrives too, or the others would wait
			// for it for ever.
			var arrive sync.Once
			defer arrive.Do(arrived.Done)
			read := func(ctx context.Context, q sqlite.Querier) error {
				var v string
				if err := q.QueryRow(ctx, "PRAGMA "+name).Scan(&v); err != nil {
					return err
				}
				mu.Lock()
				vals = append(vals, v)
				mu.Unlock()
				arrive.Do(arrived.Done)
				arrived.Wait()
				return nil
			}
			// With enhanced's busy timeout of 0 (its own retries are for
			// writes), connections opened at once may meet SQLITE_BUSY
			// while another builds the WAL's index: tried again.
			for try := 0; ; try++ {
				errs[i] = e.Read(context.Background(), read)
				if !errors.Is(errs[i], sqlitedb.ErrBusy) || try == 100 {
					break
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	done.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatalf("PRAGMA %s: %v", name, err)
		}
	}
	return vals
}

// TestSetupPragmas: each setup's connections carry the settings it
// claims; naive and enhanced the ones Rails's adapter sets, on Rails's
// pool of 5.
func TestSetupPragmas(t *testing.T) {
	rails := map[string]string{"journal_mode": "wal", "synchronous": "1", "foreign_keys": "1",
		"journal_size_limit": "67108864", "mmap_size": "134217728", "cache_size": "2000"}
	for name, want := range map[string]map[string]string{
		Naive:     rails,
		Enhanced:  rails,
		Immediate: {"synchronous": "1", "mmap_size": "0", "cache_size": "-20000"},
		Split:     {"synchronous": "1", "query_only": "1"},
		Batch:     {"synchronous": "1", "query_only": "1"},
		Durable:   {"synchronous": "2", "journal_mode": "wal", "mmap_size": "0"},
	} {
		t.Run(name, func(t *testing.T) {
			e := mustOpenEngine(t, name, filepath.Join(t.TempDir(), "p.db"))
			for pragma, v := range want {
				for _, got := range pragmaOnEveryConn(t, e, pragma) {
					if got != v {
						t.Errorf("PRAGMA %s = %s, want %s", pragma, got, v)
					}
				}
			}
		})
	}
	t.Run("naive's pool is Rails's default of 5", func(t *testing.T) {
		e := mustOpenEngine(t, Naive, filepath.Join(t.TempDir(), "p.db"))
		if n := len(pragmaOnEveryConn(t, e, "foreign_keys")); n != 5 {
			t.Fatalf("%d connections, want 5", n)
		}
	})
}

// TestEnhancedWaitsForTheLock: a writer of the enhanced setup that finds
// SQLite's write lock held by another connection retries (the gem's busy
// handler, run from Go) and commits once the lock is free.
func TestEnhancedWaitsForTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.sqlite3")
	waiter := mustOpen(t, Enhanced, path)
	holder := mustOpenEngine(t, Enhanced, path)
	held, release, released := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		released <- holder.Write(context.Background(), func(context.Context, sqlite.Execer) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	done := make(chan error, 1)
	go func() {
		_, err := waiter.CreateUser(context.Background(), "patient", "x")
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for waiter.Stats().BusyRetries == 0 {
		if time.Now().After(deadline) {
			close(release)
			t.Fatal("the waiting writer never met the held lock in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write after the lock was released: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting writer did not commit within 10 s of the release")
	}
	if _, err := waiter.FindUserByScreenName(context.Background(), "patient"); err != nil {
		t.Fatal(err)
	}
}
