package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The data commands (copy, seed, migrate, backup) parse their command line
// into a config before anything is opened: these tests open nothing, and a
// mistake is a usage error naming the problem.

func TestParseCopyFlags(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.sqlite3")
	if err := os.WriteFile(src, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst.sqlite3")
	c, err := parseCopyFlags([]string{"--from", "sqlite:" + src, "--to", dst, "--replace"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.src.dsn != src || c.dst.dsn != dst || !c.replace {
		t.Errorf("%+v", c)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Error("parsing created the target")
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", src}, "both --from and --to are required"},
		{[]string{"--from", src, "--to", "sqlite:" + src}, "--from and --to are the same database"},
		{[]string{"--from", filepath.Join(dir, "missing.sqlite3"), "--to", dst}, "no such database file"},
	} {
		_, err := parseCopyFlags(tc.args, io.Discard)
		wantUsageError(t, err, tc.want)
	}
}

func TestParseSeedFlags(t *testing.T) {
	c, err := parseSeedFlags([]string{"--db", "x.sqlite3", "--users", "7", "--posts", "30", "--seed", "9", "--quiet"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.db.dsn != "x.sqlite3" {
		t.Errorf("dsn = %q, want x.sqlite3", c.db.dsn)
	}
	if c.seed.users != 7 {
		t.Errorf("users = %d, want 7", c.seed.users)
	}
	if c.seed.posts != 30 {
		t.Errorf("posts = %d, want 30", c.seed.posts)
	}
	if c.seed.seed != 9 {
		t.Errorf("seed = %d, want 9", c.seed.seed)
	}
	if !c.quiet {
		t.Errorf("quiet = false, want true")
	}
	_, err = parseSeedFlags([]string{"--users", "0"}, io.Discard)
	wantUsageError(t, err, "--users")
}

func TestParseMigrateFlags(t *testing.T) {
	d, err := parseMigrateFlags([]string{"--db", "x.sqlite3"}, io.Discard)
	if err != nil || d.dsn != "x.sqlite3" {
		t.Errorf("%+v, %v", d, err)
	}
	_, err = parseMigrateFlags([]string{"--profile", "split"}, io.Discard)
	wantUsageError(t, err, "profile")
}

func TestParseBackupFlags(t *testing.T) {
	dir := t.TempDir()
	to := filepath.Join(dir, "backup.sqlite3")
	c, err := parseBackupFlags([]string{"--db", "x.sqlite3", "--to", to}, io.Discard)
	if err != nil || c.db.dsn != "x.sqlite3" || c.to != to {
		t.Errorf("%+v, %v", c, err)
	}
	if err := os.WriteFile(to, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--db", "x.sqlite3"}, "--to is required"},
		{[]string{"--db", "postgres://u@127.0.0.1/x", "--to", filepath.Join(dir, "new.sqlite3")}, "pg_dump"},
		{[]string{"--db", "x.sqlite3", "--to", to}, "already exists"},
	} {
		_, err := parseBackupFlags(tc.args, io.Discard)
		wantUsageError(t, err, tc.want)
	}
}

// wantUsageError fails unless err is a usage error whose message contains want.
func wantUsageError(t *testing.T, err error, want string) {
	t.Helper()
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(ue.msg, want) {
		t.Errorf("error = %v (%T), want a usage error containing %q", err, err, want)
	}
}
