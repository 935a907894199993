package main

import (
	"errors"
	"fmt"
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
	_, err = parseMigrateFlags([]string{"--setup", "split"}, io.Discard)
	wantUsageError(t, err, "setup")
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

// TestParseServeSecretKey: the key can come from a file, so it need not sit
// on a command line that every user of the machine can read; a key given
// twice, an empty or short file, or a missing one is a usage error.
func TestParseServeSecretKey(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("k", 40)
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good, empty, short := write("good", key+"\n"), write("empty", " \n"), write("short", "too short\n")
	for _, tc := range []struct {
		name    string
		args    []string
		wantKey string // the key parsed, when wantErr is empty
		wantErr string
	}{
		{"file", []string{"--secret-key-file", good}, key, ""},
		{"flag", []string{"--secret-key", key}, key, ""},
		{"both", []string{"--secret-key", key, "--secret-key-file", good}, "", "not both"},
		{"empty file", []string{"--secret-key-file", empty}, "", "is empty"},
		{"short file", []string{"--secret-key-file", short}, "", "at least 32 characters"},
		{"missing file", []string{"--secret-key-file", filepath.Join(dir, "missing")}, "", "--secret-key-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseServeFlags(tc.args, io.Discard)
			if tc.wantErr != "" {
				wantUsageError(t, err, tc.wantErr)
				return
			}
			if err != nil || string(c.site.SecretKey) != tc.wantKey {
				t.Fatalf("key %q, err %v; want %q", c.site.SecretKey, err, tc.wantKey)
			}
		})
	}
	var help strings.Builder
	parseServeFlags([]string{"--help"}, &help)
	if !strings.Contains(help.String(), "--secret-key-file") || !strings.Contains(help.String(), "/proc/PID/cmdline") {
		t.Fatalf("--help does not offer the file or say why a flag is the worse place:\n%s", help.String())
	}
}

// TestParseServeAllowedHosts: by default the site answers to the host of
// --addr, and to this machine's loopback names when that is loopback; an
// address that listens everywhere names no host, so the names must be
// given.
func TestParseServeAllowedHosts(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    string // the hosts, when wantErr is empty
		wantErr string
	}{
		{[]string{"--addr", "127.0.0.1:3000"}, "[127.0.0.1 localhost ::1]", ""},
		{[]string{"--addr", "localhost:3000"}, "[localhost 127.0.0.1 ::1]", ""},
		{[]string{"--addr", "[::1]:3000"}, "[::1 localhost 127.0.0.1]", ""},
		{[]string{"--addr", "192.0.2.10:80"}, "[192.0.2.10]", ""},
		{[]string{"--addr", "News.Example:80"}, "[news.example]", ""},
		{[]string{"--addr", "192.0.2.10:80", "--allowed-hosts", "news.example,www.news.example"}, "[news.example www.news.example]", ""},
		{[]string{"--addr", ":3000", "--allowed-hosts", "news.example"}, "[news.example]", ""},
		{[]string{"--addr", ":3000"}, "", "listens on every address"},
		{[]string{"--addr", "0.0.0.0:3000"}, "", "listens on every address"},
		{[]string{"--addr", "[::]:3000"}, "", "listens on every address"},
		{[]string{"--allowed-hosts", "https://news.example"}, "", "invalid --allowed-hosts"},
	} {
		c, err := parseServeFlags(tc.args, io.Discard)
		if tc.wantErr != "" {
			wantUsageError(t, err, tc.wantErr)
			continue
		}
		if err != nil || fmt.Sprint(c.site.AllowedHosts) != tc.want {
			t.Errorf("%q: hosts %q, err %v; want %s", tc.args, c.site.AllowedHosts, err, tc.want)
		}
	}
}
