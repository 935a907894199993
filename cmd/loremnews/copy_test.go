package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/pgcluster/pgtest"
	"github.com/loremnews/loremnews/postgres"
	"github.com/loremnews/loremnews/sqlite"
)

// TestCopySQLiteToPostgresAndBack moves a seeded SQLite database (with a
// deleted post, so the ids have a gap) into PostgreSQL and back into a new
// SQLite file: every row, id and counter must survive both trips.
func TestCopySQLiteToPostgresAndBack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "site.sqlite3")
	if err := run(ctx, []string{"seed", "--db", src, "--users", "15", "--posts", "40"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	sdb, err := sqlite.Open(ctx, sqlite.Config{DSN: src})
	if err != nil {
		t.Fatal(err)
	}
	if err := sdb.DeletePost(ctx, 7); err != nil {
		t.Fatal(err)
	}
	want, err := sdb.ExportDataset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sdb.Close()

	pg := pgtest.NewDatabase(t)
	var out bytes.Buffer
	if err := run(ctx, []string{"copy", "--from", "sqlite:" + src, "--to", pg}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "15 users, 39 posts") || !strings.Contains(out.String(), "foreign keys and counters ok") {
		t.Fatalf("copy output: %s", out.String())
	}

	t.Run("RefusesATargetWithData", func(t *testing.T) {
		var stderr bytes.Buffer
		err := run(ctx, []string{"copy", "--from", src, "--to", pg}, io.Discard, io.Discard)
		if code := exitCode(err, &stderr); code != 1 || !strings.Contains(stderr.String(), "--replace") {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
		if err := run(ctx, []string{"copy", "--from", src, "--to", pg, "--replace"}, io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
	})

	back := filepath.Join(dir, "back.sqlite3")
	if err := run(ctx, []string{"copy", "--from", pg, "--to", "sqlite:" + back}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	bdb, err := sqlite.Open(ctx, sqlite.Config{DSN: back})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	got, err := bdb.ExportDataset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Users) != len(want.Users) || len(got.Posts) != len(want.Posts) || len(got.Comments) != len(want.Comments) {
		t.Fatalf("round trip: %d/%d/%d rows, want %d/%d/%d", len(got.Users), len(got.Posts), len(got.Comments),
			len(want.Users), len(want.Posts), len(want.Comments))
	}
	for i, p := range want.Posts {
		g := got.Posts[i]
		for _, f := range []struct {
			field string
			same  bool
		}{
			{"ID", g.ID == p.ID}, {"Title", g.Title == p.Title}, {"Description", g.Description == p.Description},
			{"CommentsCount", g.CommentsCount == p.CommentsCount}, {"CreatedAt", g.CreatedAt.Truncate(1000).Equal(p.CreatedAt.Truncate(1000))},
		} {
			if !f.same {
				t.Fatalf("post %d's %s after the round trip: %+v, want %+v", i, f.field, g, p)
			}
		}
	}
	for i, u := range want.Users {
		g := got.Users[i]
		for _, f := range []struct {
			field string
			same  bool
		}{
			{"ID", g.ID == u.ID}, {"ScreenName", g.ScreenName == u.ScreenName}, {"PasswordDigest", g.PasswordDigest == u.PasswordDigest}, {"PostsCount", g.PostsCount == u.PostsCount},
		} {
			if !f.same {
				t.Fatalf("user %d's %s after the round trip: %+v, want %+v", i, f.field, g, u)
			}
		}
	}
	// The PostgreSQL copy serves: the deleted post is gone, the others are there.
	pdb, err := postgres.Open(ctx, postgres.Config{URL: pg})
	if err != nil {
		t.Fatal(err)
	}
	defer pdb.Close()
	if _, _, err := pdb.PostPage(ctx, 7); loremnews.ErrorCode(err) != loremnews.EGONE {
		t.Fatalf("deleted post 7: %v, want EGONE", err)
	}
	if p, _, err := pdb.PostPage(ctx, 8); err != nil || p.Title != want.Posts[6].Title {
		t.Fatalf("post 8 = %+v, %v", p, err)
	}
}
