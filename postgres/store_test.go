package postgres_test

import (
	"context"
	"testing"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/pgcluster/pgtest"
	"github.com/loremnews/loremnews/postgres"
	"github.com/loremnews/loremnews/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// MustOpenDB opens a fresh database, closed when the test ends.
func MustOpenDB(tb testing.TB) *postgres.DB {
	tb.Helper()
	url := pgtest.NewDatabase(tb)
	db, err := postgres.Open(context.Background(), postgres.Config{URL: url})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// TestStore runs the suite every backend passes.
func TestStore(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) loremnews.Database { return MustOpenDB(tb) })
}
