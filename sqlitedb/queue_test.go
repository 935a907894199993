package sqlitedb_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// Two DBs of one process on one file queue as two processes do: the
// queue's locks belong to each DB's own open file. So the order of the
// queue can be shown in one process, step by step.

// openMore opens another DB on path, closed when the test ends.
func openMore(t *testing.T, path string, opts *sqlitedb.Options) *sqlitedb.DB {
	t.Helper()
	db, err := sqlitedb.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("open %s again: %v", path, err)
	}
	t.Cleanup(func() { closeWithin(t, ignoreError(db.Close)) })
	return db
}

// holdTurn starts a write on db that holds the turn (and SQLite's lock)
// until the returned function is called; that function waits for the
// write's result.
func holdTurn(t *testing.T, db *sqlitedb.DB) (let func() error) {
	t.Helper()
	inside, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	letGo := sync.OnceFunc(func() { close(release) })
	t.Cleanup(letGo) // before the DBs close, if the test fails first
	go func() {
		done <- db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
			close(inside)
			<-release
			_, err := tx.Exec(ctx, `INSERT INTO t (n) VALUES (0)`)
			return err
		})
	}()
	select {
	case <-inside:
	case err := <-done:
		t.Fatalf("the holding write ended early: %v", err)
	case <-time.After(within):
		t.Fatal("the holding write never began")
	}
	return func() error {
		letGo()
		return receive(t, done, "the holding write")
	}
}

// waitTickets waits until the queue of path has handed out n tickets.
func waitTickets(t *testing.T, path string, n int64) {
	t.Helper()
	for deadline := time.Now().Add(within); sqlitedb.QueueTicketsForTest(path) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the queue handed out %d tickets, want %d", sqlitedb.QueueTicketsForTest(path), n)
		}
	}
}

// The writers of other processes write in the order they asked, however
// their wake-ups fall: three DBs queue behind a fourth that holds the
// turn, one after the other; once it lets go, their rows are committed in
// that order.
func TestQueueTurnsInArrivalOrder(t *testing.T) {
	holder, path := openDB(t, nil)
	createT(t, holder)
	if q := holder.Stats().Writer.Queue; q != "on" {
		t.Fatalf("Stats().Writer.Queue = %q, want on", q)
	}
	for round := range 3 {
		var waiters []*sqlitedb.DB
		for range 3 {
			waiters = append(waiters, openMore(t, path, nil))
		}
		let := holdTurn(t, holder)
		base := sqlitedb.QueueTicketsForTest(path)
		errs := make(chan error, len(waiters))
		// Each asks once the one before it holds a ticket; the last
		// asks first in rounds 1 and 2, so that arrival, not the DB's
		// age, decides.
		order := []int{0, 1, 2}
		if round > 0 {
			order = []int{2, 0, 1}
		}
		for i, w := range order {
			go func() { errs <- waiters[w].Write(context.Background(), insert(100*round+w+1)) }()
			waitTickets(t, path, base+int64(i)+1)
		}
		if err := let(); err != nil {
			t.Fatal(err)
		}
		for range waiters {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		got := queryInts(t, holder, `SELECT n FROM t WHERE n > 0 ORDER BY seq DESC LIMIT 3`)
		want := []int64{int64(100*round + order[2] + 1), int64(100*round + order[1] + 1), int64(100*round + order[0] + 1)}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: the last three rows, newest first, are %v, want %v (the order the writes asked in)", round, got, want)
		}
		for _, w := range waiters {
			if s := w.Stats().Writer; s.TurnWaits != 1 || s.MaxTurnWait <= 0 {
				t.Errorf("a waiter's stats: %d turn waits, longest %v; want 1 and more than 0", s.TurnWaits, s.MaxTurnWait)
			}
		}
	}
}

// A writer whose caller leaves while it waits for the turn gives its
// place up: it is told why, nothing of it is written, and the writer
// behind it is not held up by the place it left.
func TestQueueWaiterLeaves(t *testing.T) {
	holder, path := openDB(t, nil)
	createT(t, holder)
	leaver, behind := openMore(t, path, nil), openMore(t, path, nil)
	let := holdTurn(t, holder)
	base := sqlitedb.QueueTicketsForTest(path)

	ctx, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	go func() { left <- leaver.Write(ctx, insert(1)) }()
	waitTickets(t, path, base+1)
	done := make(chan error, 1)
	go func() { done <- behind.Write(context.Background(), insert(2)) }()
	waitTickets(t, path, base+2)
	cancel()
	err := <-left
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for the write turn") {
		t.Fatalf("the write whose caller left: %v; want context.Canceled, saying it was waiting for the turn", err)
	}
	if err := let(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the write behind the one that left: %v", err)
	}
	if got := queryInts(t, holder, `SELECT n FROM t ORDER BY seq`); fmt.Sprint(got) != "[0 2]" {
		t.Fatalf("rows %v, want [0 2]: the holder's, then the one behind; none of the one that left", got)
	}
	// And the one that left writes again, in turn.
	if err := leaver.Write(context.Background(), insert(3)); err != nil {
		t.Fatal(err)
	}
}

// A write that waits past Options.Timeout for the turn fails with
// ErrTimeout, and never runs.
func TestQueueTimeout(t *testing.T) {
	holder, path := openDB(t, nil)
	createT(t, holder)
	waiter := openMore(t, path, &sqlitedb.Options{Timeout: 50 * time.Millisecond})
	let := holdTurn(t, holder)
	err := waiter.Write(context.Background(), insert(1))
	if !errors.Is(err, sqlitedb.ErrTimeout) || !strings.Contains(err.Error(), "turn among the processes") {
		t.Fatalf("a write that waited past its timeout: %v; want ErrTimeout naming the turn", err)
	}
	if n := waiter.Stats().Timeouts; n != 1 {
		t.Fatalf("Stats().Timeouts = %d after a write timed out waiting for the turn, want 1", n)
	}
	if err := let(); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, holder, `SELECT count(*) FROM t WHERE n = 1`); n != 0 {
		t.Fatalf("the write that timed out was committed")
	}
}

// Where the queue cannot be set up, writes poll for SQLite's lock as
// they did before it, and say so; _writers=poll asks for that.
func TestQueueOff(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "q.db")
	// The queue's file is taken by a directory of that name.
	if err := os.Mkdir(path+"-queue", 0o755); err != nil {
		t.Fatal(err)
	}
	a := openMore(t, path, nil)
	b := openMore(t, "file:"+path+"?_writers=poll", nil)
	if q := a.Stats().Writer.Queue; !strings.HasPrefix(q, "off: ") || !strings.Contains(q, "-queue") {
		t.Errorf("with the queue's file unusable, Queue = %q; want off, naming the file", q)
	}
	if q := b.Stats().Writer.Queue; q != "off: _writers=poll" {
		t.Errorf("with _writers=poll, Queue = %q", q)
	}
	createT(t, a)
	var wg sync.WaitGroup
	for i := range 200 {
		db := a
		if i%2 == 1 {
			db = b
		}
		wg.Go(func() {
			if err := db.Write(context.Background(), insert(i)); err != nil {
				t.Error(err)
			}
		})
	}
	waitGroup(t, &wg, "200 writes from two DBs")
	if n := queryInt(t, a, `SELECT count(*) FROM t`); n != 200 {
		t.Fatalf("%d rows, want 200", n)
	}
	if _, err := sqlitedb.Open(context.Background(), "file:"+path+"?_writers=fifo", nil); err == nil || !strings.Contains(err.Error(), "_writers=fifo") {
		t.Fatalf("_writers=fifo: %v; want an error naming it", err)
	}
}

// These environment variables make the test binary one of the processes
// of TestProcessesShareWrites and TestQueueHolderKilled.
const (
	queueChildEnv = "SQLITEDB_QUEUE_CHILD" // the DSN
	queueRoleEnv  = "SQLITEDB_QUEUE_ROLE"  // "share NAME" or "hold"
)

// queueReport is what a writer process of TestProcessesShareWrites says
// at its end.
type queueReport struct {
	Name        string
	Commits     int64
	TurnWaits   int64
	MaxTurnWait time.Duration
	MaxWait     time.Duration
	Queue       string
}

// Writers in four processes, each always with writes waiting, share the
// commits evenly when they queue: each within a fifth of its even share.
// The same processes polling for SQLite's lock are measured beside, for
// the log.
func TestProcessesShareWrites(t *testing.T) {
	if dsn := os.Getenv(queueChildEnv); dsn != "" {
		queueChild(dsn, os.Getenv(queueRoleEnv))
		return
	}
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, mode := range []string{"queue", "poll"} {
		path := filepath.Join(t.TempDir(), "share.db")
		db := openMore(t, path, nil)
		mustExec(t, db, `CREATE TABLE w (id INTEGER PRIMARY KEY, name TEXT NOT NULL, body BLOB NOT NULL)`)
		const procs = 4
		reports := make([]queueReport, procs)
		var wg sync.WaitGroup
		for i := range procs {
			wg.Go(func() {
				out, err := runQueueChild(t, "file:"+path+"?_writers="+mode, fmt.Sprintf("share p%d", i))
				if err != nil {
					t.Errorf("writer p%d: %v\n%s", i, err, out)
					return
				}
				if err := json.Unmarshal([]byte(lastLine(out)), &reports[i]); err != nil {
					t.Errorf("writer p%d printed %q: %v", i, out, err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		var total int64
		for _, r := range reports {
			total += r.Commits
			if n := queryInt(t, db, `SELECT count(*) FROM w WHERE name = ?`, r.Name); n != r.Commits {
				t.Errorf("%s: %d rows in the file, %d commits acknowledged", r.Name, n, r.Commits)
			}
		}
		var shares []string
		for _, r := range reports {
			share := float64(r.Commits) / float64(total)
			shares = append(shares, fmt.Sprintf("%s %.1f%% (longest turn wait %v, longest wait %v)", r.Name, 100*share, r.MaxTurnWait.Round(time.Microsecond), r.MaxWait.Round(time.Microsecond)))
			if mode != "queue" {
				continue
			}
			if r.Queue != "on" {
				t.Errorf("%s: Queue = %q, want on", r.Name, r.Queue)
			}
			if share < 0.8/procs || share > 1.2/procs {
				t.Errorf("%s committed %.1f%% of the writes; with the queue each of %d always-waiting writers should get %.0f%% ± a fifth", r.Name, 100*share, procs, 100.0/procs)
			}
		}
		t.Logf("%s: %d commits; %s", mode, total, strings.Join(shares, "; "))
	}
}

// A process killed with -9 while it holds the turn, in the middle of a
// write, holds the others up only until the kernel drops its locks: the
// write waiting behind it commits, and nothing of the killed one's does.
func TestQueueHolderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "kill.db")
	db := openMore(t, path, nil)
	mustExec(t, db, `CREATE TABLE w (id INTEGER PRIMARY KEY, name TEXT NOT NULL, body BLOB NOT NULL)`)
	// It says "holding" from inside its write, with a row inserted.
	cmd := startQueueChild(t, path, "hold", "holding")
	base := sqlitedb.QueueTicketsForTest(path)
	done := make(chan error, 1)
	go func() { done <- db.Write(context.Background(), insert2("after")) }()
	waitTickets(t, path, base+1)
	killed := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the write behind the killed holder: %v", err)
	}
	took := time.Since(killed)
	cmd.Wait()
	if n := queryInt(t, db, `SELECT count(*) FROM w WHERE name = 'held'`); n != 0 {
		t.Errorf("%d rows of the killed holder's uncommitted write are in the file", n)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM w WHERE name = 'after'`); n != 1 {
		t.Errorf("%d rows of the write behind it, want 1", n)
	}
	t.Logf("the write queued behind a holder killed with -9 committed %v after the kill; %+v", took.Round(time.Microsecond), db.Stats().Writer)
}

func insert2(name string) func(context.Context, *sqlitedb.Tx) error {
	return func(ctx context.Context, tx *sqlitedb.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO w (name, body) VALUES (?, randomblob(100))`, name)
		return err
	}
}

// startQueueChild starts the test binary as a queue child in role and
// waits until it says said; it is killed when the test ends.
func startQueueChild(t *testing.T, dsn, role, said string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestProcessesShareWrites$")
	cmd.Env = append(os.Environ(), queueChildEnv+"="+dsn, queueRoleEnv+"="+role)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); cancel() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != said {
		t.Fatalf("the %s process said %q (%v)\n%s", role, line, err, stderr.String())
	}
	return cmd
}

// runQueueChild runs the test binary as a queue child in role.
func runQueueChild(t *testing.T, dsn, role string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestProcessesShareWrites$")
	cmd.Env = append(os.Environ(), queueChildEnv+"="+dsn, queueRoleEnv+"="+role)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// queueChild is a process of the queue's tests. "share NAME": write for
// two seconds from four goroutines, each always with a write waiting,
// then print a queueReport. "hold": begin a write, insert a row, say
// "holding", and wait to be killed.
func queueChild(dsn, role string) {
	ctx := context.Background()
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "%s: %s: %v\n", role, what, err)
		os.Exit(2)
	}
	if role == "stop holding the first lock" {
		stopHoldingFirstLock(dsn)
	}
	db, err := sqlitedb.Open(ctx, dsn, nil)
	if err != nil {
		fail("open", err)
	}
	if role == "hold" {
		db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
			if err := insert2("held")(ctx, tx); err != nil {
				fail("insert", err)
			}
			fmt.Println("holding")
			select {} // until killed
		})
	}
	name := strings.TrimPrefix(role, "share ")
	var commits sync.WaitGroup
	var mu sync.Mutex
	var n int64
	stop := time.Now().Add(2 * time.Second)
	for range 4 {
		commits.Go(func() {
			for time.Now().Before(stop) {
				if err := db.Write(ctx, insert2(name)); err != nil {
					fail("write", err)
				}
				mu.Lock()
				n++
				mu.Unlock()
				runtime.Gosched()
			}
		})
	}
	commits.Wait()
	s := db.Stats().Writer
	if err := db.Close(); err != nil {
		fail("close", err)
	}
	b, _ := json.Marshal(queueReport{Name: name, Commits: n, TurnWaits: s.TurnWaits, MaxTurnWait: s.MaxTurnWait, MaxWait: s.MaxWait, Queue: s.Queue})
	fmt.Println(string(b))
	os.Exit(0)
}

// A write's wait for SQLite's lock, while a program outside the queue
// holds it (here a DB with _writers=poll), ends when the write's ctx
// ends: the caller gets ctx's error, not the lock's after Timeout.
func TestPollingWriteLeavesWithItsCtx(t *testing.T) {
	holder, path := openDB(t, nil)
	createT(t, holder)
	poller := openMore(t, "file:"+path+"?_writers=poll", &sqlitedb.Options{Timeout: within})
	let := holdTurn(t, holder)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := poller.Write(ctx, insert(1))
	if lerr := let(); lerr != nil {
		t.Fatal(lerr)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write whose ctx ended while it polled for the lock: %v; want the ctx's error", err)
	}
	if n := queryInt(t, holder, `SELECT count(*) FROM t WHERE n = 1`); n != 0 {
		t.Fatalf("the write that left was committed")
	}
}

// Options.Timeout bounds a write's whole wait, from Write: its wait for
// this process's writer and its wait for the turn among processes share
// one deadline. A second write queued behind one that waits for another
// process's turn fails at its own deadline, not a Timeout after the
// writer took it (which would be half as long again here).
func TestTimeoutBoundsTheWholeWait(t *testing.T) {
	const timeout = 2 * time.Second
	holder, path := openDB(t, nil)
	createT(t, holder)
	waiter := openMore(t, path, &sqlitedb.Options{Timeout: timeout})
	let := holdTurn(t, holder)
	defer let()
	first := make(chan error, 1)
	go func() { first <- waiter.Write(context.Background(), insert(1)) }()
	waitTickets(t, path, 2)
	time.Sleep(timeout / 2)
	start := time.Now()
	err := waiter.Write(context.Background(), insert(2))
	took := time.Since(start)
	if !errors.Is(err, sqlitedb.ErrTimeout) {
		t.Fatalf("the second write: %v; want ErrTimeout", err)
	}
	if err := receive(t, first, "the first write"); !errors.Is(err, sqlitedb.ErrTimeout) {
		t.Fatalf("the first write: %v; want ErrTimeout", err)
	}
	// Its deadline is Timeout after it was submitted; without one
	// deadline for the whole wait it failed 1.5 Timeouts after.
	if took > timeout*5/4 {
		t.Fatalf("the second write failed %v after it was submitted, with a Timeout of %v", took, timeout)
	}
}
