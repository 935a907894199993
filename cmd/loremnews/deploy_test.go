package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loremnews/loremnews/internal/serveproc"
	"github.com/loremnews/loremnews/internal/testenv"
	"github.com/loremnews/loremnews/load"
	"github.com/loremnews/loremnews/sqlitedb"
)

// The deployment kit in deploy/, run as docs/deploy.md runs it, on this
// machine's loopback addresses: the site behind Debian's Caddy with
// deploy/Caddyfile, and Litestream replicating with deploy/litestream.yml to
// an S3 endpoint (moto's server, from PyPI). scripts/install-test-deps
// installs both.

// kitFile is the path of a file of deploy/.
func kitFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

// startTool runs a program of the kit until the test ends, its output in
// a buffer shown if the test fails.
func startTool(t *testing.T, env []string, name string, args ...string) *syncBuffer {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("%s:\n%s", filepath.Base(name), lastLines(out.String(), 30))
		}
	})
	return out
}

// waitHTTP waits up to 30 s for url to answer.
func waitHTTP(t *testing.T, url string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, url+" to answer", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
}

// clientFrom is a browser that connects from the loopback address ip
// (127.0.0.2, …), so the site can tell it from Caddy, which connects from
// 127.0.0.1.
func clientFrom(ip string) *http.Client {
	jar, _ := cookiejar.New(nil)
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		Transport:     &http.Transport{DialContext: dialer.DialContext},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

var deployCSRFRe = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// submit loads page, then posts form to path with the page's CSRF token,
// and returns the status and Location.
func submit(t *testing.T, c *http.Client, base, page, path string, form url.Values, header ...string) (int, string) {
	t.Helper()
	resp, err := c.Get(base + page)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := deployCSRFRe.FindSubmatch(body)
	if m == nil {
		t.Fatalf("GET %s: %d, no form token:\n%.300s", page, resp.StatusCode, body)
	}
	form.Set("csrf_token", string(m[1]))
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// TestBehindCaddy: the site served through Caddy with the kit's Caddyfile:
// pages, sign-up, sign-in, a post; the address the site logs and limits
// sign-ins by is the client's, not Caddy's, and a client cannot pose as
// another with its own X-Forwarded-For.
func TestBehindCaddy(t *testing.T) {
	caddy, err := exec.LookPath("caddy")
	if err != nil {
		testenv.Missing(t, "needs Debian's caddy: run scripts/install-test-deps (make test does)")
	}
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		if ln, err := net.Listen("tcp", ip+":0"); err != nil {
			t.Fatalf("this machine has no loopback address %s to be a client from: %v", ip, err)
		} else {
			ln.Close()
		}
	}
	dir := t.TempDir()
	// As deploy/loremnews.service sets it, on free ports.
	srv := startServer(t, filepath.Join(dir, "site.sqlite3"), "--trusted-proxies", "127.0.0.1", "--bcrypt-cost", "4", "--log-level", "debug")
	upstream := strings.TrimPrefix(srv.URL, "http://")
	site := "127.0.0.1:" + freePort(t)
	startTool(t, []string{"LOREM_SITE=http://" + site, "LOREM_UPSTREAM=" + upstream, "CADDY_ADMIN=off",
		"HOME=" + dir, "XDG_DATA_HOME=" + filepath.Join(dir, "data"), "XDG_CONFIG_HOME=" + filepath.Join(dir, "config")},
		caddy, "run", "--config", kitFile(t, "Caddyfile"), "--adapter", "caddyfile")
	base := "http://" + site
	waitHTTP(t, base+"/up")

	alice := clientFrom("127.0.0.2")
	resp, err := alice.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET / through Caddy: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if code, loc := submit(t, alice, base, "/signup", "/signup", url.Values{"screen_name": {"alice"}, "password": {"correct horse battery"}}); code != http.StatusSeeOther {
		t.Fatalf("sign up through Caddy: %d %s", code, loc)
	}
	code, loc := submit(t, alice, base, "/posts/new", "/posts", url.Values{"title": {"Deployed behind Caddy"}, "description": {"Through the proxy."}},
		"X-Forwarded-For", "203.0.113.9") // a client's own header, which Caddy must not pass on as the client
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/posts/") {
		t.Fatalf("create a post through Caddy: %d %s", code, loc)
	}
	resp, err = alice.Get(base + loc)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Deployed behind Caddy") {
		t.Fatalf("GET %s through Caddy: %d", loc, resp.StatusCode)
	}

	// The site's request log names the client: 127.0.0.2, never Caddy's
	// 127.0.0.1 nor the address the client wrote itself.
	postLogged := regexp.MustCompile(`msg=request method=POST path=/posts .*status=303`)
	testenv.WaitFor(t, 5*time.Second, "the post's request in the log", func() bool {
		return postLogged.MatchString(srv.stderr.String())
	})
	logged := 0
	for _, line := range strings.Split(srv.stderr.String(), "\n") {
		if !strings.Contains(line, `msg=request`) || strings.Contains(line, "path=/up") {
			continue
		}
		logged++
		if !strings.Contains(line, "client=127.0.0.2") {
			t.Errorf("the site logged a request through Caddy with another client: %s", line)
		}
	}
	if logged < 5 { // GET /, the sign-up form and post, the post form and post, the post's page
		t.Errorf("%d requests logged, want the 6 made through Caddy", logged)
	}

	// Sign-in limits count by client: five wrong passwords for alice from
	// 127.0.0.2 lock that address out of her account, not 127.0.0.3.
	mallory := clientFrom("127.0.0.2")
	for i := range 5 {
		if code, _ := submit(t, mallory, base, "/signin", "/signin", url.Values{"screen_name": {"alice"}, "password": {fmt.Sprintf("guess %d", i)}}); code == http.StatusTooManyRequests {
			t.Fatalf("guess %d already limited", i+1)
		}
	}
	if code, _ := submit(t, mallory, base, "/signin", "/signin", url.Values{"screen_name": {"alice"}, "password": {"guess 6"}}); code != http.StatusTooManyRequests {
		t.Fatalf("the sixth wrong password from 127.0.0.2: %d, want 429", code)
	}
	bob := clientFrom("127.0.0.3")
	if code, _ := submit(t, bob, base, "/signin", "/signin", url.Values{"screen_name": {"alice"}, "password": {"a typo"}}); code == http.StatusTooManyRequests {
		t.Fatal("a wrong password from 127.0.0.3 got 429: the site limits Caddy's address, not the client's")
	}
	if code, _ := submit(t, bob, base, "/signin", "/signin", url.Values{"screen_name": {"alice"}, "password": {"correct horse battery"}}); code != http.StatusSeeOther {
		t.Fatalf("alice signing in from 127.0.0.3: %d, want 303", code)
	}
}

// TestLitestreamToS3: the kit's Litestream configuration replicates the
// live database to an S3 endpoint while the site takes writes; a restore
// from the bucket holds every write the site acknowledged, and passes the
// integrity check, the foreign keys and the counter caches.
func TestLitestreamToS3(t *testing.T) {
	litestream, endpoint := startS3(t)
	dir := t.TempDir()

	dbPath := filepath.Join(dir, "live.sqlite3")
	seedFile(t, dbPath, "--users", "30", "--posts", "100")
	env := []string{"LOREM_DB=" + dbPath, "LITESTREAM_BUCKET=loremnews-backups", "LITESTREAM_REGION=us-east-1",
		"LITESTREAM_ENDPOINT=" + endpoint, "LITESTREAM_ACCESS_KEY_ID=test", "LITESTREAM_SECRET_ACCESS_KEY=test",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		// A CA bundle this machine may name for HTTPS makes the AWS SDK
		// refuse Litestream's HTTP client; the emulator is plain HTTP.
		"AWS_CA_BUNDLE="}
	srv := startServer(t, dbPath, "--benchmarking")
	lsLog := startTool(t, env, litestream, "replicate", "-config", kitFile(t, "litestream.yml"))

	var w writes
	res, err := load.Run(context.Background(), load.Config{URL: srv.URL + "/benchmarking/write_heavy", Method: http.MethodPost,
		Concurrency: 8, Duration: 4 * time.Second, DisableRedirects: true, OnResponse: w.note})
	if err != nil || res.Failures != 0 {
		t.Fatalf("load: %v %v %v", err, res.StatusCodes, res.Errors)
	}
	srv.signal(syscall.SIGTERM, 15*time.Second)
	live := mustConsistent(t, dbPath)

	restored, attempt, lastTry := restoreUntilLive(t, dir, live, "the S3 replica", func(path string) ([]byte, error) {
		cmd := exec.Command(litestream, "restore", "-config", kitFile(t, "litestream.yml"), "-o", path, dbPath)
		cmd.Env = append(os.Environ(), env...)
		return cmd.CombinedOutput()
	})
	if t.Failed() {
		t.Logf("last restore: %s\nlitestream:\n%s", lastTry, lastLines(lsLog.String(), 30))
		return
	}
	found, expected := checkAcknowledged(t, restored, &w)
	got := mustConsistent(t, restored)
	t.Logf("Litestream to S3: %d write_heavy requests (%d failed); restore %d from the bucket: %d users, %d posts, %d comments (live %d, %d, %d); acknowledged rows found %d of %d; integrity %s",
		res.Requests, res.Failures, attempt, got.Users, got.Posts, got.Comments, live.Users, live.Posts, live.Comments, found, expected, got.Integrity)

	// The guide's restore drill, as it is written there, with this test's
	// paths: it passes twice in a row (each time in a fresh folder), with
	// an AWS_CA_BUNDLE in the environment that would break the restore,
	// and does not pass when the restore fails (a bucket that is not
	// there).
	drill := guideBlock(t, "## 7. Restore drill")
	for i, bucket := range []string{"loremnews-backups", "loremnews-backups", "no-such-bucket"} {
		envFile := filepath.Join(dir, fmt.Sprintf("litestream-%d.env", i))
		body := strings.Join([]string{"LITESTREAM_BUCKET=" + bucket, "LITESTREAM_REGION=us-east-1", "LITESTREAM_ENDPOINT=" + endpoint,
			"LITESTREAM_ACCESS_KEY_ID=test", "LITESTREAM_SECRET_ACCESS_KEY=test"}, "\n") + "\n"
		if err := os.WriteFile(envFile, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		script := strings.NewReplacer("/etc/loremnews/litestream.env", envFile, "/etc/loremnews/litestream.yml", kitFile(t, "litestream.yml"),
			"/var/lib/loremnews/loremnews.sqlite3", dbPath, "litestream restore", litestream+" restore", "loremnews backup", binary(t)+" backup").Replace(drill)
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "AWS_CA_BUNDLE="+filepath.Join(dir, "no-such-bundle.pem"))
		out, _ := cmd.CombinedOutput()
		passed := strings.Contains(string(out), "restore drill passed")
		if want := bucket != "no-such-bucket"; passed != want {
			t.Fatalf("the guide's restore drill from bucket %s: passed %v, want %v:\n%s", bucket, passed, want, out)
		}
		if passed && !strings.Contains(string(out), fmt.Sprintf("%d users, %d posts, %d comments; integrity ok", live.Users, live.Posts, live.Comments)) {
			t.Fatalf("the drill's check does not show the live data (%+v):\n%s", live, out)
		}
	}
}

// guideBlock is the first shell block under heading in docs/deploy.md.
func guideBlock(t *testing.T, heading string) string {
	t.Helper()
	guide, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(guide), "\n"+heading+"\n")
	_, block, ok2 := strings.Cut(after, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("docs/deploy.md has no shell block under %q", heading)
	}
	return block
}

// TestKitUnitsAreHardened: systemd rates each unit of the kit at 2.0 or
// less ("OK") on its exposure scale, read from the unit file alone.
func TestKitUnitsAreHardened(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		testenv.Missing(t, "systemd-analyze is not installed (apt install systemd; scripts/install-test-deps does)")
	}
	for _, unit := range []string{"loremnews.service", "loremnews-litestream.service", "loremnews-backup.service"} {
		out, err := exec.Command("systemd-analyze", "security", "--offline=yes", kitFile(t, unit)).CombinedOutput()
		if err != nil {
			t.Fatalf("systemd-analyze security %s: %v\n%s", unit, err, out)
		}
		m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("systemd-analyze security %s said no exposure level:\n%s", unit, out)
		}
		level, _ := strconv.ParseFloat(string(m[1]), 64)
		t.Logf("%s: exposure %.1f", unit, level)
		if level > 2.0 {
			t.Errorf("%s: exposure %.1f, want 2.0 or less:\n%s", unit, level, out)
		}
	}
}

// TestKitServiceCommandLine: the unit's ExecStart and ExecReload, with
// the kit's settings file, are command lines loremnews accepts, with the
// settings the guide says they set.
func TestKitServiceCommandLine(t *testing.T) {
	unit, err := os.ReadFile(kitFile(t, "loremnews.service"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret-key"), []byte(strings.Repeat("k", 64)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := map[string][]string{}
	for _, line := range strings.Split(string(unit), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && (k == "ExecStart" || k == "ExecReload") {
			v = strings.ReplaceAll(v, "%d", dir) // systemd's credentials directory
			v = strings.ReplaceAll(v, "/etc/loremnews/serve.env", kitFile(t, "serve.env"))
			lines[k] = strings.Fields(v)
		}
	}
	start, reload := lines["ExecStart"], lines["ExecReload"]
	if len(start) < 2 || start[0] != "/usr/local/bin/loremnews" || start[1] != "serve" || len(reload) < 2 || reload[1] != "reload" {
		t.Fatalf("ExecStart %q, ExecReload %q", start, reload)
	}
	c, err := parseServeFlags(start[2:], io.Discard)
	if err != nil {
		t.Fatalf("ExecStart: %v", err)
	}
	for _, f := range []struct {
		what      string
		got, want any
	}{
		{"addr", c.addr, "127.0.0.1:3000"},
		{"database", c.db.dsn, "/var/lib/loremnews/loremnews.sqlite3"},
		{"allowed hosts", strings.Join(c.site.AllowedHosts, ","), "news.example.com"},
		{"trusted proxies", len(c.site.TrustedProxies), 1},
		{"secure cookies", c.site.SecureCookies, true},
		{"metrics", c.metricsAddr, "127.0.0.1:9464"},
		{"secret key", len(c.site.SecretKey), 64},
		{"pid file", c.pidFile, "/run/loremnews/serve.pid"},
		{"benchmarking", c.benchmarking, false},
	} {
		if f.got != f.want {
			t.Errorf("%s = %v, want %v", f.what, f.got, f.want)
		}
	}
	if !slices.Contains(reload, "--pid-file") || !slices.Contains(reload, "/run/loremnews/serve.pid") {
		t.Errorf("ExecReload %q does not name serve's PID file", reload)
	}
	// reload must parse its flags (a usage error is exit 2 before it
	// signals anything: every reload would fail), and give up before
	// systemd ends it at TimeoutStartSec (90 s unless the unit sets it).
	args := slices.Clone(reload[2:])
	args[slices.Index(args, "/run/loremnews/serve.pid")] = filepath.Join(dir, "no-such.pid")
	var usage *usageError
	if err := runReload(context.Background(), args, io.Discard, io.Discard); err == nil || errors.As(err, &usage) {
		t.Errorf("ExecReload %q: %v; want its flags accepted (and then no server found)", reload, err)
	}
	if i := slices.Index(reload, "--timeout"); i >= 0 {
		if d, err := time.ParseDuration(reload[i+1]); err != nil || d >= 90*time.Second {
			t.Errorf("ExecReload's --timeout %q (%v): want a Go duration under systemd's 90 s", reload[i+1], err)
		}
	}
}

// TestGuideLetsTheServiceReadItsSettings: the guide's commands make
// /etc/loremnews and serve.env readable by the service's group (serve,
// running as loremnews, reads the settings itself) and keep the secret key
// root's alone (systemd reads it for LoadCredential).
func TestGuideLetsTheServiceReadItsSettings(t *testing.T) {
	installed, guide := guideInstalls(t)
	for path, want := range map[string]map[string]string{
		"/etc/loremnews":           {"-m": "0750", "-o": "root", "-g": "loremnews"},
		"/etc/loremnews/serve.env": {"-m": "0640", "-o": "root", "-g": "loremnews"},
	} {
		got, ok := installed[path]
		if !ok {
			t.Errorf("the guide does not install %s", path)
			continue
		}
		for flag, v := range want {
			if got[flag] != v {
				t.Errorf("the guide installs %s with %s %q, want %q (the service reads it as group loremnews)", path, flag, got[flag], v)
			}
		}
	}
	if !strings.Contains(guide, "chmod 0600 /etc/loremnews/secret-key") {
		t.Error("the guide does not keep the secret key root's alone (chmod 0600)")
	}
}

// guideInstalls reads docs/deploy.md: install's -m, -o and -g for each
// path the guide installs, and the page.
func guideInstalls(t *testing.T) (installed map[string]map[string]string, guide string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	installed = map[string]map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "install" {
			continue
		}
		flags := map[string]string{}
		for i := 1; i+1 < len(f); i++ {
			if strings.HasPrefix(f[i], "-") && f[i] != "-d" {
				flags[f[i]] = f[i+1]
				i++
			}
		}
		installed[f[len(f)-1]] = flags
	}
	return installed, string(b)
}

// TestServiceRunsAsItsUser: the unit's ExecStart and ExecReload, run as
// an unprivileged user as the unit runs them (here nobody, standing in
// for loremnews), on the guide's folders with the guide's modes and
// owners and systemd's umask: the site starts and serves, reads its
// settings itself, reloads, and makes its database group-writable for
// the Litestream user. Needs root, to hand the files over.
func TestServiceRunsAsItsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Missing(t, "needs root, to run the service as another user")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		testenv.Missing(t, "needs setpriv (util-linux)")
	}
	const user = 65534 // nobody, in group nogroup: the service's user and group here
	installed, _ := guideInstalls(t)
	unit, err := os.ReadFile(kitFile(t, "loremnews.service"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for d := root; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // the test's own folders: let the user through
	}
	etc := filepath.Join(root, "etc", "loremnews")
	state := filepath.Join(root, "var", "lib", "loremnews")
	run := filepath.Join(root, "run", "loremnews")
	creds := filepath.Join(root, "credentials")
	for _, d := range []string{"etc", "var/lib", "run"} { // as on any system: 0755, root's
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// As the guide installs them, its loremnews group being the user's.
	install := func(path string, mode os.FileMode, guidePath string, body []byte) {
		t.Helper()
		flags, ok := installed[guidePath]
		if !ok {
			t.Fatalf("the guide does not install %s", guidePath)
		}
		var m uint64
		if _, err := fmt.Sscanf(flags["-m"], "%o", &m); err != nil {
			t.Fatalf("the guide installs %s with mode %q", guidePath, flags["-m"])
		}
		if body == nil {
			err = os.MkdirAll(path, 0o700)
		} else {
			err = os.WriteFile(path, body, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		gid := 0
		if flags["-g"] == "loremnews" {
			gid = user
		}
		if err := os.Chown(path, 0, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, os.FileMode(m)); err != nil {
			t.Fatal(err)
		}
	}
	install(etc, 0, "/etc/loremnews", nil)
	settings, err := os.ReadFile(kitFile(t, "serve.env"))
	if err != nil {
		t.Fatal(err)
	}
	settings = []byte(strings.ReplaceAll(string(settings), "/var/lib/loremnews", state))
	install(filepath.Join(etc, "serve.env"), 0, "/etc/loremnews/serve.env", settings)
	// What systemd makes: the state folder (StateDirectoryMode), the
	// runtime folder, and the credential, each the user's.
	for dir, mode := range map[string]os.FileMode{state: 0o770, run: 0o755, creds: 0o500} {
		if err := os.MkdirAll(dir, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, mode)
		os.Chown(dir, user, user)
	}
	if err := os.WriteFile(filepath.Join(creds, "secret-key"), []byte(strings.Repeat("k", 64)+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(creds, "secret-key"), user, user)

	// The binary where the guide installs it: 0755, root's.
	bin := filepath.Join(root, "usr", "local", "bin", "loremnews")
	b, err := os.ReadFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	exec1 := func(key string) string {
		for _, line := range strings.Split(string(unit), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && k == key {
				return strings.NewReplacer("/usr/local/bin/loremnews", bin, "/etc/loremnews", etc, "/run/loremnews", run, "%d", creds).Replace(v)
			}
		}
		t.Fatalf("the unit has no %s", key)
		return ""
	}
	umask := "0007"
	if m := regexp.MustCompile(`(?m)^UMask=(\d+)$`).FindSubmatch(unit); m != nil {
		umask = string(m[1])
	}
	asUser := func(cmdline string) *exec.Cmd {
		return exec.Command("setpriv", "--reuid", fmt.Sprint(user), "--regid", fmt.Sprint(user), "--clear-groups",
			"sh", "-c", "cd / && umask "+umask+" && exec "+cmdline) // systemd starts a service in /, with its UMask=
	}
	logPath := filepath.Join(root, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	// Free ports for this test; everything else is the unit's and the
	// settings file's.
	srv := asUser(exec1("ExecStart") + " --addr 127.0.0.1:0 --metrics-addr 127.0.0.1:0")
	srv.Stdout, srv.Stderr = logFile, logFile
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(run, "serve.pid")
	t.Cleanup(func() {
		if pid, err := readPID(pidFile); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		srv.Process.Kill()
		srv.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("server log:\n%s", lastLines(string(b), 30))
		}
	})
	url := waitForLog(t, logPath, serveproc.ListeningURL)
	first := waitForPID(t, pidFile, 0)
	up := func() int {
		req, _ := http.NewRequest(http.MethodGet, url+"/up", nil)
		req.Host = "news.example.com" // LOREM_ALLOWED_HOSTS in the settings file
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET /up: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := up(); code != http.StatusOK {
		t.Fatalf("GET /up as the site's name: %d", code)
	}
	if out, err := asUser(exec1("ExecReload")).CombinedOutput(); err != nil {
		t.Fatalf("ExecReload as the user: %v\n%s", err, out)
	}
	if pid := waitForPID(t, pidFile, first); pid == first || up() != http.StatusOK {
		t.Fatalf("after the reload: PID %d (was %d)", pid, first)
	}
	fi, err := os.Stat(filepath.Join(state, "loremnews.sqlite3"))
	if err != nil {
		t.Fatal(err)
	}
	// make's SQLite creates files 0660 less the umask; a plain go build's
	// 0644 (then Litestream's user cannot take part in the locking).
	if _, opts, err := sqlitedb.Library(); err != nil || !slices.Contains(opts, "DEFAULT_FILE_PERMISSIONS=0660") {
		t.Skipf("this build's SQLite creates files 0644 (%v, %v): build through make (CGO_CFLAGS) to check the database's mode", opts, err)
	}
	if fi.Mode().Perm()&0o060 != 0o060 || fi.Mode().Perm()&0o007 != 0 {
		t.Errorf("the database is %v: want it the group's to read and write (Litestream's user), no one else's", fi.Mode().Perm())
	}
}

// TestLitestreamAsItsOwnUser: the kit's split of users, with real
// processes: the site as one unprivileged user, Litestream as another of
// the site's group, both with the units' umask, on a folder the site's
// user owns with the unit's mode. Litestream takes part in the locking and
// replicates (no permission error), and a restore holds the live data.
// Needs root, to run them as those users.
func TestLitestreamAsItsOwnUser(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Missing(t, "needs root, to run the site and Litestream as other users")
	}
	litestream, endpoint := startS3(t)
	const site, replicator, group = 65534, 65533, 65534 // nobody, a user of nobody's group, nogroup
	root := t.TempDir()
	for d := root; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	// Each program where the other users may run it, as /usr/local/bin.
	bin := filepath.Join(root, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{binary(t), litestream} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, filepath.Base(src)), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The state folder as StateDirectory= makes it; the site creates its
	// database there, as on a new server.
	state := filepath.Join(root, "state")
	dbPath := filepath.Join(state, "loremnews.sqlite3")
	if err := os.Mkdir(state, 0o770); err != nil {
		t.Fatal(err)
	}
	os.Chmod(state, 0o770)
	os.Chown(state, site, site)

	as := func(uid int, cmdline string) []string {
		return []string{"--reuid", fmt.Sprint(uid), "--regid", fmt.Sprint(group), "--clear-groups", "sh", "-c", "cd / && umask 0007 && exec " + cmdline}
	}
	siteLog := startTool(t, nil, "setpriv", as(site, filepath.Join(bin, "loremnews")+" serve --addr 127.0.0.1:0 --metrics=false --benchmarking --seed-if-empty --users 20 --posts 60 --db "+dbPath)...)
	var url string
	testenv.WaitFor(t, 30*time.Second, "the site to listen", func() bool {
		var ok bool
		url, ok = serveproc.ListeningURL(siteLog.String())
		return ok
	})
	env := []string{"HOME=" + root, "LOREM_DB=" + dbPath, "LITESTREAM_BUCKET=loremnews-backups", "LITESTREAM_REGION=us-east-1",
		"LITESTREAM_ENDPOINT=" + endpoint, "LITESTREAM_ACCESS_KEY_ID=test", "LITESTREAM_SECRET_ACCESS_KEY=test", "AWS_CA_BUNDLE="}
	config := filepath.Join(root, "litestream.yml")
	b, err := os.ReadFile(kitFile(t, "litestream.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, b, 0o644); err != nil {
		t.Fatal(err)
	}
	lsLog := startTool(t, env, "setpriv", as(replicator, filepath.Join(bin, "litestream")+" replicate -config "+config)...)

	res, err := load.Run(context.Background(), load.Config{URL: url + "/benchmarking/write_heavy", Method: http.MethodPost,
		Concurrency: 8, Duration: 3 * time.Second, DisableRedirects: true})
	if err != nil || res.Failures != 0 {
		t.Fatalf("load: %v %v %v", err, res.StatusCodes, res.Errors)
	}
	live := mustConsistent(t, dbPath)
	restored, attempts, lastTry := restoreUntilLive(t, root, live, "the replica of Litestream's own user", func(path string) ([]byte, error) {
		cmd := exec.Command(litestream, "restore", "-config", config, "-o", path, dbPath)
		cmd.Env = append(os.Environ(), env...)
		return cmd.CombinedOutput()
	})
	if out := lsLog.String(); strings.Contains(out, "permission denied") || strings.Contains(out, "readonly") {
		t.Errorf("Litestream as its own user met a permission error:\n%s", lastLines(out, 20))
	}
	if t.Failed() {
		t.Logf("last restore: %s\nlitestream:\n%s", lastTry, lastLines(lsLog.String(), 20))
		return
	}
	got := mustConsistent(t, restored)
	t.Logf("site as uid %d, Litestream as uid %d (group %d): %d write_heavy requests; restore %d holds %d users, %d posts, %d comments (live %d, %d, %d)",
		site, replicator, group, res.Requests, attempts, got.Users, got.Posts, got.Comments, live.Users, live.Posts, live.Comments)
}

// startS3 starts moto's S3 server on a free loopback port with the bucket
// loremnews-backups made, for the rest of the test, and returns the
// Litestream to replicate with and the endpoint. Both tools come from
// scripts/install-test-deps.
func startS3(t *testing.T) (litestream, endpoint string) {
	t.Helper()
	litestream, _ = filepath.Abs(filepath.Join("..", "..", "bin", "tools", "litestream"))
	moto, _ := filepath.Abs(filepath.Join("..", "..", "bin", "tools", "moto", "bin", "moto_server"))
	for _, tool := range []string{litestream, moto} {
		if _, err := os.Stat(tool); err != nil {
			testenv.Missing(t, "needs %s: run scripts/install-test-deps (make test does)", filepath.Base(tool))
		}
	}
	port := freePort(t)
	endpoint = "http://127.0.0.1:" + port
	startTool(t, nil, moto, "-H", "127.0.0.1", "-p", port)
	waitHTTP(t, endpoint)
	// An S3 emulator takes any credentials; make the bucket.
	req, _ := http.NewRequest(http.MethodPut, endpoint+"/loremnews-backups", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("create the bucket: %d", resp.StatusCode)
	}
	return litestream, endpoint
}
