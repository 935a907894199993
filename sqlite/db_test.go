package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlite"
	"github.com/loremnews/loremnews/storetest"
)

// MustOpenDB opens a fresh database file in a temporary directory with the
// given profile ("" for the default) and closes it when the test ends.
func MustOpenDB(tb testing.TB, profile sqlite.Profile) *sqlite.DB {
	tb.Helper()
	return MustOpenDSN(tb, filepath.Join(tb.TempDir(), "test.sqlite3"), profile)
}

// MustOpenDSN opens dsn with the profile, closing it at the end of the test.
func MustOpenDSN(tb testing.TB, dsn string, profile sqlite.Profile) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(context.Background(), sqlite.Config{DSN: dsn, Profile: profile})
	if err != nil {
		tb.Fatalf("open %s: %v", dsn, err)
	}
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return db
}

// The helpers of the shared suite, for this package's own tests.
var (
	MustSeed          = storetest.MustSeed
	MustBeConsistent  = storetest.MustBeConsistent
	MustCreateUser    = storetest.MustCreateUser
	MustCreatePost    = storetest.MustCreatePost
	MustCreateComment = storetest.MustCreateComment
	wantCode          = storetest.WantCode
)

func TestOpen(t *testing.T) {
	t.Run("EveryProfileOpensAndMigrates", func(t *testing.T) {
		for _, name := range sqlite.ProfileNames() {
			t.Run(name, func(t *testing.T) {
				db := MustOpenDB(t, sqlite.Profile(name))
				migs, err := db.Migrations(context.Background())
				if err != nil || len(migs) == 0 {
					t.Fatalf("migrations = %v, %v", migs, err)
				}
				u := MustCreateUser(t, db, "alice")
				if got, err := db.FindUserByID(context.Background(), u.ID); err != nil || got.ScreenName != "alice" {
					t.Fatalf("find = %+v, %v", got, err)
				}
			})
		}
	})

	t.Run("ReopenKeepsDataAndDoesNotReapplyMigrations", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "re.sqlite3")
		db, err := sqlite.Open(context.Background(), sqlite.Config{DSN: path})
		if err != nil {
			t.Fatal(err)
		}
		MustCreateUser(t, db, "bob")
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db2 := MustOpenDSN(t, path, "")
		if _, err := db2.FindUserByScreenName(context.Background(), "bob"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("BadInput", func(t *testing.T) {
		dir := t.TempDir()
		for name, tc := range map[string]struct {
			cfg  sqlite.Config
			want string // in the error: what is wrong
		}{
			"directory":      {sqlite.Config{DSN: dir}, "is a directory, not a database file"},
			"memory":         {sqlite.Config{DSN: ":memory:"}, "in-memory databases are not supported"},
			"empty":          {sqlite.Config{DSN: ""}, "empty database path"},
			"postgres":       {sqlite.Config{DSN: "postgres://localhost/x"}, "is a postgres URL, not a SQLite file"},
			"semicolon":      {sqlite.Config{DSN: "file:" + filepath.Join(dir, "a.db") + "?_pragma=cache_size;drop"}, "bad parameters"},
			"bad pragma":     {sqlite.Config{DSN: "file:" + filepath.Join(dir, "a.db") + "?_pragma=cache_size(1)%3Bdrop(2)"}, `bad _pragma "cache_size(1);drop(2)"`},
			"reserved param": {sqlite.Config{DSN: "file:" + filepath.Join(dir, "b.db") + "?_txlock=deferred"}, "parameter _txlock is set by the package"},
			"profile":        {sqlite.Config{DSN: filepath.Join(dir, "c.db"), Profile: "turbo"}, `unknown profile "turbo"`},
		} {
			t.Run(name, func(t *testing.T) {
				db, err := sqlite.Open(context.Background(), tc.cfg)
				if err == nil {
					db.Close()
					t.Fatal("Open succeeded, want error")
				}
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Open: %v, want an error saying %q", err, tc.want)
				}
			})
		}
	})

	t.Run("PragmasFromDSNReachEveryConnection", func(t *testing.T) {
		dsn := "file:" + filepath.Join(t.TempDir(), "p.sqlite3") + "?_pragma=cache_size(-12345)"
		db := MustOpenDSN(t, dsn, sqlite.ProfileSplit)
		for _, p := range []struct {
			name string
			want string
		}{
			{"cache_size", "-12345"}, {"journal_mode", "wal"}, {"foreign_keys", "1"}, {"synchronous", "1"},
			{"busy_timeout", "5000"}, {"query_only", "1"}, {"temp_store", "2"},
		} {
			for _, v := range db.ReadPragmaOnEveryConn(t, p.name) {
				if v != p.want {
					t.Errorf("read conn PRAGMA %s = %s, want %s", p.name, v, p.want)
				}
			}
		}
	})
}

func TestWriteTimeoutIsUnavailable(t *testing.T) {
	db, err := sqlite.Open(context.Background(), sqlite.Config{DSN: filepath.Join(t.TempDir(), "t.sqlite3"), WriterTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	release := db.HoldWriterTurn(t)
	_, err = db.CreateUser(context.Background(), "late", "x")
	release()
	wantCode(t, err, loremnews.EUNAVAILABLE)
	if s := db.Stats(); s.Writer.Abandoned != 1 {
		t.Fatalf("abandoned = %d, want 1", s.Writer.Abandoned)
	}
	MustCreateUser(t, db, "ontime")
}

// TestDiskFull: when the database cannot grow (here: max_page_count, which
// fails writes exactly as a full disk does, with SQLITE_FULL), a write is a
// clear "unavailable" error, nothing half-written stays, and what was there
// is intact.
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "full.sqlite3")
	db := MustOpenDSN(t, path, "")
	MustSeed(t, db, 10, 20)
	before := MustBeConsistent(t, db)
	db.Close()

	var pages int
	probe := MustOpenDSN(t, path, "")
	pages = probe.PageCount(t)
	probe.Close()
	full := MustOpenDSN(t, "file:"+path+"?_pragma=max_page_count("+fmt.Sprint(pages+2)+")", "")
	var err error
	created := 0
	for i := range 1000 {
		_, err = full.CreatePost(ctx, 1, loremnews.PostInput{Title: fmt.Sprintf("Filling post %d", i), Description: strings.Repeat("x", 3000)})
		if err != nil {
			break
		}
		created++
	}
	wantCode(t, err, loremnews.EUNAVAILABLE)
	if !strings.Contains(loremnews.ErrorMessage(err), "database is full") {
		t.Fatalf("message %q", loremnews.ErrorMessage(err))
	}
	after := MustBeConsistent(t, full)
	if after.Posts != before.Posts+created {
		t.Fatalf("posts %d, want %d + %d created before the disk filled", after.Posts, before.Posts, created)
	}
}

// TestProfilePragmas: each profile's connections carry the settings it
// claims; naive and enhanced the ones Rails's adapter sets.
func TestProfilePragmas(t *testing.T) {
	rails := map[string]string{"journal_mode": "wal", "synchronous": "1", "foreign_keys": "1",
		"journal_size_limit": "67108864", "mmap_size": "134217728", "cache_size": "2000"}
	for profile, want := range map[sqlite.Profile]map[string]string{
		sqlite.ProfileNaive:    rails,
		sqlite.ProfileEnhanced: rails,
		sqlite.ProfileSplit:    {"synchronous": "1"},
		sqlite.ProfileDurable:  {"synchronous": "2", "journal_mode": "wal", "mmap_size": "0"},
	} {
		t.Run(string(profile), func(t *testing.T) {
			db := MustOpenDB(t, profile)
			for name, v := range want {
				for _, got := range db.ReadPragmaOnEveryConn(t, name) {
					if got != v {
						t.Errorf("PRAGMA %s = %s, want %s", name, got, v)
					}
				}
			}
		})
	}
	t.Run("naive's pool is Rails's default of 5", func(t *testing.T) {
		if n := len(MustOpenDB(t, sqlite.ProfileNaive).ReadPragmaOnEveryConn(t, "foreign_keys")); n != 5 {
			t.Fatalf("%d connections, want 5", n)
		}
	})
}

// TestEnhancedWaitsForTheLock: a writer of the enhanced profile that finds
// SQLite's write lock held by another connection retries (the gem's busy
// handler, run from Go) and commits once the lock is free.
func TestEnhancedWaitsForTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.sqlite3")
	holder := MustOpenDSN(t, path, sqlite.ProfileEnhanced)
	waiter := MustOpenDSN(t, path, sqlite.ProfileEnhanced)
	release := holder.HoldWriterTurn(t)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.CreateUser(context.Background(), "patient", "x")
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for waiter.Stats().BusyRetries == 0 {
		if time.Now().After(deadline) {
			release()
			t.Fatal("the waiting writer never met the held lock in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write after the lock was released: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting writer did not commit within 10 s of the release")
	}
	if _, err := holder.FindUserByScreenName(context.Background(), "patient"); err != nil {
		t.Fatal(err)
	}
}

// TestDescribeNamesTheProfile: the start-up line says which connection
// setup serves the site, through the Database interface alone.
func TestDescribeNamesTheProfile(t *testing.T) {
	for _, profile := range []sqlite.Profile{sqlite.ProfileNaive, sqlite.ProfileSplit} {
		var db loremnews.Database = MustOpenDB(t, profile)
		if got, want := db.Describe(), "profile "+string(profile); got != want {
			t.Errorf("Describe() = %q, want %q", got, want)
		}
	}
}
