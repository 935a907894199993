package postgres

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/loremnews/loremnews/internal/nanotime"
	"github.com/loremnews/loremnews/pgcluster/pgtest"
	"github.com/loremnews/loremnews/storetest"
)

// A database that holds look-alike screen names and titles from before
// migrations 0004 and 0005 opens: every user gets its name keys (the
// look-alikes keep theirs, equal), the oldest post of each title key keeps
// it and a later one gets it followed by " DUPLICATE " and its id, and the
// database then refuses new look-alikes (storetest.CheckOldLookAlikes).
func TestMigrationKeysOldLookAlikes(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The schema as it stood before the keys.
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"migrations/0001_create_tables.sql", "migrations/0002_listing_indexes.sql", "migrations/0003_times_as_integers.sql"} {
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
	ds := storetest.OldLookAlikes()
	for _, u := range ds.Users {
		if _, err := conn.Exec(ctx, `INSERT INTO users (id, screen_name, password_digest, about, last_seen_at, posts_count, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, u.ID, u.ScreenName, u.PasswordDigest, u.About,
			nanotime.Value(u.LastSeenAt), u.PostsCount, nanotime.Value(u.CreatedAt), nanotime.Value(u.UpdatedAt)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range ds.Posts {
		if _, err := conn.Exec(ctx, `INSERT INTO posts (id, user_id, title, description, published_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, p.ID, p.UserID, p.Title, p.Description,
			nanotime.Value(p.PublishedAt), nanotime.Value(p.CreatedAt), nanotime.Value(p.UpdatedAt)); err != nil {
			t.Fatal(err)
		}
	}
	// The identity sequences past the ids written, as a database that
	// issued them would have them.
	for _, table := range []string{"users", "posts"} {
		if _, err := conn.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, 'id'), (SELECT max(id) FROM `+table+`))`, table); err != nil {
			t.Fatal(err)
		}
	}

	db, err := Open(ctx, Config{URL: url})
	if err != nil {
		t.Fatalf("open (migrate): %v", err)
	}
	defer db.Close()
	for query, want := range map[string][]string{
		`SELECT screen_name_key FROM users ORDER BY id`: {"leoS", "leoS", "rnagna4", "rnagna4", "anna"},
		`SELECT title_key FROM posts ORDER BY id`:       {"test title", "test title DUPLICATE 2", "tеst title", "other title"},
	} {
		rows, _ := conn.Query(ctx, query)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: %q, %v; want %q", query, got, err, want)
		}
	}
	storetest.CheckOldLookAlikes(t, db)
}
