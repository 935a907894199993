package sqlitedb_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/loremnews/loremnews/sqlitedb"
)

// testMigrations are a small schema's history: two tables, then a rebuild of
// the referenced one (foreign keys off), which must keep every row.
var testMigrations = fstest.MapFS{
	"migrations/0001_authors.sql": {Data: []byte(`CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
		CREATE TABLE books (id INTEGER PRIMARY KEY, author_id INTEGER NOT NULL REFERENCES authors (id) ON DELETE CASCADE, title TEXT NOT NULL);`)},
	"migrations/0002_seed.sql": {Data: []byte(`INSERT INTO authors (id, name) VALUES (1, 'Ada');
		INSERT INTO books (author_id, title) VALUES (1, 'Notes');`)},
	"migrations/0003_rebuild_authors.sql": {Data: []byte(sqlitedb.ForeignKeysOff + `CREATE TABLE authors_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL CHECK (name <> ''));
		INSERT INTO authors_new SELECT id, name FROM authors;
		DROP TABLE authors;
		ALTER TABLE authors_new RENAME TO authors;`)},
	"migrations/README": {Data: []byte("not a migration")},
}

func openMigrated(t *testing.T, path string, fsys fstest.MapFS) (*sqlitedb.DB, error) {
	t.Helper()
	return sqlitedb.Open(context.Background(), path, &sqlitedb.Options{Setup: sqlitedb.Migrate(fsys, "migrations/*.sql")})
}

func versions(t *testing.T, db *sqlitedb.DB) []string {
	t.Helper()
	return queryColumn[string](t, db, `SELECT version FROM `+sqlitedb.MigrationsTable+` ORDER BY version`)
}

// Migrations apply in order, once each, are recorded, and the one that
// rebuilds a referenced table with foreign keys off keeps its rows and
// the references to them; opening again applies nothing, and a migration
// added later is applied alone.
func TestMigrateAppliesInOrderOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := openMigrated(t, path, testMigrations)
	if err != nil {
		t.Fatal(err)
	}
	want := "migrations/0001_authors.sql migrations/0002_seed.sql migrations/0003_rebuild_authors.sql"
	if got := strings.Join(versions(t, db), " "); got != want {
		t.Fatalf("recorded %q, want %q", got, want)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM books JOIN authors ON authors.id = books.author_id`); n != 1 {
		t.Fatalf("%d books with their author after the rebuild, want 1", n)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM pragma_foreign_keys`); n != 1 {
		t.Errorf("foreign_keys is off after the migration that turned it off")
	}
	db.Close()

	more := fstest.MapFS{}
	for k, v := range testMigrations {
		more[k] = v
	}
	more["migrations/0004_more.sql"] = &fstest.MapFile{Data: []byte(`INSERT INTO authors (id, name) VALUES (2, 'Grace');`)}
	db, err = openMigrated(t, path, more)
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(db.Close))
	if n := queryInt(t, db, `SELECT count(*) FROM authors`); n != 2 {
		t.Fatalf("%d authors after opening again with one more migration, want 2 (the seed applied once)", n)
	}
	if got := len(versions(t, db)); got != 4 {
		t.Fatalf("%d testMigrations recorded, want 4", got)
	}
}

// A migration that fails leaves nothing of itself: no half-changed
// schema, no record; Open fails naming it; the ones before it stay.
// One that leaves a row pointing nowhere with foreign keys off fails its
// foreign key check and rolls back.
func TestMigrateFailureLeavesNothing(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"error", `CREATE TABLE half (x); INSERT INTO nowhere VALUES (1);`, "no such table: nowhere"},
		{"dangling", sqlitedb.ForeignKeysOff + `CREATE TABLE half (x); DELETE FROM authors;`, "foreign key check"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for k, v := range testMigrations {
				fsys[k] = v
			}
			fsys["migrations/0004_bad.sql"] = &fstest.MapFile{Data: []byte(c.body)}
			path := filepath.Join(t.TempDir(), "m.db")
			if db, err := openMigrated(t, path, fsys); err == nil {
				db.Close()
				t.Fatal("Open succeeded with a failing migration")
			} else if !strings.Contains(err.Error(), "0004_bad.sql") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open: %v, want an error naming the migration and saying %q", err, c.want)
			}
			db, err := openMigrated(t, path, testMigrations)
			if err != nil {
				t.Fatal(err)
			}
			defer closeWithin(t, ignoreError(db.Close))
			if got := len(versions(t, db)); got != 3 {
				t.Errorf("%d testMigrations recorded, want the 3 before the failing one", got)
			}
			if n := queryInt(t, db, `SELECT count(*) FROM sqlite_schema WHERE name = 'half'`); n != 0 {
				t.Errorf("the failing migration's table is there")
			}
			if n := queryInt(t, db, `SELECT count(*) FROM authors`); n != 1 {
				t.Errorf("%d authors, want the 1 the failed migration deleted and rolled back", n)
			}
		})
	}
}

// Several DBs opening one new file at once apply each migration once.
func TestMigrateConcurrentOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	var wg sync.WaitGroup
	dbs := make([]*sqlitedb.DB, 4)
	errs := make([]error, 4)
	for i := range dbs {
		wg.Go(func() { dbs[i], errs[i] = openMigrated(t, path, testMigrations) })
	}
	waitGroup(t, &wg, "the opens")
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	if n := queryInt(t, dbs[0], `SELECT count(*) FROM books`); n != 1 {
		t.Fatalf("%d books, want 1: the seed migration ran more than once", n)
	}
}

// A migration sorts and journals in temporary files, not memory (a
// rebuilt index of a large table would otherwise need memory the size of
// the index), and the connection's temp_store is back as it was after.
func TestMigrateUsesTemporaryFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"migrations/0001_probe.sql": {Data: []byte(`CREATE TABLE probe AS SELECT temp_store FROM pragma_temp_store;`)},
	}
	db, err := openMigrated(t, filepath.Join(t.TempDir(), "m.db"), fsys)
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(db.Close))
	var during, after int
	err = db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT temp_store FROM probe`).Scan(&during); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `PRAGMA temp_store`).Scan(&after)
	})
	if err != nil {
		t.Fatal(err)
	}
	if during != 1 || after != 2 {
		t.Errorf("temp_store %d during the migration and %d after it, want 1 (FILE), then 2 (MEMORY, the default pragmas')", during, after)
	}
}

// A pattern that matches no file fails Open, naming the pattern, instead
// of opening a database without its schema.
func TestMigrateNoFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	db, err := sqlitedb.Open(context.Background(), path, &sqlitedb.Options{Setup: sqlitedb.Migrate(testMigrations, "migration/*.sql")})
	if err == nil {
		db.Close()
		t.Fatal("Open succeeded with no migration file")
	}
	if !strings.Contains(err.Error(), `"migration/*.sql": no file matches`) {
		t.Fatalf("Open: %v, want it to name the pattern that matches nothing", err)
	}
}
