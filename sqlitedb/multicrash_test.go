package sqlitedb_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// These environment variables make the test binary one of the writers of
// TestKillOneOfSeveralWriters: the database's path, and the writer's name.
const (
	multicrashDBEnv   = "SQLITEDB_MULTICRASH_CHILD_DB"
	multicrashNameEnv = "SQLITEDB_MULTICRASH_CHILD_NAME"
)

// A writer killed with SIGKILL takes nothing from the processes writing
// beside it. Three processes (this test binary again) write rows to the
// same file through Write, each row naming its process, and print each
// row's id once Write has returned nil. Four times, at a random moment,
// the parent kills one of them with SIGKILL, mid-transaction or between
// two, and starts a fresh one in its place while the other two go on: a
// kill may leave uncommitted frames in the WAL, the write lock or a
// checkpoint half done, and the others must carry on over it. At the end
// it kills one more, and stops the other two with SIGTERM, on which they
// close the database (a checkpoint beside the others). Then the file,
// opened again, passes the integrity check and holds every row any
// process acknowledged, under the name of the process that wrote it.
//
// The writers differ, so that kills land in each way of writing: their
// way of running writes (a transaction each, or coalesced) and, for
// every other one, a page cache of 10 pages, so transactions spill pages
// into the WAL before they commit.
func TestKillOneOfSeveralWriters(t *testing.T) {
	if path := os.Getenv(multicrashDBEnv); path != "" {
		multicrashChild(path, os.Getenv(multicrashNameEnv))
		return
	}
	if testing.Short() {
		t.Skip("starts and kills processes")
	}
	path := filepath.Join(t.TempDir(), "multicrash.db")
	// Everything ends by this deadline, even a process that hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	db, err := sqlitedb.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, `CREATE TABLE t (id INTEGER PRIMARY KEY, child TEXT NOT NULL, body BLOB NOT NULL)`)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	var procs []*writerProcess // every one started, in order
	defer func() {
		for _, p := range procs {
			p.kill() // a test that failed half-way leaves none running
		}
	}()
	start := func() *writerProcess {
		p := startWriterProcess(t, ctx, path, fmt.Sprintf("w%d", len(procs)+1))
		procs = append(procs, p)
		return p
	}
	pause := func() {
		select {
		case <-time.After(time.Second + rand.N(1500*time.Millisecond)):
		case <-ctx.Done():
			t.Fatalf("the 60 s deadline passed")
		}
	}
	live := []*writerProcess{start(), start(), start()}
	for range 4 {
		pause()
		i := rand.IntN(len(live))
		live[i].killNine(t)
		live[i] = start()
	}
	pause()
	// The end: one more killed, the others stopped as a server is.
	i := rand.IntN(len(live))
	live[i].killNine(t)
	for j, p := range live {
		if j != i {
			p.terminate(t)
		}
	}
	for j, p := range live {
		if j != i {
			p.waitTerminated(t)
		}
	}

	db, err = sqlitedb.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("open after the kills: %v", err)
	}
	defer db.Close()
	var integrity string
	rows := map[int64]string{}
	err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		if err := rx.QueryRow(ctx, `PRAGMA integrity_check`).Scan(&integrity); err != nil {
			return err
		}
		rs, err := rx.Query(ctx, `SELECT id, child FROM t`)
		if err != nil {
			return err
		}
		for rs.Next() {
			var id int64
			var child string
			if err := rs.Scan(&id, &child); err != nil {
				return err
			}
			rows[id] = child
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if integrity != "ok" {
		t.Errorf("integrity check after the kills: %s", integrity)
	}
	var summary []string
	for _, p := range procs {
		if bad := p.badLine(); bad != "" {
			t.Errorf("writer %s printed %q, not a row id", p.name, bad)
		}
		// A writer says nothing unless something went wrong (the race
		// detector's reports among it, which a kill would otherwise hide).
		if msg := p.stderr.String(); msg != "" {
			t.Errorf("writer %s (%s) wrote to its standard error:\n%s", p.name, p.ended, msg)
		}
		acked := p.acknowledged()
		var lost []int64
		for _, id := range acked {
			if rows[id] != p.name {
				lost = append(lost, id)
			}
		}
		if len(lost) > 0 {
			slices.Sort(lost)
			t.Errorf("writer %s (%s): %d of its %d acknowledged rows are missing after the kills, or name another writer; ids %v",
				p.name, p.ended, len(lost), len(acked), head(lost, 20))
		}
		summary = append(summary, fmt.Sprintf("%s %s after %d rows", p.name, p.ended, len(acked)))
	}
	var size int64
	if fi, err := os.Stat(path); err == nil {
		size = fi.Size()
	}
	t.Logf("%d rows in the file (%d MB); %s", len(rows), size>>20, strings.Join(summary, ", "))
}

// writerProcess is a running writer of TestKillOneOfSeveralWriters.
type writerProcess struct {
	name   string
	cmd    *exec.Cmd
	stderr *syncBuffer
	eof    chan struct{} // closed once its standard output is closed: it has exited
	ended  string        // how it ended: "killed" or "stopped"
	waited bool

	mu    sync.Mutex
	acked []int64 // the ids it printed
	bad   string  // a line that was not an id
}

// startWriterProcess starts the test binary as a writer named name.
func startWriterProcess(t *testing.T, ctx context.Context, path, name string) *writerProcess {
	t.Helper()
	p := &writerProcess{name: name, stderr: &syncBuffer{}, eof: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKillOneOfSeveralWriters$", "-test.count=1")
	p.cmd.Env = append(os.Environ(), multicrashDBEnv+"="+path, multicrashNameEnv+"="+name)
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.eof)
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			id, err := strconv.ParseInt(lines.Text(), 10, 64)
			p.mu.Lock()
			if err != nil && p.bad == "" {
				p.bad = lines.Text()
			} else if err == nil {
				p.acked = append(p.acked, id)
			}
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *writerProcess) acknowledged() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.acked)
}

// badLine is the first line p printed that was not a row id, if any.
func (p *writerProcess) badLine() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bad
}

// waitAcked waits for p's first acknowledged row, so that a kill lands
// while it writes, not while it opens the database.
func (p *writerProcess) waitAcked(t *testing.T) {
	t.Helper()
	waitFor(t, "writer "+p.name+"'s first acknowledged row", func() bool {
		select {
		case <-p.eof:
			p.fail(t, "exited before its first acknowledged row")
		default:
		}
		return len(p.acknowledged()) > 0
	})
}

// killNine kills p with SIGKILL, once it has acknowledged a row, and
// waits for it: it must die of that signal, not have exited before.
func (p *writerProcess) killNine(t *testing.T) {
	t.Helper()
	p.waitAcked(t)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 writer %s: %v", p.name, err)
	}
	p.ended = "killed"
	err := p.wait(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		p.fail(t, fmt.Sprintf("ended with %v, want killed by SIGKILL", err))
	}
}

// terminate sends p SIGTERM, once it has acknowledged a row: it stops
// writing, closes the database and exits.
func (p *writerProcess) terminate(t *testing.T) {
	t.Helper()
	p.waitAcked(t)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM writer %s: %v", p.name, err)
	}
	p.ended = "stopped"
}

// waitTerminated waits for p, stopped by terminate, to exit 0.
func (p *writerProcess) waitTerminated(t *testing.T) {
	t.Helper()
	if err := p.wait(t); err != nil {
		p.fail(t, fmt.Sprintf("ended with %v after SIGTERM, want exit status 0 (its close failed, or it never stopped)", err))
	}
}

// wait waits for p to exit, its output read to the end first.
func (p *writerProcess) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-p.eof:
	case <-time.After(within):
		t.Fatalf("writer %s still running %v after it was told to end", p.name, within)
	}
	p.waited = true
	return p.cmd.Wait()
}

func (p *writerProcess) fail(t *testing.T, what string) {
	t.Helper()
	t.Fatalf("writer %s %s (%d rows acknowledged); its standard error:\n%s", p.name, what, len(p.acknowledged()), p.stderr.String())
}

// kill ends p, if it was never waited for.
func (p *writerProcess) kill() {
	if !p.waited {
		p.cmd.Process.Kill()
		<-p.eof
		p.cmd.Wait()
		p.waited = true
	}
}

// multicrashChild is one writer: from three goroutines, transactions of 1
// to 4 rows, mostly of up to 1 KB, one in 20 of 10 to 30 KB (overflow
// pages, more than a page cache of 10 pages holds);
// it prints the ids of each once Write has returned nil. On SIGTERM it
// stops writing, closes the database and exits 0; left alone for 30 s, it
// exits 3.
func multicrashChild(path, name string) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "writer %s: %s: %v\n", name, what, err)
		os.Exit(2)
	}
	n, err := strconv.Atoi(strings.TrimPrefix(name, "w"))
	if err != nil {
		fail("name", err)
	}
	// w1 and w2 coalesce their writes, w3 and w4 not, and so on; the
	// even ones have the small page cache: every pairing comes up.
	write := (*sqlitedb.DB).Write
	if n%4 == 1 || n%4 == 2 {
		write = (*sqlitedb.DB).Coalesce
	}
	opts := &sqlitedb.Options{}
	if n%2 == 0 {
		opts.Pragmas = []sqlitedb.Pragma{{Name: "cache_size", Value: "10"}}
	}
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, path, opts)
	if err != nil {
		fail("open", err)
	}
	var stopping atomic.Bool
	go func() {
		<-stop
		stopping.Store(true)
	}()
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g)))
			for !stopping.Load() && time.Now().Before(deadline) {
				size := rng.IntN(1000)
				if rng.IntN(20) == 0 {
					size = 10000 + rng.IntN(20000)
				}
				n := 1 + rng.IntN(4)
				var ids []int64
				err := write(db, ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
					ids = ids[:0]
					for range n {
						var id int64
						if err := tx.QueryRow(ctx, `INSERT INTO t (child, body) VALUES (?, randomblob(?)) RETURNING id`, name, size).Scan(&id); err != nil {
							return err
						}
						ids = append(ids, id)
					}
					return nil
				})
				if err != nil {
					fail("write", err)
				}
				mu.Lock()
				for _, id := range ids {
					fmt.Fprintln(out, id)
				}
				out.Flush() // acknowledged: the parent may count on them now
				mu.Unlock()
				// Not flat out: the file stays some tens of megabytes.
				time.Sleep(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
			}
		})
	}
	wg.Wait()
	if !stopping.Load() {
		os.Exit(3) // never stopped: the parent reports it
	}
	if err := db.Close(); err != nil {
		fail("close", err)
	}
	os.Exit(0)
}
