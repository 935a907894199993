package sqlite_test

import (
	"testing"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/postgres"
	"github.com/loremnews/loremnews/storetest"
)

// TestStore runs the suite every backend passes.
func TestStore(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) loremnews.Database { return MustOpenDB(tb) })
}

// TestMigrationsInStep keeps both backends' schemas at the same versions.
func TestMigrationsInStep(t *testing.T) {
	db := MustOpenDB(t)
	applied, err := db.Migrations(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pg := postgres.MigrationFiles()
	if len(applied) != len(pg) {
		t.Fatalf("SQLite migrations %v, PostgreSQL %v", applied, pg)
	}
	for i := range applied {
		if applied[i] != pg[i] {
			t.Fatalf("SQLite migrations %v, PostgreSQL %v", applied, pg)
		}
	}
}
