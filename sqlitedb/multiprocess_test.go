package sqlitedb_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/loremnews/loremnews/sqlitedb/internal/testenv"
)

// These tests run the package beside other processes on the same file, as
// a server does beside the sqlite3 shell, a script, a second server or
// Litestream. What must hold: SQLite's POSIX locks are per process and
// per file, and a process that closes its last connection to a WAL
// database, and gets an EXCLUSIVE lock, takes itself for the last one
// anywhere: it checkpoints and deletes the -wal and -shm files. So every
// open connection of ours must keep its SHARED lock on the database file
// for as long as it is open, whatever else the process does with the file.
//
// Each test runs twice: through the package's VFS, and through SQLite's
// own unix VFS (a DSN's vfs parameter turns the package's VFS off), the
// reference both must match.

// vfsCase is one way for the tests to open the database.
type vfsCase struct {
	name string
	dsn  func(path string) string // the DSN that opens the file at path
}

var vfsCases = []vfsCase{
	{"default", func(path string) string { return path }},
	{"memory map", func(path string) string { return "file:" + path + "?vfs=sqlitedb" }},
	{"vfs=unix", func(path string) string { return "file:" + path + "?vfs=unix" }},
}

// SQLite's unix VFS takes SHARED as a POSIX read lock on these bytes of
// the database file (SHARED_FIRST and SHARED_SIZE in os_unix.c).
const (
	sharedFirst = 1073741826
	sharedLast  = sharedFirst + 510 - 1
)

// A process that reads and writes from many goroutines, so that its read
// pool opens several connections beside the write connection and the
// checkpointer's, holds SQLite's SHARED lock on the database file the
// whole time it has the file open: /proc/locks lists a POSIX read lock of
// this process on the SHARED bytes, while the connections are in use and
// once they are idle. Without it, another process closing the file
// deletes the WAL under this one (TestOtherProcessesLoseNothing shows
// what that costs).
func TestSharedLockHeldAfterPoolsGrow(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/locks, which only Linux has")
	}
	for _, vc := range vfsCases {
		t.Run(vc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "test.db")
			db, err := sqlitedb.Open(context.Background(), vc.dsn(path), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer closeWithin(t, ignoreError(db.Close))
			createT(t, db)

			// Every read connection at once, while writes go on.
			release := holdReads(t, db, sqlitedb.OptionsForTest(db).ReadConns)
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range 20 {
						if err := db.Write(context.Background(), insert(g*100+i)); err != nil {
							t.Errorf("write: %v", err)
							return
						}
					}
				})
			}
			waitGroup(t, &wg, "the writes")
			requireSharedLock(t, path, "with every read connection in use")
			release()

			// Then reads and writes from more goroutines than there are
			// read connections, and the pool idle.
			for g := range 8 {
				wg.Go(func() {
					for i := range 20 {
						if err := db.Write(context.Background(), insert(g*100+i)); err != nil {
							t.Errorf("write: %v", err)
							return
						}
						var n int64
						err := db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
							return rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
						})
						if err != nil {
							t.Errorf("read: %v", err)
							return
						}
					}
				})
			}
			waitGroup(t, &wg, "the reads and writes")
			requireSharedLock(t, path, "with the pools idle after concurrent reads and writes")
		})
	}
}

// requireSharedLock fails the test unless /proc/locks lists a POSIX read
// lock of this process covering the SHARED bytes of the file at path. The
// file is matched by inode alone: the device /proc/locks shows is the
// file system's, which on some (btrfs subvolumes, overlays) is not stat's.
func requireSharedLock(t *testing.T, path, when string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(os.Getpid())
	var mine []string
	for line := range strings.Lines(string(data)) {
		// "1: POSIX  ADVISORY  READ 1234 fe:00:5678 1073741826 1073742335";
		// a lock that waits has "->" after the number, and is not held.
		f := strings.Fields(line)
		if len(f) != 8 || f[1] != "POSIX" || f[4] != pid {
			continue
		}
		id := strings.Split(f[5], ":")
		if len(id) != 3 || id[2] != strconv.FormatUint(ino, 10) {
			continue
		}
		mine = append(mine, strings.TrimSpace(line))
		start, err1 := strconv.ParseInt(f[6], 10, 64)
		end, err2 := strconv.ParseInt(f[7], 10, 64)
		if f[7] == "EOF" {
			end, err2 = 1<<62, nil
		}
		if f[3] == "READ" && err1 == nil && err2 == nil && start <= sharedFirst && end >= sharedLast {
			return
		}
	}
	t.Fatalf("%s, this process (pid %s) holds no POSIX read lock on bytes %d-%d of %s (inode %d): any other process closing the file can take EXCLUSIVE and delete its WAL; the process's locks on it in /proc/locks: %q",
		when, pid, sharedFirst, sharedLast, path, ino, mine)
}

// multiprocessChildEnv names the environment variable that makes the test
// binary a second process of ours writing to the database: it holds the
// DSN.
const multiprocessChildEnv = "SQLITEDB_MULTIPROCESS_CHILD_DSN"

// How long our process writes and reads while the others come and go.
const multiprocessLoad = 4 * time.Second

// While this process writes and reads, other processes open the same
// file, write, checkpoint and close it, again and again: the sqlite3
// shell (inserting, and checkpointing PASSIVE, RESTART or TRUNCATE), a
// Python script (inserting 50 rows, checkpointing TRUNCATE), a second
// process of ours writing through this package, and once a VACUUM from the
// shell. Every row a process acknowledged (its commit returned) must be in
// the file when it is opened again afterwards, the file must pass the
// integrity check, a read of ours must see each of our writes once Write
// returned, and the -wal and -shm files must exist for as long as our
// process has the file open: deleting them under a live process is how
// its commits get lost.
func TestOtherProcessesLoseNothing(t *testing.T) {
	if dsn := os.Getenv(multiprocessChildEnv); dsn != "" {
		multiprocessChild(dsn)
		return
	}
	if testing.Short() {
		t.Skip("starts other processes")
	}
	tools := requireTools(t)
	for _, vc := range vfsCases {
		t.Run(vc.name, func(t *testing.T) { runBesideOthers(t, vc, tools) })
	}
}

// The same while Litestream (installed by scripts/install-test-deps)
// replicates the file to a directory: it keeps a read transaction open,
// checkpoints, and closes the file when it stops, as one more process.
// While it runs, its own SHARED lock keeps every other process from taking
// EXCLUSIVE when it closes, so it is stopped half-way through the run and
// the others go on without it.
func TestOtherProcessesAndLitestreamLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts other processes")
	}
	tools := requireTools(t)
	// $SQLITEDB_LITESTREAM, or litestream on PATH.
	litestream := os.Getenv("SQLITEDB_LITESTREAM")
	if litestream == "" {
		litestream = "litestream"
	}
	litestream, err := exec.LookPath(litestream)
	if err != nil {
		testenv.Missing(t, "needs Litestream (on PATH, or its path in $SQLITEDB_LITESTREAM): %v", err)
	}
	tools.litestream = litestream
	for _, vc := range vfsCases {
		t.Run(vc.name, func(t *testing.T) { runBesideOthers(t, vc, tools) })
	}
}

// otherTools are the programs of the other processes.
type otherTools struct{ sqlite3, python3, litestream string }

// requireTools finds sqlite3 and python3 on PATH, or skips the test (fails
// it under SQLITEDB_REQUIRE_ALL=1).
func requireTools(t *testing.T) otherTools {
	t.Helper()
	var tools otherTools
	var err error
	if tools.sqlite3, err = exec.LookPath("sqlite3"); err != nil {
		testenv.Missing(t, "needs the sqlite3 shell (Debian: apt-get install sqlite3): %v", err)
	}
	if tools.python3, err = exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "needs python3, with its sqlite3 module: %v", err)
	}
	return tools
}

// acks records, for each table, the ids of the rows whose commit a
// process acknowledged.
type acks struct {
	mu  sync.Mutex
	ids map[string][]int64
}

func (a *acks) add(table string, ids ...int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ids == nil {
		a.ids = map[string][]int64{}
	}
	a.ids[table] = append(a.ids[table], ids...)
}

// The tables of the processes, each writing to its own; created by ours.
var multiprocessTables = []string{"ours", "shell", "py", "child"}

// runBesideOthers runs our load and the other processes on a new
// database opened with vc, then checks what they acknowledged.
func runBesideOthers(t *testing.T, vc vfsCase, tools otherTools) {
	dir := t.TempDir()
	path := filepath.Join(dir, "test.db")
	dsn := vc.dsn(path)
	// Everything ends by this deadline, even a process that hangs.
	hard, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()

	db, err := sqlitedb.Open(hard, dsn, &sqlitedb.Options{Setup: func(ctx context.Context, conn *sql.Conn) error {
		for _, table := range multiprocessTables {
			if _, err := conn.ExecContext(ctx, `CREATE TABLE `+table+` (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			db.Close()
		}
	}()
	waitFor(t, "the -wal and -shm files", func() bool {
		_, err1 := os.Stat(path + "-wal")
		_, err2 := os.Stat(path + "-shm")
		return err1 == nil && err2 == nil
	})

	// From here until our database is closed, the -wal and -shm files must
	// exist.
	var missing atomic.Int64
	var firstMissing atomic.Value // string
	pollDone, pollStopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(pollStopped)
		for {
			select {
			case <-pollDone:
				return
			case <-time.After(time.Millisecond):
			}
			for _, suffix := range []string{"-wal", "-shm"} {
				if _, err := os.Stat(path + suffix); err != nil {
					missing.Add(1)
					firstMissing.CompareAndSwap(nil, fmt.Sprintf("%s: %v", suffix, err))
				}
			}
		}
	}()
	stopPolling := func() {
		select {
		case <-pollDone:
		default:
			close(pollDone)
			<-pollStopped
		}
	}
	defer stopPolling()

	var ls *litestreamProcess
	if tools.litestream != "" {
		ls = startLitestream(t, hard, tools.litestream, path, filepath.Join(dir, "replica"))
		defer ls.kill()
	}

	var acked acks
	var wg sync.WaitGroup
	load, stopLoad := context.WithTimeout(hard, multiprocessLoad)
	defer stopLoad()
	ourLoad(t, &wg, load, hard, db, &acked)
	runs := others(t, &wg, load, hard, tools, path, dsn, &acked)
	if ls != nil {
		wg.Go(func() {
			time.Sleep(multiprocessLoad / 2)
			ls.stop(t)
		})
	}
	waitGroup(t, &wg, "our load and the other processes to end")
	stopPolling()
	if n := missing.Load(); n > 0 {
		t.Errorf("the WAL or -shm file was missing %d times while our process had the database open (first: %s): another process deleted them under it", n, firstMissing.Load())
	}
	closed = true
	if err := db.Close(); err != nil {
		t.Errorf("close: %v", err)
	}

	// Open the file afresh: every acknowledged row must be in it.
	db2, err := sqlitedb.Open(hard, dsn, nil)
	if err != nil {
		t.Fatalf("open again after the run: %v", err)
	}
	defer db2.Close()
	var integrity string
	err = db2.Read(hard, func(ctx context.Context, rx *sqlitedb.Rx) error {
		return rx.QueryRow(ctx, `PRAGMA integrity_check`).Scan(&integrity)
	})
	if err != nil || integrity != "ok" {
		lines := strings.Split(integrity, "\n")
		t.Errorf("integrity check after the run: %v; %d lines, the first: %q", err, len(lines), head(lines, 5))
	}
	var summary []string
	for _, table := range multiprocessTables {
		want := acked.ids[table]
		have, err := rowIDs(hard, db2, table)
		if err != nil {
			t.Errorf("table %s, %d rows acknowledged: cannot read it after the run: %v", table, len(want), err)
			continue
		}
		var lost []int64
		for _, id := range want {
			if !have[id] {
				lost = append(lost, id)
			}
		}
		if len(lost) > 0 {
			slices.Sort(lost)
			t.Errorf("table %s: %d of %d acknowledged rows are missing after the run, ids %v", table, len(lost), len(want), head(lost, 20))
		}
		if len(want) == 0 {
			t.Errorf("table %s: no write was acknowledged, so the run proved nothing for it", table)
		}
		summary = append(summary, fmt.Sprintf("%s %d acknowledged (%d in the file)", table, len(want), len(have)))
	}
	t.Logf("%s; %s", strings.Join(summary, ", "), runs)
}

// ourLoad starts our process's load on wg until load is done: three
// goroutines writing rows to table ours, recording each acknowledged id,
// and two reading, each checking that a row whose write returned is
// there.
func ourLoad(t *testing.T, wg *sync.WaitGroup, load, hard context.Context, db *sqlitedb.DB, acked *acks) {
	var lastAcked atomic.Int64
	var failures atomic.Int64
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 5 {
			t.Errorf("our process: "+format, args...)
		}
		time.Sleep(10 * time.Millisecond) // no busy loop on an error that repeats
	}
	for range 3 {
		wg.Go(func() {
			for load.Err() == nil {
				var id int64
				err := db.Write(hard, func(ctx context.Context, tx *sqlitedb.Tx) error {
					return tx.QueryRow(ctx, `INSERT INTO ours (body) VALUES (randomblob(300)) RETURNING id`).Scan(&id)
				})
				if err != nil {
					fail("write: %v", err)
					continue
				}
				acked.add("ours", id)
				lastAcked.Store(id)
				time.Sleep(time.Millisecond) // leave the others some CPU
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for load.Err() == nil {
				id := lastAcked.Load()
				var found, others int64
				err := db.Read(hard, func(ctx context.Context, rx *sqlitedb.Rx) error {
					if err := rx.QueryRow(ctx, `SELECT count(*) FROM ours WHERE id = ?`, id).Scan(&found); err != nil {
						return err
					}
					return rx.QueryRow(ctx, `SELECT (SELECT count(*) FROM shell) + (SELECT count(*) FROM py) + (SELECT count(*) FROM child)`).Scan(&others)
				})
				switch {
				case err != nil:
					fail("read: %v", err)
				case id != 0 && found != 1:
					fail("row %d was acknowledged, and a read begun after that does not see it", id)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

// others starts, on wg, the loops of the other processes until load is
// done, each process bounded by hard; it returns a description of the
// runs, complete once wg is done.
func others(t *testing.T, wg *sync.WaitGroup, load, hard context.Context, tools otherTools, path, dsn string, acked *acks) fmt.Stringer {
	runs := &runCounts{}
	// Each loop runs its process again and again; a run that fails is
	// reported with its output.
	loop := func(name string, run func(k int) (string, error)) {
		wg.Go(func() {
			for k := 1; load.Err() == nil; k++ {
				out, err := run(k)
				runs.add(name, err == nil)
				if err != nil {
					if runs.failures(name) <= 3 {
						t.Errorf("%s, run %d: %v\n%s", name, k, err, out)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}

	// Each process waits up to 5 s for the write lock, but only 200 ms in
	// its checkpoint: a RESTART or TRUNCATE checkpoint holds the write lock
	// while it waits for readers of older snapshots to move on, and
	// Litestream keeps such a reader open, so a long wait there would stall
	// every writer.

	// (a) The sqlite3 shell: a count, 10 rows of its own, a checkpoint.
	modes := []string{"PASSIVE", "RESTART", "TRUNCATE"}
	loop("sqlite3", func(k int) (string, error) {
		var values []string
		var ids []int64
		for i := range 10 {
			ids = append(ids, int64(k*10+i))
			values = append(values, fmt.Sprintf("(%d, randomblob(200))", k*10+i))
		}
		script := fmt.Sprintf(".timeout 5000\nSELECT count(*) FROM ours;\nBEGIN IMMEDIATE;\nINSERT INTO shell (id, body) VALUES %s;\nCOMMIT;\nSELECT 'committed %d';\n.timeout 200\nPRAGMA wal_checkpoint(%s);\n",
			strings.Join(values, ", "), k, modes[k%len(modes)])
		out, err := runOther(hard, script, nil, tools.sqlite3, "-batch", "-bail", path)
		if hasLine(out, fmt.Sprintf("committed %d", k)) {
			acked.add("shell", ids...)
		}
		return out, err
	})

	// (b) Python's sqlite3 module: 50 rows, committed, a TRUNCATE checkpoint.
	const pyScript = `
import sqlite3, sys
path, run, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
con = sqlite3.connect(path, timeout=5, isolation_level=None)
con.execute("BEGIN IMMEDIATE")
con.executemany("INSERT INTO py (id, body) VALUES (?, randomblob(200))", [(run * n + i,) for i in range(n)])
con.execute("COMMIT")
print("committed", run, flush=True)
con.execute("PRAGMA busy_timeout = 200")
con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
con.close()
`
	loop("python3", func(k int) (string, error) {
		const n = 50
		out, err := runOther(hard, "", nil, tools.python3, "-c", pyScript, path, strconv.Itoa(k), strconv.Itoa(n))
		if hasLine(out, fmt.Sprintf("committed %d", k)) {
			for i := range n {
				acked.add("py", int64(k*n+i))
			}
		}
		return out, err
	})

	// (c) A second process of ours: it prints the id of each row once its
	// Write returned.
	loop("second process", func(int) (string, error) {
		out, err := runOther(hard, "", []string{multiprocessChildEnv + "=" + dsn},
			os.Args[0], "-test.run=^TestOtherProcessesLoseNothing$", "-test.count=1")
		for line := range strings.Lines(out) {
			if id, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64); err == nil {
				acked.add("child", id)
			}
		}
		return out, err
	})

	// (d) One VACUUM from the shell, half-way through.
	wg.Go(func() {
		select {
		case <-load.Done():
			return
		case <-time.After(multiprocessLoad / 2):
		}
		out, err := runOther(hard, ".timeout 5000\nVACUUM;\nSELECT 'vacuumed';\n", nil, tools.sqlite3, "-batch", "-bail", path)
		runs.add("VACUUM", err == nil && hasLine(out, "vacuumed"))
		if err != nil || !hasLine(out, "vacuumed") {
			t.Errorf("VACUUM from the sqlite3 shell: %v\n%s", err, out)
		}
	})
	return runs
}

// runOther runs a program to its end, with stdin as its input, and
// returns its standard output; the error includes its standard error.
func runOther(ctx context.Context, stdin string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w: %s", filepath.Base(name), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

func hasLine(out, want string) bool {
	for line := range strings.Lines(out) {
		if strings.TrimSpace(line) == want {
			return true
		}
	}
	return false
}

func head[T any](s []T, n int) []T { return s[:min(n, len(s))] }

// rowIDs reads the ids of a table's rows.
func rowIDs(ctx context.Context, db *sqlitedb.DB, table string) (map[int64]bool, error) {
	ids := map[int64]bool{}
	err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		rows, err := rx.Query(ctx, `SELECT id FROM `+table)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids[id] = true
		}
		return rows.Err()
	})
	return ids, err
}

// runCounts counts the runs of each other process, and those that failed.
type runCounts struct {
	mu     sync.Mutex
	names  []string
	ok, no map[string]int
}

func (r *runCounts) add(name string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ok == nil {
		r.ok, r.no = map[string]int{}, map[string]int{}
	}
	if r.ok[name]+r.no[name] == 0 {
		r.names = append(r.names, name)
	}
	if ok {
		r.ok[name]++
	} else {
		r.no[name]++
	}
}

func (r *runCounts) failures(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.no[name]
}

func (r *runCounts) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for _, name := range r.names {
		parts = append(parts, fmt.Sprintf("%s %d runs (%d failed)", name, r.ok[name]+r.no[name], r.no[name]))
	}
	return "other processes: " + strings.Join(parts, ", ")
}

// multiprocessChild is the second process of ours: it opens the database,
// writes 100 rows to table child through Write, printing each one's id
// once Write returned, closes it and exits.
func multiprocessChild(dsn string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "second process: %s: %v\n", what, err)
		os.Exit(2)
	}
	db, err := sqlitedb.Open(ctx, dsn, nil)
	if err != nil {
		fail("open", err)
	}
	out := bufio.NewWriter(os.Stdout)
	for range 100 {
		var id int64
		err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
			return tx.QueryRow(ctx, `INSERT INTO child (body) VALUES (randomblob(300)) RETURNING id`).Scan(&id)
		})
		if err != nil {
			fail("write", err)
		}
		fmt.Fprintln(out, id)
		out.Flush() // acknowledged: the parent counts on it now
	}
	if err := db.Close(); err != nil {
		fail("close", err)
	}
	os.Exit(0)
}

// litestreamProcess is a running `litestream replicate`.
type litestreamProcess struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{} // closed when it has exited
	err  error         // its exit, once done is closed
}

// syncBuffer is a bytes.Buffer safe for a process's output and a test's
// reads at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startLitestream starts Litestream replicating the database at path to
// the directory replica, with a config file of its own.
func startLitestream(t *testing.T, ctx context.Context, litestream, path, replica string) *litestreamProcess {
	t.Helper()
	config := filepath.Join(t.TempDir(), "litestream.yml")
	yml := fmt.Sprintf("dbs:\n  - path: %s\n    replica:\n      type: file\n      path: %s\n", path, replica)
	if err := os.WriteFile(config, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	ls := &litestreamProcess{log: &syncBuffer{}, done: make(chan struct{})}
	ls.cmd = exec.CommandContext(ctx, litestream, "replicate", "-config", config)
	ls.cmd.Stdout, ls.cmd.Stderr = ls.log, ls.log
	ls.cmd.WaitDelay = time.Second
	if err := ls.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { ls.err = ls.cmd.Wait(); close(ls.done) }()
	// It has started replicating once the replica holds a file.
	waitFor(t, "Litestream's first file in the replica", func() bool {
		select {
		case <-ls.done:
			t.Fatalf("litestream replicate exited at once: %v\n%s", ls.err, ls.log.String())
		default:
		}
		n := 0
		filepath.WalkDir(replica, func(_ string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				n++
			}
			return nil
		})
		return n > 0
	})
	return ls
}

// stop stops Litestream as an operator would, with SIGTERM, and fails the
// test if it had exited before, or does not exit within 10 s. It may run on
// any goroutine.
func (ls *litestreamProcess) stop(t *testing.T) {
	t.Helper()
	select {
	case <-ls.done:
		t.Errorf("litestream replicate exited during the run: %v\n%s", ls.err, ls.log.String())
		return
	default:
	}
	ls.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ls.done:
	case <-time.After(10 * time.Second):
		t.Errorf("litestream replicate still running 10 s after SIGTERM\n%s", ls.log.String())
		ls.kill()
	}
}

func (ls *litestreamProcess) kill() {
	select {
	case <-ls.done:
	default:
		ls.cmd.Process.Kill()
		<-ls.done
	}
}
