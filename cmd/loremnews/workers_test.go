package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loremnews/loremnews/internal/proctree"
	"github.com/loremnews/loremnews/internal/serveproc"
	"github.com/loremnews/loremnews/internal/testenv"
	"github.com/loremnews/loremnews/load"
)

// TestWorkerKilledUnderLoad: serve --workers 3 under the balanced mix; one
// worker is killed with -9 in the middle of its writes. Only the requests
// that worker was answering fail (their connection drops); the others keep
// serving, the parent starts a new worker, every acknowledged write is in
// the file, the database is consistent, and /metrics answers for all
// three, each sample labelled with its worker.
func TestWorkerKilledUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a load test with processes")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "workers.sqlite3")
	seedFile(t, db, "--users", "50", "--posts", "200")
	before := consistency(t, db)
	srv := startServer(t, db, "--benchmarking", "--workers", "3")
	workers := waitWorkers(t, srv.Pid(), 3, nil)

	var w writes
	start := time.Now()
	done := balancedLoad(t, srv.URL, 8*time.Second, &w)
	// The load's clients keep the connections they opened at its start,
	// which the workers accepting at that moment took: a worker can have
	// none. Reads on connections of their own (each commits its touch, no
	// post or comment) reach every worker in time.
	fresh := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	testenv.WaitFor(t, time.Minute, "every worker to write", func() bool {
		for range 5 {
			if resp, err := fresh.Post(srv.URL+"/benchmarking/post_show", "", nil); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
		return len(metricValues(t, srv.MetricsURL, "loremnews_sqlite_writer_commits_total")) == 3 && minValue(metricValues(t, srv.MetricsURL, "loremnews_sqlite_writer_commits_total")) >= 20
	})
	victim := workers[1]
	killedAt := time.Since(start)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	after := waitWorkers(t, srv.Pid(), 3, []int{victim})
	res := <-done

	if res.Requests < 1000 {
		t.Errorf("only %d requests: the load did not run", res.Requests)
	}
	for status, n := range res.StatusCodes {
		if status != http.StatusOK && status != http.StatusSeeOther {
			t.Errorf("status %d answered %d times, want only 200 and 303", status, n)
		}
	}
	// The killed worker's requests in flight lose their connection: at
	// most one per client, and nothing but a dropped connection.
	for kind, n := range res.Errors {
		if !containsAny(kind, "EOF", "reset", "broken pipe") {
			t.Errorf("error %q (%d) is not a dropped connection", kind, n)
		}
	}
	if res.Failures > 20 {
		t.Errorf("%d requests failed; only those in flight on the killed worker (at most 20, one per client) may", res.Failures)
	}
	// The others kept serving: requests answered in the second after the kill.
	var answeredAfter int64
	for _, p := range res.Timeline {
		if p.Second == int(killedAt/time.Second)+1 {
			answeredAfter = p.Successes
		}
	}
	if answeredAfter == 0 {
		t.Errorf("no request answered in the second after the kill: the other workers stopped serving")
	}

	found, expected := checkAcknowledged(t, db, &w)
	c := consistency(t, db)
	if !c.OK() {
		t.Errorf("after the kill: %+v", c)
	}
	if want := before.Posts + len(w.postsCreated) - len(w.postsDeleted); c.Posts != want {
		t.Errorf("posts: %d, want %d before + %d created − %d deleted = %d", c.Posts, before.Posts, len(w.postsCreated), len(w.postsDeleted), want)
	}
	if got := metricValues(t, srv.MetricsURL, "loremnews_worker_restarts_total"); fmt.Sprint(got) != "[1]" {
		t.Errorf("loremnews_worker_restarts_total = %v, want [1]", got)
	}
	labelled := metricLabels(t, srv.MetricsURL, "loremnews_sqlite_writer_commits_total")
	if fmt.Sprint(labelled) != `[{worker="0"} {worker="1"} {worker="2"}]` {
		t.Errorf("loremnews_sqlite_writer_commits_total samples %v, want one per worker, labelled", labelled)
	}
	if code, _ := srv.signal(syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM\n%s", code, srv.stderr.String())
	}
	for _, pid := range after {
		if running(pid) {
			t.Errorf("worker %d still runs after its parent stopped", pid)
		}
	}
	t.Logf("killed worker %d at %.1f s; new workers %v; load: %d requests (%.0f/s), %d failed %v; %d of %d acknowledged rows found; integrity %s",
		victim, killedAt.Seconds(), after, res.Requests, res.RequestsPerSec(), res.Failures, res.Errors, found, expected, c.Integrity)
}

// TestWorkersReloadDropsNoRequest: serve --workers 4 under the balanced
// mix, replaced twice by `loremnews reload`: a new parent with four new
// workers each time. No request fails, the old workers are gone after
// each reload, and every acknowledged write is in the file.
func TestWorkersReloadDropsNoRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a load test with processes")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "reload.sqlite3")
	seedFile(t, db, "--users", "50", "--posts", "200")
	pidFile, logPath := filepath.Join(dir, "serve.pid"), filepath.Join(dir, "serve.log")
	cmd := exec.Command(binary(t), "serve", "--addr", "127.0.0.1:0", "--db", db, "--benchmarking", "--workers", "4",
		"--pid-file", pidFile, "--log-level", "info")
	serving := startReloadable(t, cmd, logPath)
	url := waitForLog(t, logPath, serveproc.ListeningURL)
	pid := waitForPID(t, pidFile, 0)
	workers := waitWorkers(t, pid, 4, nil)
	for _, p := range workers {
		serving[p] = true
	}

	var w writes
	done := balancedLoad(t, url, 12*time.Second, &w)
	var said []string
	for range 2 {
		time.Sleep(4 * time.Second)
		out, err := exec.Command(binary(t), "reload", "--pid-file", pidFile).CombinedOutput()
		if err != nil {
			t.Fatalf("reload: %v\n%s", err, out)
		}
		said = append(said, strings.TrimSpace(string(out)))
		old := pid
		pid = waitForPID(t, pidFile, old)
		serving[pid] = true
		for _, p := range workers {
			if running(p) {
				t.Errorf("worker %d of the old parent %d still runs after the reload", p, old)
			}
		}
		workers = waitWorkers(t, pid, 4, nil)
		for _, p := range workers {
			serving[p] = true
		}
	}
	res := <-done
	if res.Requests < 1000 {
		t.Errorf("only %d requests: the load did not run", res.Requests)
	}
	if res.Failures != 0 {
		t.Errorf("%d requests failed (statuses %v, errors %v), want 0", res.Failures, res.StatusCodes, res.Errors)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, 30*time.Second)
	for _, p := range workers {
		waitGone(t, p, 5*time.Second)
	}
	found, expected := checkAcknowledged(t, db, &w)
	if c := consistency(t, db); !c.OK() {
		t.Errorf("after the reloads: %+v", c)
	}
	t.Logf("reloads: %s; load: %d requests (%.0f/s), %d failed; %d of %d acknowledged rows found", strings.Join(said, "; "),
		res.Requests, res.RequestsPerSec(), res.Failures, found, expected)
}

// balancedLoad runs 20 clients on the balanced mix against the site at
// url for d, noting in w the writes acknowledged; the result comes on the
// channel.
func balancedLoad(t *testing.T, url string, d time.Duration, w *writes) <-chan *load.Result {
	done := make(chan *load.Result, 1)
	go func() {
		res, err := load.Run(context.Background(), load.Config{URL: url + "/benchmarking/balanced", Method: http.MethodPost, Concurrency: 20,
			Duration: d, DisableRedirects: true, OnResponse: w.note})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	return done
}

// waitWorkers waits until the process pid has n children, none of them in
// not, and returns them.
func waitWorkers(t *testing.T, pid, n int, not []int) []int {
	t.Helper()
	var kids []int
	testenv.WaitFor(t, time.Minute, fmt.Sprintf("%d worker processes of %d", n, pid), func() bool {
		kids = proctree.Children(pid)
		return len(kids) == n && !slices.ContainsFunc(kids, func(k int) bool { return slices.Contains(not, k) })
	})
	return kids
}

// scrape returns the text of url's metrics.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// metricValues are the values of name's samples, in the order scraped.
func metricValues(t *testing.T, url, name string) []float64 {
	var vs []float64
	for _, m := range regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`(?:\{[^}]*\})? (\S+)$`).FindAllStringSubmatch(scrape(t, url), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		vs = append(vs, v)
	}
	return vs
}

// metricLabels are the label sets of name's samples.
func metricLabels(t *testing.T, url, name string) []string {
	var ls []string
	for _, m := range regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`(\{[^}]*\})? \S+$`).FindAllStringSubmatch(scrape(t, url), -1) {
		ls = append(ls, m[1])
	}
	return ls
}

func minValue(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	return slices.Min(vs)
}

// TestWorkersShareTheLimits: with --workers 4, every limit of an address
// the site documents holds for the whole server, to the request: 10
// sign-ups an hour, 20 failed sign-ins (any account) and 100 password
// checks (right ones too, from a browser the account knows) a quarter of
// an hour from one address, each request on a connection of its own,
// which the workers share out. Neither a worker killed with -9 (and restarted)
// nor a reload (a new parent, four new workers) hands out a fresh
// allowance.
func TestWorkersShareTheLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a server of five processes")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "limits.sqlite3")
	seedFile(t, db, "--users", "5", "--posts", "5")
	c := startFourWorkers(t, dir, db, "--bcrypt-cost", "4")
	base, metrics, pidFile, pid, workers := c.base, c.metrics, c.pidFile, c.pid, c.workers

	tries := 0
	signUp := func() int {
		tries++
		code, _ := submit(t, clientFrom("127.0.0.1"), base, "/signup", "/signup",
			url.Values{"screen_name": {fmt.Sprintf("newcomer%d", tries)}, "password": {"correct horse battery"}})
		return code
	}
	signIn := func() int {
		tries++
		code, _ := submit(t, clientFrom("127.0.0.1"), base, "/signin", "/signin",
			url.Values{"screen_name": {fmt.Sprintf("stranger%d", tries)}, "password": {"a wrong guess"}})
		return code
	}
	// answers runs try n times and counts its answers by status.
	answers := func(n int, try func() int) map[int]int {
		got := map[int]int{}
		for range n {
			got[try()]++
		}
		return got
	}
	if got := answers(14, signUp); got[http.StatusSeeOther] != 10 || got[http.StatusTooManyRequests] != 4 {
		t.Errorf("14 sign-ups from one address: %v; want 10 accounts (303) and 4 refused (429)", got)
	}
	if got := answers(25, signIn); got[http.StatusTooManyRequests] != 5 {
		t.Errorf("25 failed sign-ins from one address: %v; want 20 judged and 5 refused (429)", got)
	}
	// Right passwords, from another address: one browser, which signed
	// up (so the account knows it), each request a connection of its own.
	owner := clientFrom("127.0.0.5")
	owner.Transport.(*http.Transport).DisableKeepAlives = true
	account := url.Values{"screen_name": {"checker"}, "password": {"correct horse battery"}}
	if code, _ := submit(t, owner, base, "/signup", "/signup", account); code != http.StatusSeeOther {
		t.Fatalf("sign-up of the account whose password is checked: %d", code)
	}
	rightSignIn := func() int {
		code, _ := submit(t, owner, base, "/signin", "/signin", url.Values{"screen_name": {"checker"}, "password": {"correct horse battery"}})
		return code
	}
	if got := answers(103, rightSignIn); got[http.StatusSeeOther] != 100 || got[http.StatusTooManyRequests] != 3 {
		t.Errorf("103 right sign-ins from one address: %v; want 100 (303) and 3 refused (429)", got)
	}
	stillRefused := func(when string) {
		t.Helper()
		if got := answers(4, signUp); got[http.StatusTooManyRequests] != 4 {
			t.Errorf("%s: 4 more sign-ups answered %v; want all refused (429)", when, got)
		}
		if got := answers(4, signIn); got[http.StatusTooManyRequests] != 4 {
			t.Errorf("%s: 4 more failed sign-ins answered %v; want all refused (429)", when, got)
		}
		if got := answers(2, rightSignIn); got[http.StatusTooManyRequests] != 2 {
			t.Errorf("%s: 2 more right sign-ins answered %v; want both refused (429)", when, got)
		}
	}
	stillRefused("with the limits used")

	if err := syscall.Kill(workers[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitRestarted(t, metrics, pid, workers[:1])
	stillRefused("after a worker was killed and restarted")

	if out, err := exec.Command(binary(t), "reload", "--pid-file", pidFile).CombinedOutput(); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	pid = waitForPID(t, pidFile, pid)
	c.serving[pid] = true
	waitWorkers(t, pid, 4, workers)
	stillRefused("after a reload")
}

// TestWorkersRunOneConfiguration: a worker restarted after a crash runs
// the configuration its siblings run, not the settings file's new
// contents: with the secret key in the file changed after the start, and
// a worker killed with -9 and restarted, every form served by one worker
// is accepted by another (each request on a connection of its own). A
// reload then takes the file's new key for all workers at once.
func TestWorkersRunOneConfiguration(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a server of five processes")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "settings.sqlite3")
	seedFile(t, db, "--users", "5", "--posts", "5")
	settings := filepath.Join(dir, "serve.env")
	writeSettings := func(key string) {
		if err := os.WriteFile(settings, []byte("LOREM_SECRET_KEY="+key+"\nLOREM_BCRYPT_COST=4\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeSettings(strings.Repeat("a", 64))
	c := startFourWorkers(t, dir, db, "--settings-file", settings)
	base, metrics, pidFile, pid, workers := c.base, c.metrics, c.pidFile, c.pid, c.workers

	writeSettings(strings.Repeat("b", 64))
	if err := syscall.Kill(workers[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	workers = waitRestarted(t, metrics, pid, workers[:1])
	// forms posts 24 forms at once, each fetched and posted on
	// connections of their own (so that the workers share them out), from
	// six addresses (four failed sign-ins each, under every limit), and
	// counts the answers by status.
	forms := func() map[int]int {
		var mu sync.Mutex
		var wg sync.WaitGroup
		got := map[int]int{}
		for i := range 24 {
			wg.Go(func() {
				c := clientFrom(fmt.Sprintf("127.0.0.%d", 2+i%6))
				c.Transport.(*http.Transport).DisableKeepAlives = true
				code, _ := submit(t, c, base, "/signin", "/signin", url.Values{"screen_name": {fmt.Sprintf("stranger%d", i)}, "password": {"a wrong guess"}})
				mu.Lock()
				got[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
		return got
	}
	if got := forms(); got[http.StatusForbidden] != 0 || got[http.StatusUnprocessableEntity] != 24 {
		t.Errorf("after a worker restarted with the settings file changed: 24 forms answered %v; want 24 judged (422), none refused (403)", got)
	}
	if out, err := exec.Command(binary(t), "reload", "--pid-file", pidFile).CombinedOutput(); err != nil {
		t.Fatalf("reload: %v\n%s", err, out)
	}
	pid = waitForPID(t, pidFile, pid)
	c.serving[pid] = true
	waitWorkers(t, pid, 4, workers)
	if got := forms(); got[http.StatusForbidden] != 0 || got[http.StatusUnprocessableEntity] != 24 {
		t.Errorf("after a reload: 24 forms answered %v; want 24 judged (422), none refused (403)", got)
	}
}

// fourWorkers is a serve --workers 4 that a test reloads.
type fourWorkers struct {
	base, metrics, pidFile string
	// serving holds the parents the test's end kills: a parent a reload
	// starts must be added, or it outlives the test.
	serving map[int]bool
	pid     int
	workers []int
}

// startFourWorkers starts serve --workers 4 on db with /metrics, a pid
// file and its log in dir, and args, and waits until its workers serve.
func startFourWorkers(t *testing.T, dir, db string, args ...string) fourWorkers {
	t.Helper()
	c := fourWorkers{pidFile: filepath.Join(dir, "serve.pid")}
	logPath := filepath.Join(dir, "serve.log")
	c.serving = startReloadable(t, exec.Command(binary(t), append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--workers", "4",
		"--metrics", "--pid-file", c.pidFile, "--log-level", "info"}, args...)...), logPath)
	c.base = waitForLog(t, logPath, serveproc.ListeningURL)
	c.metrics = waitForLog(t, logPath, serveproc.MetricsURL)
	c.pid = waitForPID(t, c.pidFile, 0)
	c.workers = waitWorkers(t, c.pid, 4, nil)
	return c
}

// waitRestarted waits until the parent pid, whose /metrics is at metrics,
// has replaced the workers killed and serves with four again, and returns
// its workers.
func waitRestarted(t *testing.T, metrics string, pid int, killed []int) []int {
	t.Helper()
	workers := waitWorkers(t, pid, 4, killed)
	testenv.WaitFor(t, time.Minute, "the workers killed to be replaced by ones that serve", func() bool {
		return fmt.Sprint(metricValues(t, metrics, "loremnews_worker_restarts_total")) == fmt.Sprint([]float64{float64(len(killed))}) &&
			fmt.Sprint(metricValues(t, metrics, "loremnews_workers")) == "[4]"
	})
	return workers
}

// TestKilledParentsSocketsRemoved: the directory of metrics sockets that a
// parent killed with -9 leaves behind (its workers stop with it) is
// removed by the next server that starts workers; a running server's is
// left alone.
func TestKilledParentsSocketsRemoved(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts servers of three processes")
	}
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "sockets.sqlite3")
	seedFile(t, db, "--users", "5", "--posts", "5")
	start := func(name string) (pid int, sockets string) {
		cmd := exec.Command(binary(t), "serve", "--addr", "127.0.0.1:0", "--db", db, "--workers", "2", "--log-level", "info")
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		logPath := filepath.Join(dir, name+".log")
		startReloadable(t, cmd, logPath)
		waitForLog(t, logPath, serveproc.ListeningURL)
		pid = cmd.Process.Pid
		found, _ := filepath.Glob(filepath.Join(tmp, fmt.Sprintf("loremnews-workers-%d-*", pid)))
		if len(found) != 1 {
			t.Fatalf("the directory of %s's metrics sockets: found %v", name, found)
		}
		return pid, found[0]
	}
	alive, aliveDir := start("running")
	killed, killedDir := start("killed")
	if err := syscall.Kill(killed, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, "the killed parent's workers to stop", func() bool {
		return !running(killed) && len(proctree.Children(killed)) == 0
	})
	if _, err := os.Stat(killedDir); err != nil {
		t.Fatalf("the killed parent's directory went before any server looked: %v", err)
	}
	start("next")
	if _, err := os.Stat(killedDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed parent's directory %s is still there after the next server started (%v)", killedDir, err)
	}
	if _, err := os.Stat(aliveDir); err != nil {
		t.Errorf("the running parent's (%d) directory was removed: %v", alive, err)
	}
}
