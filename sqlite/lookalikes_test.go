package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/storetest"
)

// A database that holds look-alike screen names and titles from before
// migrations 0004 and 0005 opens: every user gets its name keys (the
// look-alikes keep theirs, equal), the oldest post of each title key keeps
// it and a later one gets it followed by " DUPLICATE " and its id, and the
// database then refuses new look-alikes (storetest.CheckOldLookAlikes).
func TestMigrationKeysOldLookAlikes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.sqlite3")
	ds := storetest.OldLookAlikes()
	var rows [][]any
	for _, u := range ds.Users {
		rows = append(rows, []any{`INSERT INTO users (id, screen_name, password_digest, about, last_seen_at, posts_count, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, u.ID, u.ScreenName, u.PasswordDigest, u.About, u.LastSeenAt, u.PostsCount, u.CreatedAt, u.UpdatedAt})
	}
	for _, p := range ds.Posts {
		rows = append(rows, []any{`INSERT INTO posts (id, user_id, title, description, published_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, p.ID, p.UserID, p.Title, p.Description, p.PublishedAt, p.CreatedAt, p.UpdatedAt})
	}
	createOldDatabase(t, path, rows...)
	db := MustOpenDSN(t, path)

	raw, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for query, want := range map[string][]string{
		`SELECT screen_name_key FROM users ORDER BY id`: {"leoS", "leoS", "rnagna4", "rnagna4", "anna"},
		`SELECT title_key FROM posts ORDER BY id`:       {"test title", "test title DUPLICATE 2", "tеst title", "other title"},
	} {
		var got []string
		rows, err := raw.Query(query)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				t.Fatal(err)
			}
			got = append(got, k)
		}
		rows.Close()
		if len(got) != len(want) {
			t.Fatalf("%s: %q, want %q", query, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: %q, want %q", query, got, want)
			}
		}
	}
	storetest.CheckOldLookAlikes(t, db)
}

// Migration 0014 computes every user's name keys again: a database whose
// keys still read nn as m (anna keyed "arna") takes "Ama" once it opens,
// and refuses "john__doe" beside "john_doe".
func TestMigrationKeysNamesAgain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.sqlite3")
	db := MustOpenDSN(t, path)
	MustCreateUser(t, db, "anna")
	MustCreateUser(t, db, "john_doe")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`UPDATE users SET screen_name_key = 'arna', screen_name_small_key = 'arna', screen_name_capitals_key = 'ANNA' WHERE screen_name = 'anna'`,
		`DELETE FROM schema_migrations WHERE version LIKE '%0014_%'`,
	} {
		if _, err := raw.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	db = MustOpenDSN(t, path)
	if _, err := db.CreateUser(ctx, "Ama", "digest"); err != nil {
		t.Errorf("Ama beside anna after the migration: %v", err)
	}
	if _, err := db.CreateUser(ctx, "john__doe", "digest"); loremnews.ErrorCode(err) != loremnews.EINVALID {
		t.Errorf("john__doe beside john_doe: %v, want refused", err)
	}
}
