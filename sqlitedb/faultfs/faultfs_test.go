//go:build linux

package faultfs_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/loremnews/loremnews/sqlitedb/faultfs"
	"github.com/loremnews/loremnews/sqlitedb/internal/testenv"
)

// within bounds every wait of these tests.
const within = time.Minute

// mount mounts a failing disk for the test, or ends the test where FUSE
// cannot be mounted (not root, no /dev/fuse): it skips, or fails under
// SQLITEDB_REQUIRE_ALL=1.
func mount(t *testing.T) *faultfs.FS {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "the failing-disk tests mount a FUSE file system and need root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Missing(t, "the failing-disk tests need /dev/fuse: %v", err)
	}
	backing, dir := t.TempDir(), t.TempDir()
	m, err := faultfs.Mount(backing, dir)
	if err != nil {
		testenv.Missing(t, "cannot mount FUSE here: %v", err)
	}
	mounts.Lock()
	mounts.live = append(mounts.live, m)
	mounts.Unlock()
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// mounts are the failing disks mounted so far, for the watchdog.
var mounts struct {
	sync.Mutex
	live []*faultfs.FS
}

// watchdogAfter bounds this package's tests, which take seconds: past it
// the watchdog prints every goroutine's stack and ends the process.
const watchdogAfter = 4 * time.Minute

// watchdog, once the tests have run for watchdogAfter, prints every
// goroutine's stack, aborts the FUSE connection of every mount (a hang
// here is mostly the kernel waiting for this process's own file-system
// server, which an exit would wait for too, in an unkillable state) and
// ends the process, so that a hang is a failure with its cause in the
// log within minutes, not a test binary left waiting for ever.
func watchdog() {
	time.Sleep(watchdogAfter)
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	fmt.Fprintf(os.Stderr, "faultfs tests: still running after %v; every goroutine:\n%s\n", watchdogAfter, buf)
	mounts.Lock()
	for _, m := range mounts.live {
		if err := m.Abort(); err != nil {
			fmt.Fprintln(os.Stderr, "faultfs tests:", err)
		}
	}
	mounts.Unlock()
	os.Exit(3)
}

// onDisk opens what the disk holds of the database name, after the mount
// is gone (what a machine that lost power, or a restart, finds), with
// SQLite's own VFS, and reports its integrity check and its rows in t.
func onDisk(t *testing.T, m *faultfs.FS, name string) (integrity string, rows int64) {
	t.Helper()
	if err := m.Unmount(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(m.Backing, name)+"?vfs=unix")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil {
		return err.Error(), -1
	}
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&rows); err != nil {
		return err.Error(), -1
	}
	return integrity, rows
}

// The lost write-back: the disk loses the pages a checkpoint copied into
// the database file, and reports it once to each open descriptor. The
// first checkpoint is held to part of the WAL by a read's snapshot, so
// SQLite marks the frames it copied as copied before any sync, and a later
// complete checkpoint would start from past them. Plain SQLite (its own
// checkpoints, on its own VFS) runs the same writes beside it as the
// reference.
//
// The package must lose nothing: every write acknowledged is on the disk,
// whole, afterwards, and Close says the sync failed. (Plain SQLite's
// result is logged; the package must do at least as well.)
func TestALostWriteBackLosesNoAcknowledgedWrite(t *testing.T) {
	const before, during, after = 500, 700, 300
	const total = before + during + after

	t.Run("sqlitedb", func(t *testing.T) {
		m := mount(t)
		ctx := context.Background()
		db, err := sqlitedb.Open(ctx, filepath.Join(m.Dir, "lost.db"), &sqlitedb.Options{Timeout: within})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		write := func(n int) {
			t.Helper()
			for range n {
				err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
					_, err := tx.Exec(ctx, `INSERT INTO t (body) VALUES (randomblob(1000))`)
					return err
				})
				if err != nil {
					t.Fatalf("a write: %v", err)
				}
			}
		}
		if err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
			_, err := tx.Exec(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := m.LoseWriteBack("lost.db"); err != nil {
			t.Fatal(err)
		}
		write(before)
		held, release := make(chan struct{}), make(chan struct{})
		readDone := make(chan error, 1)
		go func() {
			readDone <- db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
				var n int64
				err := rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
				close(held)
				<-release
				return err
			})
		}()
		<-held
		write(during)
		deadline := time.Now().Add(within)
		for db.Stats().Checkpoints.Stopped == "" && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		close(release)
		if err := <-readDone; err != nil {
			t.Fatal(err)
		}
		if !m.WriteBackLost("lost.db") {
			t.Fatalf("no sync of the database file came while the loss was armed (checkpoints: %+v)", db.Stats().Checkpoints)
		}
		write(after)
		// The kernel needs the memory: the pages the disk lost are read
		// from it again, with what it holds.
		if err := m.Evict("lost.db"); err != nil {
			t.Fatal(err)
		}
		var live int64
		if err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
			return rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&live)
		}); err != nil || live != total {
			t.Fatalf("a live read once the kernel dropped the lost pages: %d rows, %v; want %d", live, err, total)
		}
		// So does another process, through pread and through a map
		// (read-only: its Close must not checkpoint, from a descriptor that
		// never saw the failure).
		for _, memoryMap := range []bool{false, true} {
			want := fmt.Sprintf("read ok %d", total*1000)
			if out, err := childReads(t, "file:"+filepath.Join(m.Dir, "lost.db")+"?mode=ro", memoryMap); err != nil || out != want {
				t.Errorf("another process's read (MemoryMap %v) once the kernel dropped the lost pages: %v, %q; want %s", memoryMap, err, out, want)
			}
		}
		if err := db.Close(); !errors.Is(err, sqlitedb.ErrSyncFailed) {
			t.Errorf("Close after a lost write-back: %v, want ErrSyncFailed", err)
		}
		integrity, rows := onDisk(t, m, "lost.db")
		t.Logf("sqlitedb: %d writes acknowledged; on the disk afterwards: %d rows, integrity %q", total, rows, integrity)
		if integrity != "ok" || rows != total {
			t.Fatalf("on the disk afterwards: %d of %d acknowledged rows, integrity check %q", rows, total, integrity)
		}
	})

	t.Run("plain SQLite", func(t *testing.T) {
		m := mount(t)
		db, err := sql.Open("sqlite3", "file:"+filepath.Join(m.Dir, "lost.db")+"?vfs=unix&_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=5000")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		db.SetMaxIdleConns(2)
		exec := func(q string) error { _, err := db.Exec(q); return err }
		write := func(n int) (acked int) {
			for range n {
				if exec(`INSERT INTO t (body) VALUES (randomblob(1000))`) == nil {
					acked++
				}
			}
			return acked
		}
		if err := exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		if err := m.LoseWriteBack("lost.db"); err != nil {
			t.Fatal(err)
		}
		acked := write(before)
		reader, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		if _, err := reader.ExecContext(context.Background(), `BEGIN`); err != nil {
			t.Fatal(err)
		}
		if err := reader.QueryRowContext(context.Background(), `SELECT count(*) FROM t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		acked += write(during)
		reader.ExecContext(context.Background(), `COMMIT`)
		reader.Close()
		acked += write(after)
		closeErr := db.Close()
		lost := m.WriteBackLost("lost.db")
		integrity, rows := onDisk(t, m, "lost.db")
		t.Logf("plain SQLite: %d writes acknowledged, close: %v; on the disk afterwards: %d rows, integrity %q",
			acked, closeErr, rows, integrity)
		if !lost {
			t.Fatal("no sync of the database file came while the loss was armed: the reference did not meet the failure")
		}
	})
}

// childEnv names the variable that makes the test binary a child that
// reads the database it names (see TestMain).
const childEnv = "FAULTFS_CHILD_READ"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		childRead(path, os.Getenv("FAULTFS_CHILD_MAP") == "1")
		return
	}
	// The file system's server runs in this process, beside the databases
	// on it. Closing one unmaps its -shm file; the kernel then writes the
	// mapping's dirty pages back through the server while it holds this
	// process's memory-map lock, and a server thread that has to fault in
	// a page of its own buffer to take that write waits for the same lock:
	// the test hangs for good (seen once in some runs). With every page of
	// the process resident and locked, the server never faults. Only for
	// the tests, which need root to mount anyway.
	if err := syscall.Mlockall(syscall.MCL_CURRENT | syscall.MCL_FUTURE); err != nil {
		fmt.Fprintln(os.Stderr, "faultfs tests: mlockall:", err, "(a close may hang, see TestMain)")
	}
	go watchdog()
	os.Exit(m.Run())
}

// childRead opens path (a file's path or a DSN) and reads every row of t, then prints what
// happened: "read ok N" or "read error: …". A read error through a
// memory map kills the process (SIGBUS) before it prints.
func childRead(path string, memoryMap bool) {
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, path, &sqlitedb.Options{MemoryMap: memoryMap})
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(0)
	}
	var sum int64
	err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		return rx.QueryRow(ctx, `SELECT sum(length(body)) FROM t`).Scan(&sum)
	})
	if err != nil {
		fmt.Printf("read error (SQLite code %d): %v\n", sqlitedb.ErrorCode(err), err)
	} else {
		fmt.Println("read ok", sum)
	}
	db.Close()
}

// childReads runs childRead on path (or a DSN) in another process and returns what it
// printed.
func childReads(t *testing.T, path string, memoryMap bool) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path, fmt.Sprintf("FAULTFS_CHILD_MAP=%d", map[bool]int{true: 1}[memoryMap]))
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// A read I/O error is an error for the statement that met it, never a
// crash of the process, with SQLite's own reads and with Options.MemoryMap
// alike: a page that cannot be read fails the read, with an error that
// names the system call's EIO, the process lives, and once the disk reads
// again, so does the database. Through a memory map the kernel answers
// such a read with SIGBUS, which would end the process without the
// package's guarded copy; so each read runs in a child process, where a
// SIGBUS would be seen as what it is.
func TestAReadErrorIsAnErrorNotACrash(t *testing.T) {
	m := mount(t)
	ctx := context.Background()
	path := filepath.Join(m.Dir, "read.db")
	db, err := sqlitedb.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO t (body) WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300)
			SELECT randomblob(3000) FROM c`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil { // the WAL copied into the file and truncated
		t.Fatal(err)
	}
	read := func(memoryMap bool) (string, error) {
		t.Helper()
		return childReads(t, path, memoryMap)
	}
	// A page in the middle of the table.
	if err := m.FailRead("read.db", 40*4096+100); err != nil {
		t.Fatal(err)
	}
	// SQLite answers a read that failed with EIO as a corrupt file
	// (SQLITE_IOERR_CORRUPTFS, reported as SQLITE_CORRUPT); the error says
	// what the system call answered.
	out, err := read(false)
	if err != nil || !strings.Contains(out, "read error") || !strings.Contains(out, "input/output error") {
		t.Errorf("reading a page that cannot be read: the process ended with %v and printed %q, want the read to fail naming the I/O error, and the process to live", err, out)
	}
	// Through the memory map the page faults (SIGBUS); the package's
	// guarded copy turns that into the same read, by pread, and the same
	// error.
	out, err = read(true)
	if err != nil || !strings.Contains(out, "read error") || !strings.Contains(out, "input/output error") {
		t.Errorf("reading a page that cannot be read through the memory map: the process ended with %v and printed %.300q, want the read to fail naming the I/O error, and the process to live", err, out)
	}
	if err := m.Heal("read.db"); err != nil {
		t.Fatal(err)
	}
	for _, memoryMap := range []bool{false, true} {
		if out, err := read(memoryMap); err != nil || out != "read ok 900000" {
			t.Errorf("reading (MemoryMap %v) once the disk reads again: %v, %q; want read ok 900000", memoryMap, err, out)
		}
	}
}

// On a FUSE file system the writers of several processes poll for
// SQLite's lock instead of queueing: the queue's shared map would be served
// by the file system's program (here this one), and it says so.
func TestNoProcessQueueOnFUSE(t *testing.T) {
	m := mount(t)
	db, err := sqlitedb.Open(context.Background(), filepath.Join(m.Dir, "q.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if q := db.Stats().Writer.Queue; !strings.Contains(q, "off: ") || !strings.Contains(q, "FUSE") {
		t.Fatalf("Stats().Writer.Queue = %q, want off, naming FUSE", q)
	}
	err = db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE t (n INTEGER)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Abort, the watchdog's way out of a hang, ends the mount's FUSE
// connection: the file system answers nothing more (ENOTCONN), and it
// unmounts.
func TestAbortEndsTheConnection(t *testing.T) {
	m := mount(t)
	if err := os.WriteFile(filepath.Join(m.Dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Abort(); err != nil {
		t.Fatal(err)
	}
	_, err := os.ReadFile(filepath.Join(m.Dir, "f"))
	if !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("a read after Abort: %v; want ENOTCONN", err)
	}
}
