package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/serveproc"
	"github.com/loremnews/loremnews/sqlite"
)

// startServe runs serve with args until the test ends and returns its
// stdout once it listens.
func startServe(t *testing.T, args ...string) (base string, stdout *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout = &syncBuffer{}
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not shut down")
		}
	})
	return waitListening(t, stdout, &stderr, done), stdout
}

// waitListening waits up to 30 s for serve to print its address, failing
// the test if serve exits first.
func waitListening(t *testing.T, stdout, stderr *syncBuffer, done <-chan error) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if url, ok := serveproc.ListeningURL(stdout.String()); ok {
			return url
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited early: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestServePurgesExpiredSessions: serve deletes session rows past
// --session-lifetime (here a 90-day-old one) when it starts.
func TestServePurgesExpiredSessions(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "sessions.sqlite3")
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{DSN: dbPath})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	ds := &loremnews.Dataset{
		Users: []*loremnews.User{{ID: 1, ScreenName: "old_timer", PasswordDigest: "x", CreatedAt: now, UpdatedAt: now, LastSeenAt: now}},
		Sessions: []*loremnews.Session{
			{ID: 1, UserID: 1, TokenDigest: []byte("ninety-days"), CreatedAt: now.Add(-90 * 24 * time.Hour), UpdatedAt: now.Add(-90 * 24 * time.Hour)},
			{ID: 2, UserID: 1, TokenDigest: []byte("today"), CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour)},
		},
	}
	if err := db.ImportDataset(ctx, ds); err != nil {
		t.Fatal(err)
	}
	db.Close()

	startServe(t, "--db", dbPath)
	check, err := sqlite.Open(ctx, sqlite.Config{DSN: dbPath})
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := check.UserSessions(ctx, 1, loremnews.SessionLimits{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 && list[0].ID == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sessions after 30 s of serve: %d, want only the live one", len(list))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var metricsListenRe = regexp.MustCompile(`metrics on (http://\S+)`)

// TestMetricsAddr: /metrics (and with --pprof the profiler) are served on
// a listener of their own, by default a loopback one, and never on the
// site's address, whoever asks.
func TestMetricsAddr(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"default":         {"--pprof"},
		"--metrics-addr":  {"--metrics-addr", "127.0.0.1:0", "--pprof"},
		"IPv6 loopback":   {"--metrics-addr", "[::1]:0"},
		"without --pprof": {},
	} {
		t.Run(name, func(t *testing.T) {
			base, stdout := startServe(t, append([]string{"--db", filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".sqlite3")}, args...)...)
			m := metricsListenRe.FindStringSubmatch(stdout.String())
			if m == nil {
				t.Fatalf("no metrics address printed: %s", stdout.String())
			}
			if !strings.HasPrefix(m[1], "http://127.0.0.1:") && !strings.HasPrefix(m[1], "http://[::1]:") {
				t.Errorf("metrics on %s, want a loopback address", m[1])
			}
			for _, path := range []string{"/metrics", "/debug/pprof/"} {
				if got := getStatus(t, base+path); got != 404 {
					t.Errorf("GET %s on the site = %d, want 404", path, got)
				}
			}
			resp, err := http.Get(m[1])
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), "loremnews_") {
				t.Fatalf("GET %s = %d\n%.500s", m[1], resp.StatusCode, body)
			}
			want := 404
			if slices.Contains(args, "--pprof") {
				want = 200
			}
			if got := getStatus(t, strings.TrimSuffix(m[1], "/metrics")+"/debug/pprof/"); got != want {
				t.Errorf("GET /debug/pprof/ on the metrics address = %d, want %d", got, want)
			}
		})
	}
}

// TestMetricsListenerAnswersThisMachineOnly: the metrics listener refuses
// a Host that does not name this machine (a page on a domain re-pointed at
// 127.0.0.1, DNS rebinding) with 421, and a request a proxy forwarded with
// 403; and a default port another program holds does not stop serve from
// starting: metrics move to a free port.
func TestMetricsListenerAnswersThisMachineOnly(t *testing.T) {
	// The default port, taken (by this test, or by whoever has it already).
	if ln, err := net.Listen("tcp", "127.0.0.1:"+defaultMetricsPort); err == nil {
		defer ln.Close()
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	_, stdout := startServe(t, "--db", filepath.Join(t.TempDir(), "ops.sqlite3"), "--addr", addr, "--pprof")
	m := metricsListenRe.FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("no metrics address printed: %s", stdout.String())
	}
	if strings.HasSuffix(m[1], ":"+defaultMetricsPort+"/metrics") {
		t.Fatalf("metrics on %s, a port another listener holds", m[1])
	}
	for _, c := range []struct {
		host, header string
		want         int
	}{
		{"", "", 200},
		{"localhost:1234", "", 200},
		{"rebound.example:" + defaultMetricsPort, "", http.StatusMisdirectedRequest},
		{"", "X-Forwarded-For: 203.0.113.5", http.StatusForbidden},
		{"", "Forwarded: for=203.0.113.5", http.StatusForbidden},
	} {
		for _, path := range []string{"/metrics", "/debug/pprof/"} {
			req, err := http.NewRequest("GET", strings.TrimSuffix(m[1], "/metrics")+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.host != "" {
				req.Host = c.host
			}
			if k, v, ok := strings.Cut(c.header, ": "); ok {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("GET %s, Host %q, %q: %d, want %d", path, c.host, c.header, resp.StatusCode, c.want)
			}
		}
	}
}

// TestParseServeFlags: the command line and the environment become the
// server's config, the site's settings among them; nothing is opened.
func TestParseServeFlags(t *testing.T) {
	t.Setenv("LOREM_SECRET_KEY", strings.Repeat("k", 32))
	c, err := parseServeFlags([]string{"--addr", "127.0.0.1:0", "--benchmarking", "--trusted-proxies", "10.0.0.0/8", "--log-level", "warn",
		"--max-in-flight", "8", "--metrics-addr", "127.0.0.1:9100", "--setup", "naive"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		field     string
		got, want any
	}{
		{"benchmarking", c.benchmarking, true},
		{"trusted proxies", len(c.site.TrustedProxies), 1},
		{"max in flight", c.site.MaxInFlight, 8},
		{"secret key", string(c.site.SecretKey), strings.Repeat("k", 32)},
		{"log level", c.logLevel, slog.LevelWarn},
		{"metrics addr", c.metricsAddr, "127.0.0.1:9100"},
		{"metrics", c.metrics, true},
		{"setup", c.db.setup, "naive"},
		{"shutdown timeout", c.shutdownTimeout, 10 * time.Second},
	} {
		if f.got != f.want {
			t.Errorf("%s = %v, want %v", f.field, f.got, f.want)
		}
	}
}

// TestServeAddressInUseAsAProcess: the same in a process of its own,
// where the listening socket goes through the restarter (which can hand
// it to the next process): the hint is still given.
func TestServeAddressInUseAsAProcess(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	out, err := execCommand(t, "serve", "--addr", taken.Addr().String(), "--metrics=false", "--db", filepath.Join(t.TempDir(), "a.sqlite3")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another program listens there; pick another address with --addr HOST:PORT") {
		t.Fatalf("serve on a taken address: %v\n%s", err, out)
	}
}

// TestServeAddressInUse: serving on a taken address fails at once with an
// error that says how to pick another one.
func TestServeAddressInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	err = run(context.Background(), []string{"serve", "--addr", taken.Addr().String(), "--db", filepath.Join(t.TempDir(), "a.sqlite3")}, io.Discard, io.Discard)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("err = %v, want EADDRINUSE", err)
	}
	for _, want := range []string{taken.Addr().String(), "--addr HOST:PORT", "LOREM_ADDR", "make run ADDR="} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestMakeRunAddress: make run passes --addr (and --db) only when ADDR (DB)
// is given, so that serve's environment twins LOREM_ADDR and LOREM_DB work
// through make as well.
func TestMakeRunAddress(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	tests := []struct {
		name    string
		args    []string
		env     []string
		want    string
		notWant []string
	}{
		{"defaults", nil, nil, "bin/loremnews serve --seed-if-empty", []string{"--addr", "--db"}},
		{"LOREM_ADDR", nil, []string{"LOREM_ADDR=127.0.0.1:3001"}, "bin/loremnews serve --seed-if-empty", []string{"--addr"}},
		{"ADDR", []string{"ADDR=127.0.0.1:3002"}, nil, "--addr 127.0.0.1:3002", nil},
		{"DB", []string{"DB=/tmp/x.sqlite3"}, nil, "--db /tmp/x.sqlite3", []string{"--addr"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("make", append([]string{"-n", "-C", filepath.Join("..", ".."), "run"}, tt.args...)...)
			cmd.Env = append(os.Environ(), tt.env...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make -n run: %v\n%s", err, out)
			}
			var line string
			for l := range strings.Lines(string(out)) {
				if strings.Contains(l, "bin/loremnews serve") {
					line = l
				}
			}
			if !strings.Contains(line, tt.want) {
				t.Errorf("make -n run %v = %q, want it to contain %q", tt.args, line, tt.want)
			}
			for _, nw := range tt.notWant {
				if strings.Contains(line, nw) {
					t.Errorf("make -n run %v = %q, passes %s", tt.args, line, nw)
				}
			}
		})
	}
}

// TestSettingsFile: serve --settings-file reads NAME=value lines of the
// environment twins; the command line comes first, then the file, then the
// environment; a line that is not a setting is an error naming it.
func TestSettingsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "serve.env")
	write := func(body string) {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Quotes around a value are dropped, as systemd drops them.
	write("# comment\n\nLOREM_MAX_IN_FLIGHT = 7\nLOREM_LOG_LEVEL='warn'\nLOREM_DB=\"" + filepath.Join(dir, "x.sqlite3") + "\"\n")
	t.Setenv("LOREM_MAX_IN_FLIGHT", "3")
	t.Setenv("LOREM_GC_PERCENT", "200")
	c, err := parseServeFlags([]string{"--settings-file", path, "--log-level", "error"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.site.MaxInFlight != 7 || c.logLevel != slog.LevelError || c.gcPercent != 200 || c.db.dsn != filepath.Join(dir, "x.sqlite3") {
		t.Fatalf("max in flight %d (want 7, the file's), log level %v (want error, the flag's), gc %d (want 200, the environment's), db %s",
			c.site.MaxInFlight, c.logLevel, c.gcPercent, c.db.dsn)
	}
	t.Setenv("LOREM_SETTINGS_FILE", path)
	if c, err := parseServeFlags(nil, io.Discard); err != nil || c.site.MaxInFlight != 7 {
		t.Fatalf("settings file from $LOREM_SETTINGS_FILE: %d, %v", c.site.MaxInFlight, err)
	}
	for body, want := range map[string]string{
		"LOREM_NO_SUCH=1\n":       "serve.env:1: LOREM_NO_SUCH is not a setting of serve",
		"# ok\nmax in flight 3\n": "serve.env:2: want NAME=value",
		"LOREM_MAX_IN_FLIGHT=x\n": `invalid value "x" in ` + path + ": LOREM_MAX_IN_FLIGHT",
	} {
		write(body)
		if _, err := parseServeFlags([]string{"--settings-file", path}, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("settings %q: %v, want an error saying %q", body, err, want)
		}
	}
	if _, err := parseServeFlags([]string{"--settings-file", filepath.Join(dir, "missing.env")}, io.Discard); err == nil || !strings.Contains(err.Error(), "missing.env") {
		t.Errorf("a missing settings file: %v", err)
	}
}
