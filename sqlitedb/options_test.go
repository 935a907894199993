package sqlitedb_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// Open with nil options applies the defaults, and says so in Pragmas.
func TestOpenAppliesTheDefaults(t *testing.T) {
	db, path := openDB(t, nil)
	o := sqlitedb.OptionsForTest(db)
	if want := max(4, 2*runtime.GOMAXPROCS(0)); o.ReadConns != want {
		t.Errorf("ReadConns %d, want %d", o.ReadConns, want)
	}
	if o.Timeout != 5*time.Second || o.StatementCache != 64 {
		t.Errorf("Timeout %v, StatementCache %d; want 5s, 64", o.Timeout, o.StatementCache)
	}
	if o.MemoryMap || o.ConnectHook != nil {
		t.Errorf("options %+v; want SQLite's own reads, no hook", o)
	}
	if !slices.Equal(db.Pragmas(), sqlitedb.DefaultPragmas()) {
		t.Errorf("pragmas %v, want the defaults %v", db.Pragmas(), sqlitedb.DefaultPragmas())
	}
	if db.Path() != path {
		t.Errorf("Path %q, want %q", db.Path(), path)
	}
	if s := db.Stats(); s.ReadPool.MaxOpenConnections != o.ReadConns || s.WritePool.MaxOpenConnections != 1 {
		t.Errorf("pools: read %d connections, write %d; want %d, 1",
			s.ReadPool.MaxOpenConnections, s.WritePool.MaxOpenConnections, o.ReadConns)
	}
}

// pragmas reads, through rx, the pragmas its connection is set up with.
func pragmas(ctx context.Context, rx *sqlitedb.Rx) (map[string]string, error) {
	got := map[string]string{}
	for _, name := range []string{"journal_mode", "synchronous", "foreign_keys", "cache_size", "temp_store", "query_only", "busy_timeout", "mmap_size"} {
		var v string
		if err := rx.QueryRow(ctx, `PRAGMA `+name).Scan(&v); err != nil {
			return nil, err
		}
		got[name] = v
	}
	return got, nil
}

// A pragma in the DSN replaces the same one in Options.Pragmas, which
// replaces the default, on read and write connections alike; the read
// connections are query_only, the write connection is not.
func TestPragmasDSNOverOptionsOverDefaults(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pragmas.db")
	dsn := "file:" + path + "?_pragma=cache_size(-3000)"
	db, err := sqlitedb.Open(ctx, dsn, &sqlitedb.Options{Pragmas: []sqlitedb.Pragma{
		{Name: "cache_size", Value: "-2000"}, // the DSN's wins
		{Name: "synchronous", Value: "FULL"}, // replaces the default NORMAL
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(db.Close))

	// Defaults that neither replaced, then the replacements; SQLite's
	// answers: synchronous FULL is 2, temp_store MEMORY is 2.
	want := map[string]string{"journal_mode": "wal", "foreign_keys": "1", "temp_store": "2", "mmap_size": "0",
		"cache_size": "-3000", "synchronous": "2"}
	check := func(where string, got map[string]string, queryOnly string) {
		t.Helper()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: PRAGMA %s = %s, want %s", where, k, got[k], v)
			}
		}
		if got["query_only"] != queryOnly {
			t.Errorf("%s: PRAGMA query_only = %s, want %s", where, got["query_only"], queryOnly)
		}
	}
	var read, write map[string]string
	if err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) (err error) { read, err = pragmas(ctx, rx); return err }); err != nil {
		t.Fatal(err)
	}
	check("read connection", read, "1")
	if err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) (err error) { write, err = pragmas(ctx, &tx.Rx); return err }); err != nil {
		t.Fatal(err)
	}
	check("write connection", write, "0")
	// The write connection answers SQLITE_BUSY at once and the package
	// polls; the read connections wait in SQLite for Timeout.
	if write["busy_timeout"] != "0" || read["busy_timeout"] != "5000" {
		t.Errorf("busy_timeout: write %s, read %s; want 0 and 5000", write["busy_timeout"], read["busy_timeout"])
	}

	wantPragmas := sqlitedb.DefaultPragmas()
	for i, p := range wantPragmas {
		switch p.Name {
		case "cache_size":
			wantPragmas[i].Value = "-3000"
		case "synchronous":
			wantPragmas[i].Value = "FULL"
		}
	}
	if !slices.Equal(db.Pragmas(), wantPragmas) {
		t.Errorf("Pragmas() = %v, want %v", db.Pragmas(), wantPragmas)
	}
}

// Open refuses, with an error that names the problem, what it cannot
// open safely; and it creates nothing when it refuses a DSN or a pragma.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	notADB := filepath.Join(dir, "not-a-database")
	if err := os.WriteFile(notADB, []byte(strings.Repeat("this is not SQLite. ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "sub", "x.db")
	for _, c := range []struct {
		name string
		dsn  string
		opts *sqlitedb.Options
		want string // in the error
	}{
		{"empty", "", nil, "empty database path"},
		{"memory", ":memory:", nil, "in-memory"},
		{"memory URI", "file::memory:", nil, "in-memory"},
		{"memory mode", "file:" + file + "?mode=memory", nil, "in-memory"},
		{"another scheme's URL", "postgres://localhost/db", nil, "is a postgres URL"},
		{"directory", dir, nil, "is a directory"},
		{"not a database", notADB, nil, "not a SQLite database"},
		{"_txlock", "file:" + file + "?_txlock=immediate", nil, "_txlock"},
		{"_busy_timeout", "file:" + file + "?_busy_timeout=100", nil, "_busy_timeout"},
		{"_timeout", "file:" + file + "?_timeout=100", nil, "_timeout"},
		{"mode", "file:" + file + "?mode=rw", nil, "mode=rw"},
		{"read-only with Setup", "file:" + file + "?mode=ro", &sqlitedb.Options{Setup: func(context.Context, *sql.Conn) error { return nil }}, "Setup needs"},
		{"_pragma without a value", "file:" + file + "?_pragma=cache_size", nil, "bad _pragma"},
		{"_pragma smuggling SQL", "file:" + file + "?_pragma=cache_size(1%3BDROP)", nil, "bad _pragma"},
		{"pragma value smuggling SQL", file, &sqlitedb.Options{Pragmas: []sqlitedb.Pragma{{Name: "cache_size", Value: "1; DROP TABLE t"}}}, "bad pragma"},
		{"pragma name not a name", file, &sqlitedb.Options{Pragmas: []sqlitedb.Pragma{{Name: "Cache Size", Value: "1"}}}, "bad pragma"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := sqlitedb.Open(context.Background(), c.dsn, c.opts)
			if err == nil {
				db.Close()
				t.Fatalf("Open(%q) succeeded, want an error", c.dsn)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "sqlitedb: ") {
				t.Fatalf("Open(%q): %v; want an error of package sqlitedb that says %q", c.dsn, err, c.want)
			}
			if c.want != "is a directory" && c.want != "not a SQLite database" {
				if _, err := os.Stat(filepath.Dir(file)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a refused Open created %s", filepath.Dir(file))
				}
			}
		})
	}
}

// Setup runs once, on the write connection, outside any transaction,
// before Open returns and so before any write; it can run its own
// transactions and PRAGMAs that need none open.
func TestSetupRunsOnceBeforeAnyWrite(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	db, _ := openDB(t, &sqlitedb.Options{Setup: func(ctx context.Context, conn *sql.Conn) error {
		calls.Add(1)
		var queryOnly int
		if err := conn.QueryRowContext(ctx, `PRAGMA query_only`).Scan(&queryOnly); err != nil || queryOnly != 0 {
			return errors.New("Setup is not on the write connection")
		}
		for _, s := range []string{
			`PRAGMA foreign_keys = OFF`, // takes effect only outside a transaction
			`BEGIN IMMEDIATE`,
			`CREATE TABLE migrated (v TEXT)`,
			`INSERT INTO migrated VALUES ('by Setup')`,
			`COMMIT`,
			`PRAGMA foreign_keys = ON`,
		} {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}})
	if calls.Load() != 1 {
		t.Fatalf("Setup ran %d times before Open returned, want 1", calls.Load())
	}
	// The first write finds what Setup made.
	var v string
	err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		return tx.QueryRow(ctx, `SELECT v FROM migrated`).Scan(&v)
	})
	if err != nil || v != "by Setup" {
		t.Fatalf("the first write read %q, %v; want what Setup wrote", v, err)
	}
	mustExec(t, db, `INSERT INTO migrated VALUES ('later')`)
	if calls.Load() != 1 {
		t.Fatalf("Setup ran %d times, want 1", calls.Load())
	}
}

// If Setup fails, Open fails with its error and leaves nothing open: the
// file opens again at once. If Setup returns inside a transaction, Open
// fails too, and that transaction is rolled back.
func TestSetupFailureFailsOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "setup.db")

	errMigration := errors.New("migration 7 failed")
	db, err := sqlitedb.Open(ctx, path, &sqlitedb.Options{Setup: func(ctx context.Context, conn *sql.Conn) error {
		if _, err := conn.ExecContext(ctx, `CREATE TABLE t (v TEXT)`); err != nil {
			return err
		}
		return errMigration
	}})
	if db != nil || !errors.Is(err, errMigration) {
		t.Fatalf("Open with a failing Setup: database %v, error %v; want no database and Setup's error", db != nil, err)
	}

	db, err = sqlitedb.Open(ctx, path, &sqlitedb.Options{Setup: func(ctx context.Context, conn *sql.Conn) error {
		for _, s := range []string{`BEGIN IMMEDIATE`, `INSERT INTO t VALUES ('left in a transaction')`} {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}})
	if db != nil || err == nil || !strings.Contains(err.Error(), "inside a transaction") {
		t.Fatalf("Open with a Setup that left a transaction open: database %v, error %v; want an error saying so", db != nil, err)
	}

	// Nothing was left open: a write takes the lock at once, and the
	// transaction Setup left was rolled back.
	db, err = sqlitedb.Open(ctx, path, &sqlitedb.Options{Timeout: within})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(db.Close))
	mustExec(t, db, `INSERT INTO t VALUES ('after')`)
	if got := queryInt(t, db, `SELECT count(*) FROM t`); got != 1 {
		t.Fatalf("%d rows, want only the one written after", got)
	}
	if s := db.Stats(); s.BusyRetries != 0 {
		t.Fatalf("the write after a failed Open waited for a lock (%d busy retries): a connection was left open", s.BusyRetries)
	}
}

// OnWriteWait is told of each write that ran, and of no write that did
// not.
func TestOnWriteWait(t *testing.T) {
	var waits atomic.Int32
	db, _ := openDB(t, &sqlitedb.Options{OnWriteWait: func(d time.Duration) {
		if d < 0 {
			t.Errorf("a negative wait: %v", d)
		}
		waits.Add(1)
	}})
	createT(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	mustExec(t, db, `INSERT INTO t (n) VALUES (1)`)
	if err := db.Coalesce(context.Background(), insert(2)); err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, db, nil)
	if err := db.Write(ctx, insert(3)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a write with its context already cancelled: %v", err)
	}
	release()
	// CREATE TABLE, two writes and the held one; not the cancelled one.
	if got := waits.Load(); got != 4 {
		t.Fatalf("OnWriteWait told of %d writes, want 4", got)
	}
}

// A write that finds SQLite's write lock held by another connection (here
// a pool of its own; in production another process) waits for it,
// polling, and succeeds once it is free; if it stays taken past Timeout,
// the write fails with ErrBusy, counted.
func TestBusyPollWaitsForAnotherConnection(t *testing.T) {
	ctx := context.Background()
	db, path := openDB(t, &sqlitedb.Options{Timeout: 300 * time.Millisecond})
	createT(t, db)
	other := sqlitedb.OpenPoolForTest(path)
	defer closeWithin(t, ignoreError(other.Close))
	lock := func() (unlock func()) {
		conn, err := other.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			t.Fatal(err)
		}
		return func() {
			if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
				t.Error(err)
			}
			conn.Close()
		}
	}

	unlock := lock()
	err := db.Write(ctx, insert(1))
	unlock()
	if !errors.Is(err, sqlitedb.ErrBusy) || !sqlitedb.IsBusy(err) {
		t.Fatalf("a write with the lock held past Timeout: %v, want ErrBusy", err)
	}
	if s := db.Stats(); s.BusyErrors != 1 || s.BusyRetries == 0 {
		t.Fatalf("busy errors %d, retries %d; want 1 and some", s.BusyErrors, s.BusyRetries)
	}

	// Taken, then freed while the write polls: the write succeeds.
	unlock = lock()
	retries := db.Stats().BusyRetries
	errc := make(chan error, 1)
	go func() { errc <- db.Write(ctx, insert(2)) }()
	waitFor(t, "the write to find the lock taken", func() bool { return db.Stats().BusyRetries > retries })
	unlock()
	if err := receive(t, errc, "the write to get the lock"); err != nil {
		t.Fatalf("a write whose lock was freed while it polled: %v", err)
	}
	if got := queryInts(t, db, `SELECT n FROM t`); !slices.Equal(got, []int64{2}) {
		t.Fatalf("rows %v, want [2]", got)
	}
}

// mode=ro (and immutable=1) opens a database read-only: reads see the
// rows, a write is ErrReadOnly and changes nothing, the file's journal
// mode stays, Stats and Close work, and the file is not touched.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	db, path := openDB(t, nil)
	createT(t, db)
	for i := range 3 {
		if err := db.Write(ctx, insert(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, dsn := range []string{"file:" + path + "?mode=ro", "file:" + path + "?immutable=1"} {
		ro, err := sqlitedb.Open(ctx, dsn, nil)
		if err != nil {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
		if n := queryInt(t, ro, `SELECT count(*) FROM t`); n != 3 {
			t.Errorf("%s: %d rows, want 3", dsn, n)
		}
		err = ro.Write(ctx, insert(1))
		if !errors.Is(err, sqlitedb.ErrReadOnly) {
			t.Errorf("%s: Write: %v, want ErrReadOnly", dsn, err)
		}
		if err := ro.Coalesce(ctx, insert(1)); !errors.Is(err, sqlitedb.ErrReadOnly) {
			t.Errorf("%s: Coalesce: %v, want ErrReadOnly", dsn, err)
		}
		if s := ro.Stats(); s.Writer.Commits != 0 || s.ReadPool.OpenConnections == 0 {
			t.Errorf("%s: stats %+v", dsn, s)
		}
		if err := ro.Close(); err != nil {
			t.Errorf("%s: Close: %v", dsn, err)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("a read-only open changed the database file")
	}
	if _, err := sqlitedb.Open(ctx, "file:"+filepath.Join(t.TempDir(), "none.db")+"?mode=ro", nil); err == nil {
		t.Error("Open of a file that does not exist, read-only, succeeded")
	}
}

// A plain path names the file of that name, every character of it as it
// is: '#' and '%' are no URI syntax there, so x#1.db and x#2.db are two
// databases and b%41.db is not bA.db. A file: URI's %xx escapes stand for
// their bytes, as SQLite reads them; FileURI writes such a URI for any
// path, and DSNPath reads it back.
func TestPathsAreNotURIs(t *testing.T) {
	dir := t.TempDir()
	names := []string{"x#1.db", "x#2.db", "b%41.db", "q?.db", "sp ace.db"}
	for i, name := range names {
		path := filepath.Join(dir, name)
		dsn := path
		if strings.Contains(name, "?") { // a plain path's '?' starts its parameters
			dsn = sqlitedb.FileURI(path, nil)
		}
		if got, err := sqlitedb.DSNPath(dsn); err != nil || got != path {
			t.Fatalf("DSNPath(%q) = %q, %v; want %q", dsn, got, err, path)
		}
		db := openMore(t, dsn, nil)
		mustExec(t, db, `CREATE TABLE t (n INTEGER)`)
		mustExec(t, db, `INSERT INTO t VALUES (?)`, i)
	}
	for i, name := range names {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		uri := sqlitedb.FileURI(path, url.Values{"mode": {"ro"}})
		db := openMore(t, uri, nil)
		if got := queryInts(t, db, `SELECT n FROM t`); len(got) != 1 || got[0] != int64(i) {
			t.Fatalf("%s through %s holds %v, want [%d]: two names opened one file", name, uri, got, i)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if base, _, _ := strings.Cut(e.Name(), "-"); !slices.Contains(names, base) && !slices.Contains(names, e.Name()) {
			t.Errorf("a file no DSN named: %s", e.Name())
		}
	}
	// An empty authority, or localhost, as SQLite takes them.
	for _, uri := range []string{"file://" + filepath.Join(dir, "x#1.db"), "file://localhost" + filepath.Join(dir, "x#1.db")} {
		uri = strings.ReplaceAll(uri, "#", "%23")
		db := openMore(t, uri+"?mode=ro", nil)
		if got := queryInts(t, db, `SELECT n FROM t`); len(got) != 1 || got[0] != 0 {
			t.Fatalf("%s holds %v, want x#1.db's [0]", uri, got)
		}
	}
	if _, err := sqlitedb.Open(context.Background(), "file://elsewhere/"+filepath.Join(dir, "a.db"), nil); err == nil || !strings.Contains(err.Error(), "elsewhere") {
		t.Fatalf("a file: URI naming a host: %v; want an error naming it", err)
	}
}

// A read-only open's errors speak of reading: a missing file is one to
// check exists and is readable, not writable.
func TestReadOnlyOpenErrorsSpeakOfReading(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.db")
	_, err := sqlitedb.Open(context.Background(), "file:"+missing+"?mode=ro", nil)
	if err == nil || !strings.Contains(err.Error(), "check that it exists and is readable") || strings.Contains(err.Error(), "writable") {
		t.Fatalf("read-only open of a missing file: %v; want it to say to check it exists and is readable", err)
	}
}
