package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/storetest"
)

// TestStore runs the suite every backend passes.
func TestStore(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) loremnews.Database { return MustOpenDB(tb) })
}

// TestMigrationsInStep keeps both backends' schemas at the same versions:
// what SQLite applied is the PostgreSQL store's migration files, by name.
func TestMigrationsInStep(t *testing.T) {
	db := MustOpenDB(t)
	applied, err := db.Migrations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pg, err := filepath.Glob("../postgres/migrations/*.sql")
	if err != nil || len(pg) == 0 {
		t.Fatalf("the PostgreSQL store's migrations: %v, %v", pg, err)
	}
	for i, path := range pg {
		pg[i] = "migrations/" + filepath.Base(path) // as recorded
	}
	if len(applied) != len(pg) {
		t.Fatalf("SQLite migrations %v, PostgreSQL %v", applied, pg)
	}
	for i := range applied {
		if applied[i] != pg[i] {
			t.Fatalf("SQLite migrations %v, PostgreSQL %v", applied, pg)
		}
	}
}
