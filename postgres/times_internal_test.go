package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/loremnews/loremnews/pgcluster/pgtest"
	"github.com/loremnews/loremnews/storetest"
)

// Every time a database held as timestamptz reads back, after the
// migration to integers, as the same instant to the microsecond it held.
func TestTimesRoundTripThroughTheMigration(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The schema as it stood before times became integers.
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"migrations/0001_create_tables.sql", "migrations/0002_listing_indexes.sql"} {
		body, err := migrationFS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, string(body)); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations VALUES ($1, now())`, name); err != nil {
			t.Fatal(err)
		}
	}
	us := time.Date(2026, 11, 24, 18, 28, 48, 123456000, time.UTC)
	for _, stmt := range [][]any{
		{`INSERT INTO users (id, screen_name, password_digest, last_seen_at, created_at, updated_at) VALUES (1, 'alice', 'x', NULL, $1, $2)`,
			us, us.Add(time.Hour).In(time.FixedZone("CET", 3600))},
		{`INSERT INTO users (id, screen_name, password_digest, last_seen_at, created_at, updated_at) VALUES (2, 'bob', 'x', $1, $2, $3)`,
			us.Truncate(time.Second), time.Date(1969, 7, 20, 20, 17, 40, 999999000, time.UTC), us.Add(time.Microsecond)},
		{`INSERT INTO posts (id, user_id, title, published_at, created_at, updated_at) VALUES (1, 1, 'First post', NULL, $1, $2)`,
			us.Add(-time.Microsecond), time.Date(1999, 12, 31, 23, 59, 59, 100000000, time.UTC)},
		{`INSERT INTO comments (id, post_id, user_id, body, created_at, updated_at) VALUES (1, 1, 2, 'A comment', $1, $1)`, us},
		{`INSERT INTO sessions (id, user_id, token_digest, created_at, updated_at) VALUES (1, 2, '\x0102', $1, $2)`, us.Add(-48 * time.Hour), us},
	} {
		if _, err := conn.Exec(ctx, stmt[0].(string), stmt[1:]...); err != nil {
			t.Fatalf("%s: %v", stmt[0], err)
		}
	}
	want := map[string]time.Time{}
	for table, cols := range map[string][]string{
		"users":    {"last_seen_at", "created_at", "updated_at"},
		"posts":    {"published_at", "created_at", "updated_at"},
		"comments": {"created_at", "updated_at"},
		"sessions": {"created_at", "updated_at"},
	} {
		for _, col := range cols {
			rows, _ := conn.Query(ctx, fmt.Sprintf(`SELECT id, %s FROM %s`, col, table))
			var id int64
			var at *time.Time
			if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error {
				if at != nil {
					want[fmt.Sprintf("%s %d %s", table, id, col)] = *at
				} else {
					want[fmt.Sprintf("%s %d %s", table, id, col)] = time.Time{}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
	}

	db, err := Open(ctx, Config{URL: url})
	if err != nil {
		t.Fatalf("open (migrate): %v", err)
	}
	defer db.Close()
	ds, err := db.ExportDataset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := storetest.TimesOf(ds)
	if len(want) != 13 || len(got) != len(want) {
		t.Fatalf("%d times after the migration, %d before (want 13)", len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if g.IsZero() != w.IsZero() || !w.IsZero() && g.UnixNano() != w.UnixNano() {
			t.Errorf("%s: %v after the migration, %v before", k, g, w)
		}
	}
	var types []string
	rows, _ := conn.Query(ctx, `SELECT DISTINCT data_type FROM information_schema.columns
		WHERE table_name IN ('users', 'posts', 'comments', 'sessions') AND column_name LIKE '%\_at'`)
	types, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(types) != 1 || types[0] != "bigint" {
		t.Errorf("the time columns' types after the migration: %v, %v; want bigint only", types, err)
	}
}
