package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/serveproc"
	"github.com/loremnews/loremnews/internal/testenv"
	"github.com/loremnews/loremnews/load"
	"github.com/loremnews/loremnews/sqlite"
)

// TestRestartDropsNoRequest replaces a loaded server three times with
// SIGHUP, as a deploy does (systemctl reload): 20 clients on the balanced
// mix for about 20 s, each replacement a new process of the binary that
// opens the same database beside the old one (two processes writing one
// file) and takes over the listening socket. No request may fail (no
// connection error, nothing but 200 and 303), every write the server
// acknowledged must be in the database afterwards (and every delete it
// acknowledged gone), and the database must be consistent.
func TestRestartDropsNoRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a 20 s load test")
	}
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "restart.sqlite3")
	seedFile(t, db, "--users", "50", "--posts", "200")
	before := consistency(t, db)

	pidFile := filepath.Join(dir, "serve.pid")
	logPath := filepath.Join(dir, "serve.log")
	cmd := exec.Command(binary(t), "serve", "--addr", "127.0.0.1:0", "--db", db, "--benchmarking",
		"--pid-file", pidFile, "--log-level", "info", "--shutdown-timeout", "10s")
	// As systemd would (Type=notify): each process that becomes ready
	// must say so, with its PID.
	notified := listenNotify(t, filepath.Join(dir, "notify"))
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+filepath.Join(dir, "notify"))
	serving := startReloadable(t, cmd, logPath)
	url := waitForLog(t, logPath, serveproc.ListeningURL)
	pid := waitForPID(t, pidFile, 0)
	if pid != cmd.Process.Pid {
		t.Fatalf("pid file says %d, the server is %d", pid, cmd.Process.Pid)
	}

	var w writes
	loadDone := make(chan *load.Result, 1)
	loadStart := time.Now()
	go func() {
		res, err := load.Run(ctx, load.Config{URL: url + "/benchmarking/balanced", Method: http.MethodPost, Concurrency: 20,
			Duration: 20 * time.Second, DisableRedirects: true, OnResponse: w.note})
		if err != nil {
			t.Error(err)
		}
		loadDone <- res
	}()

	type replacement struct {
		from, took time.Duration // since the load started
		said       string
	}
	var replacements []replacement
	for range 3 {
		time.Sleep(4 * time.Second)
		old := pid
		start := time.Now()
		// What systemd's ExecReload runs (deploy/loremnews.service).
		out, err := exec.Command(binary(t), "reload", "--pid-file", pidFile).CombinedOutput()
		if err != nil {
			t.Fatalf("reload: %v\n%s", err, out)
		}
		pid = waitForPID(t, pidFile, old)
		serving[pid] = true
		if running(old) {
			t.Fatalf("reload returned (%s) while the old process %d still runs", strings.TrimSpace(string(out)), old)
		}
		replacements = append(replacements, replacement{start.Sub(loadStart), time.Since(start), strings.TrimSpace(string(out))})
	}
	res := <-loadDone
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, 30*time.Second)

	for p := range serving {
		if msg := notified(p); msg != fmt.Sprintf("MAINPID=%d\nREADY=1", p) {
			t.Errorf("process %d told the service manager %q, want its MAINPID and READY=1", p, msg)
		}
	}
	for i, r := range replacements {
		// The load's seconds that the reload overlapped, by completion time.
		var ok, failed int64
		first, last := int(r.from/time.Second), int((r.from+r.took)/time.Second)
		for _, p := range res.Timeline {
			if p.Second >= first && p.Second <= last {
				ok, failed = ok+p.Successes, failed+p.Failures
			}
		}
		t.Logf("replacement %d at %.2f s: `loremnews reload` took %v (%s); the load's seconds %d–%d around it: %d answered, %d failed",
			i+1, r.from.Seconds(), r.took.Round(time.Millisecond), r.said, first, last, ok, failed)
	}
	t.Logf("load: %d requests in %v (%.0f/s), %d failed, statuses %v, errors %v", res.Requests, res.Elapsed.Round(time.Millisecond),
		res.RequestsPerSec(), res.Failures, res.StatusCodes, res.Errors)
	if res.Requests < 1000 {
		t.Errorf("only %d requests: the load did not run", res.Requests)
	}
	if res.Failures != 0 {
		t.Errorf("%d requests failed (statuses %v, errors %v), want 0", res.Failures, res.StatusCodes, res.Errors)
	}
	for status := range res.StatusCodes {
		if status != http.StatusOK && status != http.StatusSeeOther {
			t.Errorf("status %d answered %d times, want only 200 and 303", status, res.StatusCodes[status])
		}
	}

	// Every acknowledged write, checked in the file with the store.
	found, expected := checkAcknowledged(t, db, &w)
	sdb, err := sqlite.Open(ctx, sqlite.Config{DSN: db})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	after, err := sdb.CheckConsistency(ctx)
	if err != nil || !after.OK() {
		t.Fatalf("after the restarts: %+v, %v", after, err)
	}
	if want := before.Posts + len(w.postsCreated) - len(w.postsDeleted); after.Posts != want {
		t.Errorf("posts: %d, want %d before + %d created − %d deleted = %d", after.Posts, before.Posts, len(w.postsCreated), len(w.postsDeleted), want)
	}
	t.Logf("acknowledged writes: %d posts and %d comments created, %d posts and %d comments deleted; of the created rows not deleted since, %d of %d found; integrity %s",
		len(w.postsCreated), len(w.commentsCreated), len(w.postsDeleted), len(w.commentsDeleted), found, expected, after.Integrity)
}

// writes are what the server said its writes did (X-Benchmark-Wrote),
// for the acknowledged ones: a 303.
type writes struct {
	mu              sync.Mutex
	postsCreated    map[int64]bool
	commentsCreated map[int64]int64 // comment → its post
	postsDeleted    map[int64]bool
	commentsDeleted map[int64]bool
}

func (w *writes) note(resp *http.Response) {
	if resp.StatusCode != http.StatusSeeOther {
		return
	}
	var id, post int64
	wrote := resp.Header.Get("X-Benchmark-Wrote")
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.postsCreated == nil {
		w.postsCreated, w.commentsCreated = map[int64]bool{}, map[int64]int64{}
		w.postsDeleted, w.commentsDeleted = map[int64]bool{}, map[int64]bool{}
	}
	switch action := resp.Header.Get("X-Benchmark-Action"); action {
	case "post_create", "post_destroy":
		if _, err := fmt.Sscanf(wrote, "post=%d", &id); err != nil {
			panic(fmt.Sprintf("%s: X-Benchmark-Wrote %q", action, wrote))
		}
		if action == "post_create" {
			w.postsCreated[id] = true
		} else {
			w.postsDeleted[id] = true
		}
	case "comment_create", "comment_destroy":
		if _, err := fmt.Sscanf(wrote, "comment=%d post=%d", &id, &post); err != nil {
			panic(fmt.Sprintf("%s: X-Benchmark-Wrote %q", action, wrote))
		}
		if action == "comment_create" {
			w.commentsCreated[id] = post
		} else {
			w.commentsDeleted[id] = true
		}
	}
}

// waitForLog waits up to 30 s for find to match the log at path.
func waitForLog(t *testing.T, path string, find func(string) (string, bool)) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if v, ok := find(string(b)); ok {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("not in the log after 30 s:\n%s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForPID waits up to 30 s for the pid file to name a process other
// than old, and returns it.
func waitForPID(t *testing.T, path string, old int) (pid int) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, "the pid file "+path+" to name a new process", func() bool {
		p, err := readPID(path)
		if err == nil && p != old {
			pid = p
		}
		return pid != 0
	})
	return pid
}

// waitGone waits for process pid to exit (to be gone, or a zombie no one
// has reaped yet), failing the test after within.
func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	testenv.WaitFor(t, within, fmt.Sprintf("process %d to exit", pid), func() bool { return !running(pid) })
}

// TestReloadThatFailsKeepsServing: when the new process cannot start (here
// the executable was replaced by one that exits at once), reload says so
// and the old process goes on serving on the same address.
func TestReloadThatFailsKeepsServing(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "loremnews")
	b, err := os.ReadFile(binary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile, logPath := filepath.Join(dir, "serve.pid"), filepath.Join(dir, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "f.sqlite3"), "--pid-file", pidFile)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	url := waitForLog(t, logPath, serveproc.ListeningURL)
	waitForPID(t, pidFile, 0)

	// A broken build put in place of the binary.
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho broken build >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Reload says why as soon as the server knows, not when its timeout
	// ends: the server's reason (the new process exited) in its message.
	out, err := execCommand(t, "reload", "--pid-file", pidFile, "--timeout", "10m").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the new process did not take over (") || !strings.Contains(string(out), "goes on serving") {
		t.Fatalf("reload with a broken binary: %v\n%s", err, out)
	}
	if pid, _ := readPID(pidFile); pid != cmd.Process.Pid {
		t.Fatalf("the pid file says %d, want the old process %d", pid, cmd.Process.Pid)
	}
	resp, err := http.Get(url + "/up")
	if err != nil {
		t.Fatalf("the old process stopped serving: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /up: %d", resp.StatusCode)
	}
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "did not take over") {
		t.Errorf("the log does not say the new process failed:\n%s", b)
	}
}

// listenNotify listens where $NOTIFY_SOCKET points, as systemd does, and
// returns what process pid sent there ("" if nothing).
func listenNotify(t *testing.T, path string) (sent func(pid int) string) {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var mu sync.Mutex
	var msgs []string
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			mu.Lock()
			msgs = append(msgs, string(buf[:n]))
			mu.Unlock()
		}
	}()
	return func(pid int) string {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			if strings.HasPrefix(m, fmt.Sprintf("MAINPID=%d\n", pid)) {
				return m
			}
		}
		return ""
	}
}

// checkAcknowledged checks, in the database file at path, that every row
// an acknowledged write created is there unless an acknowledged delete
// removed it (or its post) since, and that every row an acknowledged
// delete removed is gone. It returns how many created rows were expected
// and found.
func checkAcknowledged(t *testing.T, path string, w *writes) (found, expected int) {
	t.Helper()
	ctx := context.Background()
	sdb, err := sqlite.Open(ctx, sqlite.Config{DSN: path})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	for id := range w.postsCreated {
		_, err := sdb.FindPostByID(ctx, id)
		if w.postsDeleted[id] {
			if loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
				t.Errorf("post %d was created, then deleted (both acknowledged), and is there: %v", id, err)
			}
			continue
		}
		expected++
		if err != nil {
			t.Errorf("post %d was acknowledged and is missing: %v", id, err)
			continue
		}
		found++
	}
	for id, postID := range w.commentsCreated {
		_, err := sdb.FindCommentByID(ctx, id)
		if w.commentsDeleted[id] || w.postsDeleted[postID] {
			if loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
				t.Errorf("comment %d was created, then deleted (both acknowledged), and is there: %v", id, err)
			}
			continue
		}
		expected++
		if err != nil {
			t.Errorf("comment %d was acknowledged and is missing: %v", id, err)
			continue
		}
		found++
	}
	for id := range w.postsDeleted {
		if _, err := sdb.FindPostByID(ctx, id); loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
			t.Errorf("post %d was deleted (acknowledged) and is there: %v", id, err)
		}
	}
	for id := range w.commentsDeleted {
		if _, err := sdb.FindCommentByID(ctx, id); loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
			t.Errorf("comment %d was deleted (acknowledged) and is there: %v", id, err)
		}
	}
	return found, expected
}

// TestReloadTakesNewSettings: the process a reload starts reads the
// settings file again, so a changed setting takes effect without a
// restart (here the names the site answers to).
func TestReloadTakesNewSettings(t *testing.T) {
	dir := t.TempDir()
	settings, pidFile, logPath := filepath.Join(dir, "serve.env"), filepath.Join(dir, "serve.pid"), filepath.Join(dir, "serve.log")
	write := func(hosts string) {
		body := "# as /etc/loremnews/serve.env\nLOREM_DB=" + filepath.Join(dir, "s.sqlite3") + "\nLOREM_ALLOWED_HOSTS=" + hosts + "\n"
		if err := os.WriteFile(settings, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("127.0.0.1")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(binary(t), "serve", "--addr", "127.0.0.1:0", "--settings-file", settings, "--pid-file", pidFile)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	url := waitForLog(t, logPath, serveproc.ListeningURL)
	pid := waitForPID(t, pidFile, 0)
	t.Cleanup(func() {
		if p, err := readPID(pidFile); err == nil {
			syscall.Kill(p, syscall.SIGTERM)
			waitGone(t, p, 30*time.Second)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	})
	status := func(host string) int {
		req, _ := http.NewRequest(http.MethodGet, url+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if a, b := status("127.0.0.1"), status("news.example"); a != 200 || b != 400 {
		t.Fatalf("before: Host 127.0.0.1 %d, news.example %d; want 200, 400", a, b)
	}
	write("news.example")
	if out, err := exec.Command(binary(t), "reload", "--pid-file", pidFile).CombinedOutput(); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	if a, b := status("127.0.0.1"), status("news.example"); a != 400 || b != 200 {
		t.Fatalf("after the reload: Host 127.0.0.1 %d, news.example %d; want 400, 200", a, b)
	}
}

// TestDeployAndRollBack: section 4 of docs/deploy.md, its commands as the
// page writes them (the paths and systemctl aside): a new build installed
// and reloaded serves, and the rollback brings back the build before it,
// under load, without a failed request. Which build serves is read from
// /metrics (loremnews_build_info).
func TestDeployAndRollBack(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds two binaries and runs a load")
	}
	guide, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	var deploy, rollback string
	for _, line := range strings.Split(string(guide), "\n") {
		switch {
		case strings.HasPrefix(line, "install -m 0755 -b -S .previous /tmp/loremnews-kit/bin/loremnews "):
			deploy = line
		case strings.HasPrefix(line, "install -m 0755 /usr/local/bin/loremnews.previous "):
			rollback = line
		}
	}
	if deploy == "" || rollback == "" {
		t.Fatalf("the guide's deploy (%q) or rollback (%q) command is not where it was", deploy, rollback)
	}
	dir := t.TempDir()
	installed := filepath.Join(dir, "bin", "loremnews")
	kit := filepath.Join(dir, "kit", "loremnews")
	for path, commit := range map[string]string{installed: "first", kit: "second"} {
		if out, err := exec.Command("go", "build", "-ldflags", "-X main.buildCommit="+commit, "-o", path, ".").CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", commit, err, out)
		}
	}
	pidFile, logPath := filepath.Join(dir, "serve.pid"), filepath.Join(dir, "serve.log")
	// The guide's commands, on this test's paths; systemctl reload is
	// what the unit's ExecReload runs.
	local := strings.NewReplacer("/tmp/loremnews-kit/bin/loremnews", kit, "/usr/local/bin/loremnews", installed,
		"systemctl reload loremnews", installed+" reload --pid-file "+pidFile)
	db := filepath.Join(dir, "deploy.sqlite3")
	seedFile(t, db, "--users", "20", "--posts", "100")
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := probe.Addr().String()
	probe.Close()
	serving := startReloadable(t, exec.Command(installed, "serve", "--addr", "127.0.0.1:0", "--db", db, "--benchmarking",
		"--pid-file", pidFile, "--metrics-addr", metricsAddr), logPath)
	url := waitForLog(t, logPath, serveproc.ListeningURL)
	pid := waitForPID(t, pidFile, 0)
	build := func() string {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatalf("scrape: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`loremnews_build_info\{commit="([^"]*)"`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("no loremnews_build_info in the scrape")
		}
		return string(m[1])
	}
	if got := build(); got != "first" {
		t.Fatalf("serving build %q, want first", got)
	}

	loadDone := make(chan *load.Result, 1)
	go func() {
		res, err := load.Run(context.Background(), load.Config{URL: url + "/benchmarking/balanced", Method: http.MethodPost, Concurrency: 8,
			Duration: 10 * time.Second, DisableRedirects: true})
		if err != nil {
			t.Error(err)
		}
		loadDone <- res
	}()
	for _, step := range []struct{ name, line, want string }{{"deploy", deploy, "second"}, {"rollback", rollback, "first"}} {
		time.Sleep(3 * time.Second)
		old := pid
		script := step.line
		if !strings.Contains(script, "systemctl reload loremnews") { // the deploy's is a line of its own
			script += " && systemctl reload loremnews"
		}
		if out, err := exec.Command("sh", "-c", local.Replace(script)).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", step.name, err, out)
		}
		pid = waitForPID(t, pidFile, old)
		serving[pid] = true
		if got := build(); got != step.want {
			t.Fatalf("after the %s the build %q serves, want %q", step.name, got, step.want)
		}
	}
	if _, err := os.Stat(installed + ".previous"); err != nil {
		t.Errorf("the deploy kept no previous binary: %v", err)
	}
	res := <-loadDone
	t.Logf("load across the deploy and the rollback: %d requests, %d failed, statuses %v", res.Requests, res.Failures, res.StatusCodes)
	if res.Failures != 0 || res.Requests == 0 {
		t.Fatalf("%d of %d requests failed: %v %v", res.Failures, res.Requests, res.StatusCodes, res.Errors)
	}
}

// startReloadable starts a serve command whose reloads the test drives,
// its output in the file at logPath: a file, not a pipe, because the
// processes a reload starts inherit it and outlive the first, whose Wait
// would otherwise wait for them to close the pipe. It returns the set of
// processes that served, to which the test adds each reload's; all are
// killed when the test ends, and the log's end shown if it failed.
func startReloadable(t *testing.T, cmd *exec.Cmd, logPath string) (serving map[int]bool) {
	t.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	serving = map[int]bool{cmd.Process.Pid: true}
	t.Cleanup(func() {
		for pid := range serving {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("server log:\n%s", lastLines(string(b), 60))
		}
	})
	return serving
}
