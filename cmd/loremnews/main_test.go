package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews/pgcluster/pgtest"
	"github.com/loremnews/loremnews/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// syncBuffer is a bytes.Buffer safe to write from the server goroutine and
// read from the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeEndToEnd runs the real program's run function: serve on port 0
// with a fresh database seeded on start, answer /up, the pages and a
// benchmarking request, then shut down cleanly on cancel.
func TestServeEndToEnd(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testServeEndToEnd(t, filepath.Join(t.TempDir(), "storage", "e2e.sqlite3")) })
	t.Run("postgres", func(t *testing.T) { testServeEndToEnd(t, pgtest.NewDatabase(t)) })
}

func testServeEndToEnd(t *testing.T, dbPath string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", dbPath, "--seed-if-empty", "--posts", "50", "--benchmarking"}, &stdout, &stderr)
	}()

	base := waitListening(t, &stdout, &stderr, done)
	if !strings.Contains(stdout.String(), "seeded") || !strings.Contains(stdout.String(), "50 posts") {
		t.Errorf("no seeding reported: %s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "benchmarking endpoints are ON") {
		t.Errorf("no benchmarking warning: %s", stderr.String())
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/up"}, {"GET", "/"}, {"GET", "/posts/1"}, {"GET", "/users/1"}, {"POST", "/benchmarking/balanced"},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s %s = %d", tc.method, tc.path, resp.StatusCode)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not shut down")
	}
	// A clean shutdown checkpoints the WAL into the file.
	if postgres.IsURL(dbPath) {
		return
	}
	if fi, err := os.Stat(dbPath + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("WAL left with %d bytes after shutdown", fi.Size())
	}
}

func TestSeedAndMigrateCommands(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "seeded.sqlite3")
	var out bytes.Buffer
	if err := run(context.Background(), []string{"seed", "--db", dbPath, "--users", "12", "--posts", "30", "--seed", "9"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "12 users, 30 posts") {
		t.Fatalf("seed output: %s", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"migrate", "--db", dbPath}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0001_create_tables.sql") {
		t.Fatalf("migrate output: %s", out.String())
	}
	t.Run("EnvironmentTwin", func(t *testing.T) {
		t.Setenv("LOREM_DB", dbPath)
		out.Reset()
		if err := run(context.Background(), []string{"migrate"}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), dbPath) {
			t.Fatalf("LOREM_DB ignored: %s", out.String())
		}
	})
}

func TestVersionShowsCompileOptions(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "sqlite 3.") || !strings.Contains(out.String(), "compile options:") {
		t.Fatalf("version output: %s", out.String())
	}
	// The build's name, as make build stamps it.
	buildVersion, buildCommit = "v1.2.3", "0123abcd+modified"
	defer func() { buildVersion, buildCommit = "", "" }()
	out.Reset()
	if err := run(context.Background(), []string{"version"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); first != "loremnews v1.2.3, commit 0123abcd+modified" {
		t.Fatalf("version's first line: %q", first)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want string
	}{
		"no command":        {args: nil, want: "no command given (see `loremnews --help`)"},
		"unknown command":   {args: []string{"frobnicate"}, want: `unknown command "frobnicate"`},
		"unknown flag":      {args: []string{"serve", "--nope"}, want: "flag provided but not defined: -nope"},
		"bad duration":      {args: []string{"serve", "--writer-timeout", "soon"}, want: "invalid value"},
		"bad setup":         {args: []string{"serve", "--setup", "turbo"}, want: `unknown --setup "turbo"`},
		"bad profile":       {args: []string{"serve", "--profile", "turbo"}, want: `unknown --setup "turbo"`},
		"postgres backup":   {args: []string{"backup", "--db", "postgres://localhost/lorem", "--to", filepath.Join(dir, "b.db")}, want: "use pg_dump"},
		"negative pause":    {args: []string{"backup", "--to", filepath.Join(dir, "b.db"), "--pause", "-1s"}, want: "--pause must be 0 or more"},
		"bad postgres URL":  {args: []string{"migrate", "--db", "postgres://h/db?x=%zz"}, want: "not a valid PostgreSQL URL"},
		"copy needs both":   {args: []string{"copy", "--from", filepath.Join(dir, "x.db")}, want: "both --from and --to are required"},
		"copy to itself":    {args: []string{"copy", "--from", "sqlite:" + filepath.Join(dir, "x.db"), "--to", filepath.Join(dir, "x.db")}, want: "the same database"},
		"copy from nothing": {args: []string{"copy", "--from", filepath.Join(dir, "none.db"), "--to", filepath.Join(dir, "y.db")}, want: "no such database file"},
		"remote bench":      {args: []string{"serve", "--addr", "0.0.0.0:0", "--benchmarking"}, want: "--allow-remote-benchmarking"},
		"bad env":           {args: []string{"serve"}, env: map[string]string{"LOREM_READ_CONNS": "many"}, want: "$LOREM_READ_CONNS"},
		"stray argument":    {args: []string{"seed", "extra"}, want: `unexpected argument "extra"`},
		"bad log level":     {args: []string{"serve", "--log-level", "loud"}, want: "invalid --log-level"},
		"negative users":    {args: []string{"seed", "--db", filepath.Join(dir, "x.db"), "--users", "0"}, want: "--users must be at least 1"},
		"bcrypt cost range": {args: []string{"serve", "--bcrypt-cost", "99"}, want: "--bcrypt-cost must be between"},
		"bad proxies":       {args: []string{"serve", "--trusted-proxies", "10.0.0.0/8,proxy.local"}, want: `invalid --trusted-proxies: "proxy.local"`},
		"bad proxies env":   {args: []string{"serve"}, env: map[string]string{"LOREM_TRUSTED_PROXIES": "10.0.0.0/33"}, want: "invalid --trusted-proxies"},
		"short secret key":  {args: []string{"serve"}, env: map[string]string{"LOREM_SECRET_KEY": "short"}, want: "--secret-key must be at least 32 characters"},
		"zero session idle": {args: []string{"serve", "--session-idle", "0s"}, want: "--session-idle and --session-lifetime must be positive"},
		"bad metrics addr":  {args: []string{"serve", "--metrics-addr", "nowhere"}, want: "invalid --metrics-addr"},
		"negative workers":  {args: []string{"serve", "--workers", "-1"}, want: "--workers must be between 0 (one per core) and 64"},
		"too many workers":  {args: []string{"serve"}, env: map[string]string{"LOREM_WORKERS": "65"}, want: "--workers must be between"},
		"metrics on site":   {args: []string{"serve", "--addr", "127.0.0.1:3999", "--metrics-addr", "127.0.0.1:3999"}, want: "never served on the site's address"},
		"pprof not local":   {args: []string{"serve", "--metrics-addr", "10.0.0.1:9464", "--pprof"}, want: "--pprof is only allowed on a loopback --metrics-addr"},
		"pprof no metrics":  {args: []string{"serve", "--metrics=false", "--pprof"}, want: "it needs --metrics"},
		"reload no pid":     {args: []string{"reload"}, want: "--pid-file is required"},
		"points to help":    {args: []string{"migrate", "--nope"}, want: "(see `loremnews migrate --help`)"},
		"bare seconds":      {args: []string{"load", "-z", "2", "http://127.0.0.1:1/"}, want: "did you mean 2s?"},
		"bare seconds env":  {args: []string{"load", "http://127.0.0.1:1/"}, env: map[string]string{"LOREM_LOAD_DURATION": "3"}, want: "did you mean 3s?"},
		"spelled seconds":   {args: []string{"load", "-z", "5sec", "http://127.0.0.1:1/"}, want: "did you mean 5s?"},
		"spelled minutes":   {args: []string{"load", "-z=1.5 minutes", "http://127.0.0.1:1/"}, want: "did you mean 1.5m?"},
		"spelled env":       {args: []string{"load", "http://127.0.0.1:1/"}, env: map[string]string{"LOREM_LOAD_DURATION": "10secs"}, want: "did you mean 10s?"},
		"no scheme":         {args: []string{"load", "-n", "1", "127.0.0.1:8080/"}, want: "did you mean http://127.0.0.1:8080/?"},
		"no scheme, host":   {args: []string{"load", "-n", "1", "localhost:8080/"}, want: "did you mean http://localhost:8080/?"},
		"bench setup":       {args: []string{"bench", "--setups", "split,turbo"}, want: `unknown setup "turbo" in --setups`},
		"bench target":      {args: []string{"bench", "--targets", "mysql"}, want: `unknown target "mysql" in --targets`},
		"bench action":      {args: []string{"bench", "--action", "post_craete"}, want: `--action: unknown benchmarking action "post_craete"`},
		"bench scenario":    {args: []string{"bench", "--scenarios", "balanced@many"}, want: `bad --scenarios entry "balanced@many"`},
		"bench sweep level": {args: []string{"bench", "--sweep", "--sweep-levels", "1,0"}, want: `bad --sweep-levels entry "0"`},
		"bench point read":  {args: []string{"bench", "--point-read", "1,x"}, want: `bad --point-read entry "x"`},
		"bench compare":     {args: []string{"bench", "--compare", "before"}, want: `bad --compare entry "before": want NAME=PATH`},
		"bench postgres":    {args: []string{"bench", "--postgres", "mysql://x"}, want: `--postgres "mysql://x" is not a postgres:// URL`},
	} {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stdout, io.Discard)
			if code := exitCode(err, &stderr); code != 2 {
				t.Fatalf("exit code %d (err %v), want 2", code, err)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("stderr %q lacks %q", stderr.String(), tc.want)
			}
			if lines := strings.Count(strings.TrimSpace(stderr.String()), "\n"); lines > 0 {
				t.Fatalf("error is %d lines, want one:\n%s", lines+1, stderr.String())
			}
			if !strings.HasSuffix(strings.TrimSpace(stderr.String()), " --help`)") {
				t.Fatalf("error %q does not point to --help", stderr.String())
			}
			if stdout.Len() != 0 {
				t.Fatalf("a usage error wrote to stdout:\n%s", stdout.String())
			}
		})
	}
	t.Run("DatabaseIsADirectory", func(t *testing.T) {
		var stderr bytes.Buffer
		err := run(context.Background(), []string{"migrate", "--db", dir}, io.Discard, io.Discard)
		if code := exitCode(err, &stderr); code != 2 || !strings.Contains(stderr.String(), "is a directory") {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
	})
	t.Run("DirectoryCannotBeCreated", func(t *testing.T) {
		file := filepath.Join(dir, "a-file")
		os.WriteFile(file, []byte("x"), 0o644)
		var stderr bytes.Buffer
		err := run(context.Background(), []string{"migrate", "--db", filepath.Join(file, "db.sqlite3")}, io.Discard, io.Discard)
		if code := exitCode(err, &stderr); code != 1 || !strings.Contains(stderr.String(), "create the directory of") {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
	})
	t.Run("DirectoryNotWritable", func(t *testing.T) {
		// /proc accepts no new files, even from root (the tests run as root
		// in CI, where permission bits would not stop anything).
		var stderr bytes.Buffer
		err := run(context.Background(), []string{"migrate", "--db", "/proc/loremnews-test.sqlite3"}, io.Discard, io.Discard)
		if code := exitCode(err, &stderr); code != 1 || !strings.Contains(stderr.String(), "/proc/loremnews-test.sqlite3") ||
			!strings.Contains(stderr.String(), "cannot open the file (check that the path exists and is writable)") {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
	})
	t.Run("CorruptDatabase", func(t *testing.T) {
		bad := filepath.Join(dir, "corrupt.sqlite3")
		os.WriteFile(bad, bytes.Repeat([]byte("this is not a database "), 500), 0o644)
		var stderr bytes.Buffer
		err := run(context.Background(), []string{"serve", "--db", bad, "--addr", "127.0.0.1:0"}, io.Discard, io.Discard)
		if code := exitCode(err, &stderr); code != 1 || !strings.Contains(stderr.String(), bad) || !strings.Contains(stderr.String(), "not a SQLite database") {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
		if b, _ := os.ReadFile(bad); !bytes.HasPrefix(b, []byte("this is not a database")) {
			t.Fatal("startup changed the corrupt file")
		}
	})
	t.Run("VersionFlag", func(t *testing.T) {
		for _, args := range [][]string{{"version"}, {"--version"}} {
			var out bytes.Buffer
			if err := run(context.Background(), args, &out, io.Discard); err != nil || !strings.Contains(out.String(), "sqlite ") {
				t.Errorf("%v: err %v, output %q", args, err, out.String())
			}
		}
	})
	t.Run("HelpFormat", func(t *testing.T) {
		help := func(cmd string) string {
			var out bytes.Buffer
			if err := run(context.Background(), []string{cmd, "--help"}, &out, io.Discard); !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("%s --help: %v", cmd, err)
			}
			return out.String()
		}
		load, serve := help("load"), help("serve")
		for _, want := range []string{"\n  -c N [$LOREM_LOAD_CONCURRENCY]\n", "\n  -z DURATION [$LOREM_LOAD_DURATION]\n", "\n  --json\n", "(default 50)"} {
			if !strings.Contains(load, want) {
				t.Errorf("load --help lacks %q:\n%s", want, load)
			}
		}
		for _, want := range []string{"\n  --db PATH [$LOREM_DB]\n", "\n  --addr HOST:PORT [$LOREM_ADDR]\n"} {
			if !strings.Contains(serve, want) {
				t.Errorf("serve --help lacks %q:\n%s", want, serve)
			}
		}
		for _, cmd := range []string{"migrate", "backup"} {
			if h := help(cmd); !strings.Contains(h, "--db PATH") || strings.Contains(h, "--read-conns") || strings.Contains(h, "--setup") {
				t.Errorf("%s --help should show --db and no pool tuning:\n%s", cmd, h)
			}
		}
		// Every flag that takes a value names it: --db PATH, not --db string
		// or a generic VALUE.
		for _, cmd := range commandNames() {
			for _, line := range strings.Split(help(cmd), "\n") {
				if f := strings.Fields(line); strings.HasPrefix(line, "  -") && len(f) >= 2 && !strings.HasPrefix(f[1], "[$") &&
					(f[1] != strings.ToUpper(f[1]) || f[1] == "VALUE" || f[1] == "STRING") {
					t.Errorf("%s --help: %q names no value", cmd, strings.TrimSpace(line))
				}
			}
		}
		for _, noise := range []string{"(default 0s)", "(default 0)", "(default false)", "\n  --c ", "\n  -db "} {
			if strings.Contains(load+serve, noise) {
				t.Errorf("--help shows %q", noise)
			}
		}
	})
	t.Run("HelpExitsZero", func(t *testing.T) {
		for _, cmd := range append(commandNames(), "") {
			args := []string{"--help"}
			if cmd != "" {
				args = []string{cmd, "--help"}
			}
			var out bytes.Buffer
			err := run(context.Background(), args, &out, io.Discard)
			if code := exitCode(err, io.Discard); code != 0 || out.Len() == 0 {
				t.Errorf("%v: exit %d, output %q", args, code, out.String())
			}
			if cmd == "serve" && !strings.Contains(out.String(), "$LOREM_ADDR") {
				t.Errorf("serve --help does not show environment twins:\n%s", out.String())
			}
			if cmd == "serve" && (!strings.Contains(out.String(), "never on the site's address") || !strings.Contains(out.String(), "--metrics-addr")) {
				t.Errorf("serve --help does not say who may read /metrics:\n%s", out.String())
			}
		}
	})
}
