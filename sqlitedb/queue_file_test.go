package sqlitedb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/loremnews/loremnews/sqlitedb"
)

// The queue's file is handled as SQLite handles its -shm: whatever is
// planted at its name, whatever happens to it while processes run, the
// worst a process sees is a queue turned off (its writers then poll for
// SQLite's lock, and Stats says why), never a file it was not meant to
// touch, a fault that ends it, or a wait without end.

// requireQueueOff fails unless db's queue is off for a reason that says
// want.
func requireQueueOff(t *testing.T, db *sqlitedb.DB, want string) {
	t.Helper()
	if q := db.Stats().Writer.Queue; !strings.HasPrefix(q, "off: ") || !strings.Contains(q, want) {
		t.Fatalf("Stats().Writer.Queue = %q; want off, saying %q", q, want)
	}
}

// requireWrites checks that the DBs, all on one file with a table t,
// still write: each writes a row and sees the others'.
func requireWrites(t *testing.T, dbs ...*sqlitedb.DB) {
	t.Helper()
	before := queryInt(t, dbs[0], `SELECT count(*) FROM t`)
	errs := make(chan error, len(dbs))
	for i, db := range dbs {
		go func() { errs <- db.Write(context.Background(), insert(1000+i)) }()
	}
	for range dbs {
		if err := receive(t, errs, "a write"); err != nil {
			t.Fatal(err)
		}
	}
	for _, db := range dbs {
		if n := queryInt(t, db, `SELECT count(*) FROM t`); n != before+int64(len(dbs)) {
			t.Fatalf("%d rows after %d writes on %d, want %d", n, len(dbs), before, before+int64(len(dbs)))
		}
	}
}

// A symbolic link planted at the queue's name is never followed: the
// file it points to is not created, and the queue is off. Were it
// followed, whoever can write the database's folder could have a process
// run as root create any file, with the database's owner.
func TestQueueFileSymlinkRefused(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	path, target := filepath.Join(dir, "q.db"), filepath.Join(elsewhere, "created-by-the-link")
	if err := os.Symlink(target, path+"-queue"); err != nil {
		t.Fatal(err)
	}
	db := openMore(t, path, nil)
	createT(t, db)
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the symbolic link at the queue's name was followed: %s exists (%v)", target, err)
	}
	requireQueueOff(t, db, "symbolic link")
	requireWrites(t, db)
}

// A file at the queue's name that the package would not have made is
// refused and left as it is: a hard link to another file, a file of
// another owner, one of another size. None is written to, chmod'ed or
// chown'ed.
func TestQueueFileForeignRefused(t *testing.T) {
	cases := []struct {
		name, want string
		plant      func(t *testing.T, queue string)
	}{
		{"a hard link", "2 links", func(t *testing.T, queue string) {
			other := filepath.Join(t.TempDir(), "other")
			writeFile(t, other, "", 0o600)
			if err := os.Link(other, queue); err != nil {
				t.Fatal(err)
			}
		}},
		{"another size", "not a queue's", func(t *testing.T, queue string) {
			writeFile(t, queue, "not a queue, and longer than one: "+strings.Repeat("x", 1000), 0o600)
		}},
		{"a FIFO", "not a regular file", func(t *testing.T, queue string) {
			if err := syscall.Mkfifo(queue, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"another owner", "owned by uid 4242", func(t *testing.T, queue string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root, to give the file another owner")
			}
			writeFile(t, queue, "", 0o600)
			if err := os.Chown(queue, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "q.db")
			c.plant(t, path+"-queue")
			before := describeFile(t, path+"-queue")
			db := openMore(t, path, nil)
			createT(t, db)
			requireQueueOff(t, db, c.want)
			if after := describeFile(t, path+"-queue"); after != before {
				t.Fatalf("the planted file changed: %s, then %s", before, after)
			}
			requireWrites(t, db)
		})
	}
}

// An empty queue file that another made is used, but its mode and owner
// stay what they are: only the call that created the file sets them.
func TestQueueFileModeOnlyWhenCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	writeFile(t, path+"-queue", "", 0o600)
	db := openMore(t, path, nil)
	createT(t, db)
	if q := db.Stats().Writer.Queue; q != "on" {
		t.Fatalf("Queue = %q with an empty queue file, want on", q)
	}
	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	other := openMore(t, path, nil)
	requireWrites(t, db, other)
	if fi, err := os.Stat(path + "-queue"); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() == 0 {
		t.Fatalf("the queue file someone else made: %v, %v; want its mode 0600 kept, and its header written", fi.Mode(), err)
	}
	// One the package creates has the database file's mode, whatever the
	// umask.
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	writeFile(t, fresh, "", 0o664)
	old := syscall.Umask(0o077)
	db3 := openMore(t, fresh, nil)
	syscall.Umask(old)
	if q := db3.Stats().Writer.Queue; q != "on" {
		t.Fatalf("Queue = %q, want on", q)
	}
	if fi, err := os.Stat(fresh + "-queue"); err != nil || fi.Mode().Perm() != 0o664 {
		t.Fatalf("the queue file the package created: %v, %v; want the database's mode 0664", fi.Mode(), err)
	}
}

// A full disk when the queue's file is set up is an error, not a fault:
// its header is written before it is mapped (a file grown with a hole
// would fault, SIGBUS, at the first store through the map). Needs root,
// to mount a tmpfs of 1 MiB.
func TestQueueFileFullDiskAtOpen(t *testing.T) {
	dir := faultTmpfs(t)
	path := filepath.Join(dir, "q.db")
	first := openMore(t, "file:"+path+"?_writers=poll", nil)
	createT(t, first)
	fill(t, filepath.Join(dir, "filler"))
	db, err := sqlitedb.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("open on a full disk: %v", err)
	}
	defer closeWithin(t, ignoreError(db.Close))
	requireQueueOff(t, db, "no space left on device")
	os.Remove(filepath.Join(dir, "filler"))
	requireWrites(t, first, db)
}

// fill writes name until the file system it is on is full.
func fill(t *testing.T, name string) {
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// A queue file cut short while processes use it (a restore with cp, a
// "> file") turns their queues off, and ends none of them: one holds the
// turn and another waits for it, asleep on a word of the map, when the
// file is cut to 0 bytes; both writes commit, later ones too, and each
// says why its queue is off.
func TestQueueFileCutShort(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		t.Run(map[bool]string{false: "pread", true: "memory map"}[mapped], func(t *testing.T) {
			opts := &sqlitedb.Options{MemoryMap: mapped}
			holder, path := openDB(t, opts)
			createT(t, holder)
			waiter := openMore(t, path, opts)
			let := holdTurn(t, holder)
			base := sqlitedb.QueueTicketsForTest(path)
			errc := make(chan error, 1)
			go func() { errc <- waiter.Write(context.Background(), insert(1)) }()
			waitTickets(t, path, base+1)
			if err := os.Truncate(path+"-queue", 0); err != nil {
				t.Fatal(err)
			}
			if err := let(); err != nil {
				t.Fatalf("the write holding the turn: %v", err)
			}
			if err := receive(t, errc, "the write waiting for the turn"); err != nil {
				t.Fatalf("the write waiting for the turn: %v", err)
			}
			requireWrites(t, holder, waiter)
			requireQueueOff(t, holder, "cut short")
			requireQueueOff(t, waiter, "cut short")
			if n := queryInt(t, holder, `SELECT count(*) FROM t`); n != 4 {
				t.Fatalf("%d rows, want 4", n)
			}
		})
	}
}

// A process that keeps its turn from one transaction to the next (its
// writes keep coming) notices the queue's file deleted or replaced at its
// next transaction: it ends the turn, held in the old file, and queues
// behind the process that took a ticket in the new one meanwhile, instead
// of going on as if it still had the turn.
func TestQueueFileReplacedWhileATurnIsKept(t *testing.T) {
	before, path := openDB(t, nil)
	createT(t, before)
	release := holdWriter(t, before, insert(1))
	second := make(chan error, 1)
	go func() { second <- before.Write(context.Background(), insert(2)) }()
	waitFor(t, "a second write queued behind the held one", func() bool { return before.Stats().Writer.Depth == 1 })
	if err := os.Remove(path + "-queue"); err != nil {
		t.Fatal(err)
	}
	after := openMore(t, path, nil)
	third := make(chan error, 1)
	go func() { third <- after.Write(context.Background(), insert(3)) }()
	waitFor(t, "the DB opened after the deletion to take a ticket", func() bool { return sqlitedb.QueueTicketsForTest(path) >= 1 })
	release()
	for _, w := range []struct {
		errc chan error
		what string
	}{{second, "the second write"}, {third, "the write of the DB opened after"}} {
		if err := receive(t, w.errc, w.what); err != nil {
			t.Fatalf("%s: %v", w.what, err)
		}
	}
	if got := queryInts(t, before, `SELECT n FROM t ORDER BY seq`); !slices.Equal(got, []int64{1, 3, 2}) {
		t.Fatalf("rows in the order %v, want [1 3 2]: the held write, the one queued in the new file, then the one that had kept the turn", got)
	}
	if s := before.Stats().Writer; s.TurnWaits != 1 || s.Queue != "on" {
		t.Fatalf("the DB whose turn was held: %d turn waits, queue %q; want 1 (behind the DB opened after), on", s.TurnWaits, s.Queue)
	}
}

// A queue file deleted (or replaced) while processes use it is noticed:
// each opens the file now at the path at its next turn, so the
// processes started before and after it queue together. One opened
// after the deletion holds the turn; one opened before waits for it.
func TestQueueFileDeleted(t *testing.T) {
	before, path := openDB(t, nil)
	createT(t, before)
	if err := os.Remove(path + "-queue"); err != nil {
		t.Fatal(err)
	}
	after := openMore(t, path, nil)
	let := holdTurn(t, after)
	errc := make(chan error, 1)
	go func() { errc <- before.Write(context.Background(), insert(1)) }()
	waitFor(t, "the DB opened before the deletion to wait for the turn of the one opened after", func() bool {
		return sqlitedb.QueueTicketsForTest(path) >= 2
	})
	if err := let(); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, errc, "the write behind the turn"); err != nil {
		t.Fatal(err)
	}
	for _, db := range []*sqlitedb.DB{before, after} {
		if s := db.Stats().Writer; s.Queue != "on" || s.QueueErrors != 0 {
			t.Fatalf("after the queue file was deleted: Queue %q, %d queue errors; want on, 0", s.Queue, s.QueueErrors)
		}
	}
	if s := before.Stats().Writer; s.TurnWaits != 1 {
		t.Fatalf("the DB opened before the deletion waited %d times for a turn, want 1 (behind the one opened after)", s.TurnWaits)
	}
}

// One database has one queue whatever the path it is opened by: through a
// symbolic link to it, the queue is the one beside the file itself.
func TestQueueOneForEveryPath(t *testing.T) {
	real, path := openDB(t, nil)
	createT(t, real)
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	linked := openMore(t, link, nil)
	let := holdTurn(t, real)
	// Counted before the write starts: it may take its ticket at once.
	tickets := sqlitedb.QueueTicketsForTest(path)
	errc := make(chan error, 1)
	go func() { errc <- linked.Write(context.Background(), insert(1)) }()
	waitTickets(t, path, tickets+1)
	if err := let(); err != nil {
		t.Fatal(err)
	}
	if err := receive(t, errc, "the write through the link"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link + "-queue"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a second queue beside the link: %v", err)
	}
	if s := linked.Stats().Writer; s.Queue != "on" || s.TurnWaits != 1 {
		t.Fatalf("through the link: Queue %q, %d turn waits; want on, 1", s.Queue, s.TurnWaits)
	}
}

// A process stopped (SIGSTOP, a debugger) while it holds the lock that
// guards the queue's set-up holds Open up for at most Options.Timeout,
// after which the queue is off, or until Open's ctx ends, which ends
// Open with it.
func TestQueueOpenBesideStoppedHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	db, path := openDB(t, nil)
	createT(t, db)
	cmd := startQueueChild(t, path, "stop holding the first lock", "locked")
	waitFor(t, "the holder to stop", func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
		_, rest, _ := strings.Cut(string(b), ") ")
		return strings.HasPrefix(rest, "T")
	})

	other, err := sqlitedb.Open(context.Background(), path, &sqlitedb.Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("open beside the stopped holder: %v", err)
	}
	defer closeWithin(t, ignoreError(other.Close))
	requireQueueOff(t, other, "held its lock of byte 0")
	requireWrites(t, db, other)

	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	if late, err := sqlitedb.Open(short, path, &sqlitedb.Options{Timeout: within}); !errors.Is(err, context.DeadlineExceeded) {
		if late != nil {
			late.Close()
		}
		t.Fatalf("open with a ctx that ends while it waits for the stopped holder: %v; want the ctx's error", err)
	}
}

// stopHoldingFirstLock is the queue child's "stop holding the first
// lock": lock byte 0 of the queue's file as the package does, say
// "locked", and stop.
func stopHoldingFirstLock(path string) {
	f, err := os.OpenFile(path+"-queue", os.O_RDWR, 0)
	if err != nil {
		panic(err)
	}
	const fOFDSetLk = 37
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Start: 0, Len: 1}
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), fOFDSetLk, uintptr(unsafe.Pointer(&lk))); errno != 0 {
		panic(errno)
	}
	os.Stdout.WriteString("locked\n")
	syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	select {}
}

// writeFile writes body to name with mode perm, whatever the umask.
func writeFile(t *testing.T, name, body string, perm os.FileMode) {
	t.Helper()
	if err := os.WriteFile(name, []byte(body), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, perm); err != nil {
		t.Fatal(err)
	}
}

// describeFile is what a test needs to see a file unchanged: its type,
// mode, owner, links, size and contents.
func describeFile(t *testing.T, name string) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(name, &st); err != nil {
		t.Fatal(err)
	}
	body := ""
	if st.Mode&syscall.S_IFMT == syscall.S_IFREG {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		body = string(b)
	}
	return strings.Join([]string{"mode " + strconv.Itoa(int(st.Mode)), "uid " + strconv.Itoa(int(st.Uid)), "links " + strconv.Itoa(int(st.Nlink)), "size " + strconv.Itoa(int(st.Size)), body}, ", ")
}

// Three processes writing without pause (four goroutines each, always
// with writes waiting) while the queue's file is cut to 0 bytes under
// them, or deleted: none ends or fails a write, every acknowledged row is
// in the file, and each says what became of its queue (off, cut short;
// or on, with the file at the path).
func TestQueueFileChangedUnderProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, c := range []struct {
		name, queue string
		change      func(queue string) error
	}{
		{"cut short", "cut short", func(q string) error { return os.Truncate(q, 0) }},
		{"deleted", "on", os.Remove},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "changed.db")
			db := openMore(t, path, nil)
			mustExec(t, db, `CREATE TABLE w (id INTEGER PRIMARY KEY, name TEXT NOT NULL, body BLOB NOT NULL)`)
			const procs = 3
			reports := make([]queueReport, procs)
			var wg sync.WaitGroup
			for i := range procs {
				wg.Go(func() {
					out, err := runQueueChild(t, path, fmt.Sprintf("share p%d", i))
					if err != nil {
						t.Errorf("writer p%d: %v\n%s", i, err, out)
						return
					}
					if err := json.Unmarshal([]byte(lastLine(out)), &reports[i]); err != nil {
						t.Errorf("writer p%d printed %q: %v", i, out, err)
					}
				})
			}
			// Once each has written (so each has the file mapped), change it.
			waitFor(t, "every writer to commit", func() bool {
				return queryInt(t, db, `SELECT count(DISTINCT name) FROM w`) == procs
			})
			if err := c.change(path + "-queue"); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if t.Failed() {
				return
			}
			for _, r := range reports {
				if n := queryInt(t, db, `SELECT count(*) FROM w WHERE name = ?`, r.Name); n != r.Commits {
					t.Errorf("%s: %d rows in the file, %d commits acknowledged", r.Name, n, r.Commits)
				}
				if !strings.Contains(r.Queue, c.queue) {
					t.Errorf("%s: Queue = %q, want it to say %q", r.Name, r.Queue, c.queue)
				}
			}
			t.Logf("%+v", reports)
		})
	}
}
