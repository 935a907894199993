package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlite"
	"github.com/loremnews/loremnews/storetest"
)

// createOldDatabase creates, at path, a database as the schema stood before
// times became integers (migrations 0001 and 0002, DATETIME columns), and
// runs each statement of rows on it through the driver, which writes a
// time.Time argument as text, as the store did then.
func createOldDatabase(t *testing.T, path string, rows ...[]any) {
	t.Helper()
	old, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=1&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	stmts := []string{`CREATE TABLE schema_migrations (version TEXT PRIMARY KEY, applied_at DATETIME NOT NULL)`,
		sqlite.MigrationSQL("0001_create_tables.sql"), sqlite.MigrationSQL("0002_listing_indexes.sql")}
	for _, s := range stmts {
		if _, err := old.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"0001_create_tables.sql", "0002_listing_indexes.sql"} {
		if _, err := old.Exec(`INSERT INTO schema_migrations VALUES (?, ?)`, "migrations/"+name, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		if _, err := old.Exec(r[0].(string), r[1:]...); err != nil {
			t.Fatalf("%s: %v", r[0], err)
		}
	}
}

// oldTimes reads every time column of every row at path as the store did
// before the migration: through the driver, which parses DATETIME text.
func oldTimes(t *testing.T, path string) map[string]time.Time {
	t.Helper()
	old, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	times := map[string]time.Time{}
	for table, cols := range map[string][]string{
		"users":    {"last_seen_at", "created_at", "updated_at"},
		"posts":    {"published_at", "created_at", "updated_at"},
		"comments": {"created_at", "updated_at"},
		"sessions": {"created_at", "updated_at"},
	} {
		rows, err := old.Query(`SELECT id, ` + strings.Join(cols, ", ") + ` FROM ` + table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			vals := make([]sql.NullTime, len(cols))
			dest := []any{&id}
			for i := range vals {
				dest = append(dest, &vals[i])
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatal(err)
			}
			for i, c := range cols {
				times[fmt.Sprintf("%s %d %s", table, id, c)] = vals[i].Time
			}
		}
		rows.Close()
	}
	return times
}

// newTimes is the same map, read through the store after the migration.
func newTimes(t *testing.T, db *sqlite.DB) map[string]time.Time {
	t.Helper()
	ds, err := db.ExportDataset(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return storetest.TimesOf(ds)
}

// Every time a database held as DATETIME text reads back, after the
// migration to integers, as the same instant to the nanosecond; and the
// rebuilt tables keep their rows, ids, AUTOINCREMENT marks, indexes and
// foreign keys.
func TestTimesRoundTripThroughTheMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.sqlite3")
	berlin := time.FixedZone("CET", 3600)
	ns := time.Date(2026, 11, 24, 18, 28, 48, 123456789, time.UTC)
	createOldDatabase(t, path,
		[]any{`INSERT INTO users (id, screen_name, password_digest, last_seen_at, created_at, updated_at) VALUES (1, 'alice', 'x', NULL, ?, ?)`,
			ns, ns.Add(time.Hour).In(berlin)},
		[]any{`INSERT INTO users (id, screen_name, password_digest, last_seen_at, created_at, updated_at) VALUES (2, 'bob', 'x', ?, ?, ?)`,
			ns.Truncate(time.Second), time.Date(1999, 12, 31, 23, 59, 59, 100000000, time.UTC), ns.Add(time.Nanosecond)},
		[]any{`INSERT INTO users (id, screen_name, password_digest, created_at, updated_at) VALUES (3, 'carol', 'x', ?, ?)`, ns, ns},
		[]any{`DELETE FROM users WHERE id = 3`},
		// Text the driver read too, though the store never wrote it so.
		[]any{`INSERT INTO posts (id, user_id, title, published_at, created_at, updated_at) VALUES (1, 1, 'First post', NULL, '2026-01-02T03:04:05.5Z', '2026-01-02 03:04')`},
		[]any{`INSERT INTO posts (id, user_id, title, published_at, created_at, updated_at) VALUES (2, 2, 'Second post', ?, ?, ?)`,
			ns.In(berlin), ns.Add(-time.Microsecond), time.Date(1969, 7, 20, 20, 17, 40, 999999999, time.UTC)},
		[]any{`INSERT INTO posts (id, user_id, title, created_at, updated_at) VALUES (7, 2, 'Seventh post', ?, ?)`, ns, ns},
		[]any{`DELETE FROM posts WHERE id = 7`},
		[]any{`INSERT INTO comments (id, post_id, user_id, body, created_at, updated_at) VALUES (1, 2, 1, 'A comment', ?, ?)`, ns, ns.Add(90 * time.Minute)},
		[]any{`INSERT INTO sessions (id, user_id, token_digest, created_at, updated_at) VALUES (1, 2, x'0102', ?, ?)`, ns.Add(-48 * time.Hour), ns},
	)
	want := oldTimes(t, path)
	oldSchema := schemaAt(t, path)
	db := MustOpenDSN(t, path)
	got := newTimes(t, db)
	if len(got) != len(want) || len(want) != 16 {
		t.Fatalf("%d times after the migration, %d before (want 16)", len(got), len(want))
	}
	for k, w := range want {
		g := got[k]
		if !g.Equal(w) || g.UnixNano() != w.UnixNano() && !w.IsZero() || g.IsZero() != w.IsZero() {
			t.Errorf("%s: %v after the migration, %v before", k, g, w)
		}
		if !g.IsZero() && g.Location() != time.UTC {
			t.Errorf("%s: read in %v, want UTC", k, g.Location())
		}
	}

	t.Run("deleted ids stay deleted", func(t *testing.T) {
		u, err := db.CreateUser(ctx, "dave", "x")
		if err != nil {
			t.Fatal(err)
		}
		if u.ID != 4 {
			t.Errorf("new user's id %d, want 4 (3 was deleted)", u.ID)
		}
		p, err := db.CreatePost(ctx, u.ID, loremnews.PostInput{Title: "After the migration"})
		if err != nil {
			t.Fatal(err)
		}
		if p.ID != 8 {
			t.Errorf("new post's id %d, want 8 (7 was deleted)", p.ID)
		}
		if _, err := db.FindPostByID(ctx, 7); loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
			t.Errorf("find post 7: %v", err)
		}
	})
	t.Run("foreign keys hold", func(t *testing.T) {
		if _, err := db.CreatePost(ctx, 99, loremnews.PostInput{Title: "By nobody at all"}); loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
			t.Errorf("post by a missing user: %v, want ENOTFOUND", err)
		}
		if err := db.DeleteUser(ctx, 2); err != nil {
			t.Fatal(err)
		}
		c, err := db.CheckConsistency(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Posts != 2 || c.Comments != 0 || c.Sessions != 0 || c.Users != 2 {
			t.Errorf("after deleting bob: %+v, want his post, its comment and his session gone", c)
		}
	})
	t.Run("same schema but the times' type", func(t *testing.T) {
		var want []string
		for _, line := range oldSchema {
			want = append(want, strings.Replace(line, " DATETIME ", " INTEGER ", 1))
		}
		slices.Sort(want)
		if len(want) < 30 {
			t.Fatalf("the old schema has %d columns and index columns: %v", len(want), want)
		}
		// Less the look-alike keys' columns and indexes, the rate limits'
		// table, the log of name changes, the sessions' devices, and the
		// listings' indexes, which later migrations add or change.
		rebuilt := []string{"screen_name_key", "screen_name_small_key", "screen_name_capitals_key", "title_key", "rate_limits", "name_changes",
			"revoked_devices", "sessions: device",
			"index_posts_listing", "index_comments_on_post_id", "index_comments_on_user_id"}
		changed := func(line string) bool {
			return slices.ContainsFunc(rebuilt, func(s string) bool { return strings.Contains(line, s) })
		}
		got := slices.DeleteFunc(schemaAt(t, path), changed)
		want = slices.DeleteFunc(want, changed)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("before the migration, with INTEGER for DATETIME:\n%s\nafter:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
	})
}

// schemaAt lists the columns of the database's tables (name, type, NOT
// NULL, primary key) and of its indexes, read through a connection of its
// own.
func schemaAt(t *testing.T, path string) []string {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	err = func() error {
		rows, err := db.Query(`SELECT m.type, m.name, p.name, p.type, p."notnull", p.pk
			FROM sqlite_schema m JOIN pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name != 'schema_migrations'
			UNION ALL
			SELECT m.type, m.name || ' on ' || m.tbl_name, i.name, '', 0, i.seqno
			FROM sqlite_schema m JOIN pragma_index_info(m.name) i WHERE m.type = 'index'`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var kind, name, col, typ string
			var notNull, pk int
			if err := rows.Scan(&kind, &name, &col, &typ, &notNull, &pk); err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %s: %s %s %d %d", kind, name, col, typ, notNull, pk))
		}
		return rows.Err()
	}()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// A time the driver could not read fails the migration, naming it, and
// leaves the database as it was.
func TestMigrationRefusesTextThatIsNoTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.sqlite3")
	createOldDatabase(t, path,
		[]any{`INSERT INTO users (id, screen_name, password_digest, created_at, updated_at) VALUES (1, 'alice', 'x', ?, 'yesterday')`, time.Now()})
	_, err := sqlite.Open(context.Background(), sqlite.Config{DSN: path})
	if err == nil || !strings.Contains(err.Error(), `"yesterday" is not a time`) || !strings.Contains(err.Error(), "0003_times_as_integers.sql") {
		t.Fatalf("open: %v, want the migration to fail naming the value", err)
	}
	old, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	var migrations, users int
	var updated string
	if err := old.QueryRow(`SELECT (SELECT count(*) FROM schema_migrations), (SELECT count(*) FROM users), (SELECT CAST(updated_at AS TEXT) FROM users)`).Scan(&migrations, &users, &updated); err != nil {
		t.Fatal(err)
	}
	if migrations != 2 || users != 1 || updated != "yesterday" {
		t.Fatalf("after the failed migration: %d migrations, %d users, updated_at %q", migrations, users, updated)
	}
}

// A migration already recorded does not run again when the database opens,
// nor does its foreign key check, which reads every table (on a database of
// gigabytes, seconds at every start): a row pointing nowhere, which that
// check refuses, no longer stops an open.
func TestAppliedMigrationsDoNotRunAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite3")
	db, err := sqlite.Open(context.Background(), sqlite.Config{DSN: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", path+"?_foreign_keys=off")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO posts (user_id, title, created_at, updated_at) VALUES (999, 'nobody wrote this', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db, err = sqlite.Open(context.Background(), sqlite.Config{DSN: path})
	if err != nil {
		t.Fatalf("reopen ran a recorded migration again: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}
