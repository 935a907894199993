package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loremnews/loremnews/internal/testenv"
	"github.com/loremnews/loremnews/load"
)

// TestServeBesideOtherProcesses: a server under load shares its database
// file with the programs people point at it: Debian's sqlite3 shell
// (counting rows, forcing a checkpoint) and a Python script that writes
// rows of its own. SQLite allows any number of processes on one file in
// WAL mode, so none of them may disturb the server or the others:
//   - every request of the load succeeds (a 500 "disk I/O error" means the
//     WAL or -shm was deleted under the server);
//   - the -wal and -shm files exist for as long as the server runs (only
//     the last connection to close, anywhere, may delete them, and the
//     server's stay open: another process deleting them means it could not
//     see the server's locks);
//   - after the server stops, SQLite's own shell finds every row the
//     Python writer committed, at least as many new post and comment ids
//     as creates the server acknowledged, the posts count its acknowledged
//     creates and deletes give, and a sound file (integrity, foreign keys,
//     counter caches).
func TestServeBesideOtherProcesses(t *testing.T) {
	serveBesideOtherProcesses(t, func(path string) string { return path })
}

// neighbourWriter is the Python writer: one transaction of 50 rows in a
// table of its own, then a TRUNCATE checkpoint (whose "busy" answer is
// fine while the server reads), then it closes the file. It prints the
// checkpoint's row.
const neighbourWriter = `
import sqlite3, sys
path, run = sys.argv[1], int(sys.argv[2])
con = sqlite3.connect(path, timeout=10, isolation_level=None)
con.execute("BEGIN IMMEDIATE")
con.execute("CREATE TABLE IF NOT EXISTS neighbour_rows (id INTEGER PRIMARY KEY, run INTEGER NOT NULL, n INTEGER NOT NULL, UNIQUE (run, n))")
con.executemany("INSERT INTO neighbour_rows (run, n) VALUES (?, ?)", [(run, n) for n in range(50)])
con.execute("COMMIT")
con.execute("PRAGMA busy_timeout = 1000")
print(*con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
con.close()
`

const (
	neighbourRuns    = 5  // Python writers, one after another
	neighbourRowsRun = 50 // rows each commits
)

// serveBesideOtherProcesses runs the test with the server's --db set to
// dsn(path) for the database file path.
func serveBesideOtherProcesses(t *testing.T, dsn func(path string) string) {
	sqlite3Shell, err := exec.LookPath("sqlite3")
	if err != nil {
		testenv.Missing(t, "needs Debian's sqlite3 shell: run scripts/install-test-deps (make test does): %v", err)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "needs python3: run scripts/install-test-deps (make test does): %v", err)
	}
	if out, err := exec.Command(python, "-c", "import sqlite3").CombinedOutput(); err != nil {
		testenv.Missing(t, "needs python3 with its sqlite3 module: %v\n%s", err, out)
	}

	dbPath := filepath.Join(t.TempDir(), "neighbours.sqlite3")
	seedFile(t, dbPath, "--users", "30", "--posts", "100")
	before := shellInts(t, sqlite3Shell, dbPath, `SELECT count(*) FROM posts; SELECT count(*) FROM comments;
		SELECT seq FROM sqlite_sequence WHERE name = 'posts'; SELECT seq FROM sqlite_sequence WHERE name = 'comments'`)
	postsBefore, seqPostsBefore, seqCommentsBefore := before[0], before[2], before[3]

	srv := startServer(t, dsn(dbPath), "--benchmarking")
	start := time.Now()

	// Watch the -wal and -shm files for as long as the server runs.
	var (
		polls, missing atomic.Int64 // polls, and those that found a file missing
		firstMissing   atomic.Value // string: which file, and when
		stopPolling    = make(chan struct{})
		polled         = make(chan struct{})
	)
	go func() {
		defer close(polled)
		for {
			var gone []string
			for _, suffix := range []string{"-wal", "-shm"} {
				if _, err := os.Stat(dbPath + suffix); err != nil {
					gone = append(gone, suffix)
				}
			}
			if polls.Add(1); gone != nil && missing.Add(1) == 1 {
				firstMissing.Store(fmt.Sprintf("%s missing %s after the server was up", strings.Join(gone, " and "), time.Since(start).Round(time.Millisecond)))
			}
			select {
			case <-stopPolling:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	// The load: c=8 for 8 s on the balanced mix (reads, creates, deletes,
	// each request also touching a user), every answer a 200 or a 303.
	loadDone := make(chan *load.Result, 1)
	go func() {
		res, err := load.Run(context.Background(), load.Config{URL: srv.URL + "/benchmarking/balanced", Method: "POST",
			Concurrency: 8, Duration: 8 * time.Second, Timeout: 10 * time.Second, DisableRedirects: true})
		if err != nil {
			t.Error(err)
		}
		loadDone <- res
	}()

	// Meanwhile the neighbours, one process at a time: the shell counts
	// posts and forces a checkpoint, over and over; the Python writer runs
	// about every 1.5 s, five times in all (the rest after the load if a
	// slow machine did not get to them).
	var (
		res                  *load.Result
		loaded               bool
		shellRuns, pyRuns    int
		shellFailures        []string
		pyFailures           []string
		shellCounts          []int
		pyCheckpoints        []string
		neighbourProcessTime time.Duration
	)
	runPython := func() {
		pyRuns++
		began := time.Now()
		out, err := runNeighbour(python, "-c", neighbourWriter, dbPath, strconv.Itoa(pyRuns))
		neighbourProcessTime += time.Since(began)
		if err != nil {
			pyFailures = append(pyFailures, fmt.Sprintf("run %d at %s: %v: %s", pyRuns, time.Since(start).Round(time.Millisecond), err, out))
		} else {
			pyCheckpoints = append(pyCheckpoints, strings.TrimSpace(out))
		}
	}
	for !loaded {
		began := time.Now()
		out, err := runNeighbour(sqlite3Shell, "-bail", "-cmd", ".timeout 1000", dbPath, "SELECT count(*) FROM posts")
		if n, convErr := strconv.Atoi(strings.TrimSpace(out)); err == nil && convErr == nil {
			shellCounts = append(shellCounts, n)
		} else {
			shellFailures = append(shellFailures, fmt.Sprintf("count at %s: %v: %s", time.Since(start).Round(time.Millisecond), err, out))
		}
		if out, err := runNeighbour(sqlite3Shell, "-bail", "-cmd", ".timeout 1000", dbPath, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			shellFailures = append(shellFailures, fmt.Sprintf("checkpoint at %s: %v: %s", time.Since(start).Round(time.Millisecond), err, out))
		}
		shellRuns++
		neighbourProcessTime += time.Since(began)
		if pyRuns < neighbourRuns && time.Since(start) >= 500*time.Millisecond+time.Duration(pyRuns)*1500*time.Millisecond {
			runPython()
		}
		select {
		case res = <-loadDone:
			loaded = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	for pyRuns < neighbourRuns {
		runPython()
	}
	if res == nil {
		t.FailNow() // load.Run refused its configuration, reported above
	}

	close(stopPolling)
	<-polled
	// What the server acknowledged, by action and status, from its own
	// request counters: read before it stops, with every request answered.
	acked := benchmarkAnswers(t, srv)
	code, took := srv.signal(syscall.SIGTERM, 15*time.Second)
	logTail := lastLines(srv.stderr.String(), 20)

	// The load.
	var bad int64
	for status, n := range res.StatusCodes {
		if status < 200 || status >= 400 {
			bad += n
		}
	}
	if bad != 0 || len(res.Errors) != 0 {
		t.Errorf("load beside the other processes: %d of %d requests failed: statuses %v, transport errors %v", bad+errorCount(res), res.Requests, res.StatusCodes, res.Errors)
	}
	// The -wal and -shm.
	if n := missing.Load(); n != 0 {
		t.Errorf("the -wal or -shm was missing at %d of %d polls while the server ran; first: %v", n, polls.Load(), firstMissing.Load())
	}
	// The neighbours themselves.
	for _, f := range shellFailures {
		t.Errorf("sqlite3 shell failed: %s", f)
	}
	for _, f := range pyFailures {
		t.Errorf("Python writer failed: %s", f)
	}
	if code != 0 {
		t.Errorf("serve exited %d after SIGTERM", code)
	}

	// The file, reopened by SQLite's own shell once the server is gone.
	if out, err := runNeighbour(sqlite3Shell, "-bail", dbPath, "PRAGMA integrity_check"); err != nil || strings.TrimSpace(out) != "ok" {
		t.Errorf("integrity_check after the server stopped: %v: %s", err, out)
	}
	var pyRows, pyRunsFound int
	if out, err := runNeighbour(sqlite3Shell, "-bail", "-separator", " ", dbPath, "SELECT count(*), count(DISTINCT run) FROM neighbour_rows"); err != nil {
		t.Errorf("the Python writer's %d rows: none readable after the server stopped: %v: %s", neighbourRuns*neighbourRowsRun, err, out)
	} else if _, err := fmt.Sscan(out, &pyRows, &pyRunsFound); err != nil || pyRows != neighbourRuns*neighbourRowsRun || pyRunsFound != neighbourRuns {
		t.Errorf("after the server stopped: %d of the Python writer's %d committed rows, from %d of its %d runs", pyRows, neighbourRuns*neighbourRowsRun, pyRunsFound, neighbourRuns)
	}
	after := shellInts(t, sqlite3Shell, dbPath, `SELECT count(*) FROM posts; SELECT count(*) FROM comments;
		SELECT seq FROM sqlite_sequence WHERE name = 'posts'; SELECT seq FROM sqlite_sequence WHERE name = 'comments'`)
	postsAfter, seqPostsAfter, seqCommentsAfter := after[0], after[2], after[3]

	// Posts and comments the load created. Ids come from AUTOINCREMENT, so
	// sqlite_sequence counts every id ever handed out: each acknowledged
	// create must have moved it on. Deletes pick rows at random, so the
	// posts count is bounded by what was acknowledged (exact when every
	// request succeeded); comments also go with their post, so only the
	// sequence speaks for them.
	creates, createsUnsure := acked.count("post_create")
	deletes, deletesUnsure := acked.count("post_destroy")
	commentCreates, _ := acked.count("comment_create")
	if seqPostsAfter-seqPostsBefore < creates {
		t.Errorf("posts: %d acknowledged creates, but the file's post ids went from %d to %d", creates, seqPostsBefore, seqPostsAfter)
	}
	if seqCommentsAfter-seqCommentsBefore < commentCreates {
		t.Errorf("comments: %d acknowledged creates, but the file's comment ids went from %d to %d", commentCreates, seqCommentsBefore, seqCommentsAfter)
	}
	if lo, hi := postsBefore+creates-deletes-deletesUnsure, postsBefore+creates+createsUnsure-deletes; postsAfter < lo || postsAfter > hi {
		t.Errorf("posts: %d before, %d acknowledged creates and %d deletes (%d and %d unanswered or failed): want %d..%d after, the file has %d",
			postsBefore, creates, deletes, createsUnsure, deletesUnsure, lo, hi, postsAfter)
	}
	if c := consistency(t, dbPath); !c.OK() {
		t.Errorf("inconsistent after the server stopped: %+v", c)
	}

	if t.Failed() {
		t.Logf("server's last log lines:\n%s", logTail)
	}
	shellMin, shellMax := minMax(shellCounts)
	t.Logf("load: %d requests (%.0f req/s), statuses %v, errors %v; %d sqlite3 shell runs (count and TRUNCATE checkpoint; posts seen %d..%d), %d Python writers (checkpoint rows %q), %s in neighbour processes; %d polls of -wal/-shm, %d missing; serve exit %d in %s; posts %d -> %d (%d created, %d deleted), comments %d -> %d (%d created), Python rows %d",
		res.Requests, res.RequestsPerSec(), res.StatusCodes, res.Errors, shellRuns, shellMin, shellMax, pyRuns, pyCheckpoints, neighbourProcessTime.Round(time.Millisecond),
		polls.Load(), missing.Load(), code, took.Round(time.Millisecond), postsBefore, postsAfter, creates, deletes, before[1], after[1], commentCreates, pyRows)
}

// runNeighbour runs another program on the database file, at most for
// 20 s, and returns its combined output.
func runNeighbour(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// shellInts runs queries, each answering one integer, in the sqlite3
// shell and returns the answers in order.
func shellInts(t *testing.T, shell, path, queries string) []int {
	t.Helper()
	out, err := runNeighbour(shell, "-bail", path, queries)
	if err != nil {
		t.Fatalf("sqlite3 %s: %v: %s", queries, err, out)
	}
	var ns []int
	for _, f := range strings.Fields(out) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("sqlite3 %s: %q is not a number in %q", queries, f, out)
		}
		ns = append(ns, n)
	}
	if want := strings.Count(queries, ";") + 1; len(ns) != want {
		t.Fatalf("sqlite3 %s: %d answers, want %d: %q", queries, len(ns), want, out)
	}
	return ns
}

// benchAnswers counts the server's answers to benchmarking requests by
// action and status.
type benchAnswers map[string]map[int]int

var benchAnswerRe = regexp.MustCompile(`(?m)^loremnews_http_request_duration_seconds_count\{code="(\d+)",route="POST /benchmarking/(\w+)"\} (\d+)$`)

// benchmarkAnswers reads the server's request counters from /metrics.
func benchmarkAnswers(t *testing.T, srv *serverProc) benchAnswers {
	t.Helper()
	out, err := runNeighbourHTTP(srv.MetricsURL)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	a := benchAnswers{}
	for _, m := range benchAnswerRe.FindAllStringSubmatch(out, -1) {
		code, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[3])
		if a[m[2]] == nil {
			a[m[2]] = map[int]int{}
		}
		a[m[2]][code] += n
	}
	if len(a) == 0 {
		t.Fatalf("no benchmarking requests in the server's metrics:\n%s", lastLines(out, 40))
	}
	return a
}

// count returns how many of action's requests the server acknowledged
// (a 303: done and committed) and how many it answered otherwise.
func (a benchAnswers) count(action string) (acknowledged, other int) {
	for code, n := range a[action] {
		if code == 303 {
			acknowledged += n
		} else {
			other += n
		}
	}
	return acknowledged, other
}

func runNeighbourHTTP(url string) (string, error) {
	resp, err := noRedirects(10 * time.Second).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(body), nil
}

func errorCount(res *load.Result) int64 {
	var n int64
	for _, c := range res.Errors {
		n += c
	}
	return n
}

func minMax(ns []int) (lo, hi int) {
	for i, n := range ns {
		if i == 0 || n < lo {
			lo = n
		}
		if i == 0 || n > hi {
			hi = n
		}
	}
	return lo, hi
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
