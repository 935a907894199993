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

// MustOpenDB opens a fresh database file in a temporary directory and
// closes it when the test ends.
func MustOpenDB(tb testing.TB) *sqlite.DB {
	tb.Helper()
	return MustOpenDSN(tb, filepath.Join(tb.TempDir(), "test.sqlite3"))
}

// MustOpenDSN opens dsn, closing it at the end of the test.
func MustOpenDSN(tb testing.TB, dsn string) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(context.Background(), sqlite.Config{DSN: dsn})
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
	t.Run("OpensAndMigrates", func(t *testing.T) {
		db := MustOpenDB(t)
		migs, err := db.Migrations(context.Background())
		if err != nil || len(migs) == 0 {
			t.Fatalf("migrations = %v, %v", migs, err)
		}
		u := MustCreateUser(t, db, "alice")
		if got, err := db.FindUserByID(context.Background(), u.ID); err != nil || got.ScreenName != "alice" {
			t.Fatalf("find = %+v, %v", got, err)
		}
		if got, want := db.Describe(), "setup "+sqlite.ProductSetup; got != want {
			t.Errorf("Describe() = %q, want %q", got, want)
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
		db2 := MustOpenDSN(t, path)
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
		db := MustOpenDSN(t, dsn)
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
	db := MustOpenDSN(t, path)
	MustSeed(t, db, 10, 20)
	before := MustBeConsistent(t, db)
	db.Close()

	var pages int
	probe := MustOpenDSN(t, path)
	pages = probe.PageCount(t)
	probe.Close()
	full := MustOpenDSN(t, "file:"+path+"?_pragma=max_page_count("+fmt.Sprint(pages+2)+")")
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
