//go:build cgo && linux

package sqlitedb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// processQueue hands out the write turns of every process using this
// package on one database file, in arrival order. SQLite's own write lock
// stays what correctness rests on: a holder of the turn still begins with
// BEGIN IMMEDIATE, and a program that never uses the queue (the sqlite3
// shell, Litestream, another library) only makes the holder poll for the
// lock as it would without a queue. The queue only decides which of the
// package's processes asks for the lock next, so that none waits while
// others overtake it, and none sleeps while the lock is free.
//
// How: a small file beside the database (the database's path plus
// queueSuffix) holds a ticket counter and a wake word, mapped shared by
// each process, and open-file-description locks (F_OFD_SETLK) on it, one
// byte per ticket. A process takes ticket t by locking byte t, under the
// lock of byte 0 so that tickets and their locks are handed out together;
// it has the turn once no byte below t is locked by another: every earlier
// ticket has been released, given up, or its process has ended — the
// kernel drops the locks of a process however it ends, kill -9 included.
// Each ticket sleeps (futex(2)) on a wake word of its own, one of
// queueSlots taken in turn; releasing unlocks byte t and wakes the next
// ticket's word alone (and the one after, while the next was given up),
// so one process, the next in line, wakes per turn. Waiters also look
// again every queueRecheck, since a process that was killed wakes no one.
//
// The processQueue is the writer goroutine's alone, once opened.
type processQueue struct {
	path     string // the queue's file: the database file's real path and queueSuffix
	perm     uint32 // the database file's permission bits
	uid, gid int    // the database file's owner (-1: unknown)
	queueFile
	// off, once set, says why the queue turned itself off (see check and
	// guarded): every later take fails with it, and the writer polls.
	off error
}

// queueFile is the queue's open file.
type queueFile struct {
	f        *os.File
	fd       uintptr
	mem      []byte // the file, mapped shared
	dev, ino uint64 // which file it is, to notice it deleted or replaced
}

const (
	// queueSuffix names the queue's file: app.db-queue beside app.db.
	queueSuffix = "-queue"
	// queueMagic marks an initialised queue file ("sqdq").
	queueMagic = 0x71647173
	// The header's fields, by offset: the magic (uint32), the next ticket
	// (uint64); then queueSlots slots of a wake word (uint32, futex) and
	// the number of processes sleeping on it (uint32).
	queueMagicAt  = 0
	queueNextAt   = 8
	queueSlotsAt  = 64
	queueSlots    = 64
	queueFileSize = queueSlotsAt + 8*queueSlots
	// queueRecheck bounds how long a waiter sleeps before it looks again,
	// so that a holder killed with -9, which wakes no one, holds the
	// others up at most this long.
	queueRecheck = 5 * time.Millisecond
	// queueLockWait bounds a writer's wait for byte 0's lock, which a
	// process holds for a few system calls: one stopped while it held it
	// (SIGSTOP, a debugger) costs each write at most this long, after
	// which the write goes on without a turn.
	queueLockWait = 100 * time.Millisecond
)

// errQueueUnavailable wraps why a database has no process queue;
// errQueueRemote, that its file system is not one for it (said in Stats,
// not logged: the file is where its owner put it); errQueueOff, that a
// queue that was on turned itself off (its file was cut short,
// overwritten, or deleted and its path made unusable).
var (
	errQueueUnavailable = errors.New("no queue across processes")
	errQueueRemote      = fmt.Errorf("%w", errQueueUnavailable)
	errQueueOff         = fmt.Errorf("%w", errQueueUnavailable)
)

// openProcessQueue opens the queue of the database at dbPath, creating its
// file if needed, waiting for the lock that guards its set-up up to within
// or until ctx ends.
//
// The file is handled as SQLite handles its -shm: it is beside the
// database file's real path (symbolic links to the database resolved, so
// that every path to one file finds one queue); opened without following
// a symbolic link at its own name; given the database file's permissions
// and, when the process runs as root, its owner only if this very call
// created it (O_EXCL); accepted only as a regular file with one link, of
// the database's owner (or this process's user) and of a queue's size;
// and its pages are written before they are mapped, so that a full disk
// is an error here and not a fault later.
func openProcessQueue(ctx context.Context, dbPath string, within time.Duration) (*processQueue, error) {
	real, err := filepath.EvalSymlinks(dbPath)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errQueueUnavailable, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errQueueUnavailable, err)
	}
	if name := remoteFileSystem(real); name != "" {
		return nil, fmt.Errorf("%w: %s is on a %s file system, whose shared memory maps and locks the queue cannot count on", errQueueRemote, real, name)
	}
	q := &processQueue{path: real + queueSuffix, perm: uint32(fi.Mode().Perm()), uid: -1, gid: -1}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		q.uid, q.gid = int(st.Uid), int(st.Gid)
	}
	if q.queueFile, err = q.openFile(ctx, within); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", errQueueUnavailable, q.path, err)
	}
	return q, nil
}

// openFile opens, checks and if empty initialises the queue's file (see
// openProcessQueue).
func (q *processQueue) openFile(ctx context.Context, within time.Duration) (_ queueFile, err error) {
	const flags = syscall.O_RDWR | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	fd, err := syscall.Open(q.path, flags|syscall.O_CREAT|syscall.O_EXCL, q.perm)
	created := err == nil
	if errors.Is(err, syscall.EEXIST) {
		fd, err = syscall.Open(q.path, flags|syscall.O_NONBLOCK, 0)
	}
	if errors.Is(err, syscall.ELOOP) {
		return queueFile{}, errors.New("it is a symbolic link, which the queue never follows")
	}
	if err != nil {
		return queueFile{}, err
	}
	qf := queueFile{f: os.NewFile(uintptr(fd), q.path), fd: uintptr(fd)}
	defer func() {
		if err != nil {
			qf.close()
		}
	}()
	if created {
		// The umask may have taken bits the database file has; the owner
		// is the database's, as SQLite gives its -shm when run as root.
		// Safe only because this call created the file.
		if err := syscall.Fchmod(fd, q.perm); err != nil {
			return queueFile{}, err
		}
		if os.Geteuid() == 0 && q.uid >= 0 {
			if err := syscall.Fchown(fd, q.uid, q.gid); err != nil {
				return queueFile{}, err
			}
		}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return queueFile{}, err
	}
	if err := q.accept(&st); err != nil {
		return queueFile{}, err
	}
	qf.dev, qf.ino = st.Dev, st.Ino
	// Set it up under byte 0's lock, which every process takes first.
	if err := qf.lockWithin(ctx, 0, within); err != nil {
		return queueFile{}, err
	}
	defer qf.lock(syscall.F_UNLCK, 0)
	if err := syscall.Fstat(fd, &st); err != nil {
		return queueFile{}, err
	}
	var header [queueFileSize]byte
	switch st.Size {
	case 0:
		// Written, not grown with a hole: the file system allocates its
		// pages now, and a full disk fails this write, not a page fault.
		binary.LittleEndian.PutUint32(header[queueMagicAt:], queueMagic)
		binary.LittleEndian.PutUint64(header[queueNextAt:], 1)
		if _, err := qf.f.WriteAt(header[:], 0); err != nil {
			return queueFile{}, fmt.Errorf("write its header: %w", err)
		}
	case queueFileSize:
		if _, err := qf.f.ReadAt(header[:], 0); err != nil {
			return queueFile{}, fmt.Errorf("read its header: %w", err)
		}
		if magic := binary.LittleEndian.Uint32(header[queueMagicAt:]); magic != queueMagic {
			return queueFile{}, fmt.Errorf("not a queue file (it starts with %#x)", magic)
		}
	default:
		return queueFile{}, fmt.Errorf("it has %d bytes, not a queue's %d", st.Size, queueFileSize)
	}
	if qf.mem, err = syscall.Mmap(fd, 0, queueFileSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); err != nil {
		return queueFile{}, fmt.Errorf("mmap: %w", err)
	}
	return qf, nil
}

// accept refuses a queue file that is not one the package would have
// made: not a regular file, with other names (a hard link planted at the
// queue's name), of another owner than the database's or this process's
// user, or of another size than a queue's (or empty, before its set-up).
func (q *processQueue) accept(st *syscall.Stat_t) error {
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return fmt.Errorf("it is not a regular file (mode %#o)", st.Mode)
	case st.Nlink != 1:
		return fmt.Errorf("it has %d links, want 1", st.Nlink)
	case int(st.Uid) != q.uid && int(st.Uid) != os.Geteuid():
		return fmt.Errorf("it is owned by uid %d, neither the database's owner (%d) nor this process's user", st.Uid, q.uid)
	case st.Size != 0 && st.Size != queueFileSize:
		return fmt.Errorf("it has %d bytes, not a queue's %d", st.Size, queueFileSize)
	}
	return nil
}

// check runs before each ticket is taken, outside any turn. A queue file
// deleted or replaced while the process runs is noticed here and the one
// now at the path opened instead (created if it is missing), so that this
// process queues with the processes that open the database from now on;
// a file cut short or overwritten turns the queue off (errQueueOff).
func (q *processQueue) check(within time.Duration) error {
	if q.off != nil {
		return q.off
	}
	if q.replaced() {
		qf, err := q.openFile(context.Background(), within)
		if err != nil {
			return q.turnOff(fmt.Errorf("its file %s was deleted or replaced, and the one at its path now cannot be used: %v", q.path, err))
		}
		q.queueFile.close()
		q.queueFile = qf
		slog.Info("sqlitedb: the queue's file was deleted or replaced while in use; the writers queue in the one at its path now", "path", q.path)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(q.fd), &st); err != nil {
		return q.turnOff(fmt.Errorf("its file %s: %v", q.path, err))
	}
	if st.Size < queueFileSize {
		return q.turnOff(fmt.Errorf("its file %s was cut short to %d bytes while in use", q.path, st.Size))
	}
	return nil
}

// replaced reports whether the queue's file at its path is no longer the
// one this process has open (deleted, or replaced by another): a turn
// held in the old file orders nothing against the processes that queue
// in the new one, so the holder ends it and takes a ticket in the new one
// (check opens it).
func (q *processQueue) replaced() bool {
	var st syscall.Stat_t
	err := syscall.Lstat(q.path, &st)
	return errors.Is(err, syscall.ENOENT) || err == nil && (st.Dev != q.dev || st.Ino != q.ino)
}

// turnOff turns the queue off for good, for why, and returns the error
// that says so (errQueueOff).
func (q *processQueue) turnOff(why error) error {
	if q.off == nil {
		q.off = fmt.Errorf("%w: %v", errQueueOff, why)
	}
	return q.off
}

// guarded is deferred, with the value guard returned, by every method
// that reads or writes the map: a fault on it (a page past the end of a
// file cut short raises SIGBUS) becomes the method's error and turns the
// queue off, instead of ending the process.
//
//	defer q.guarded(guard(), &err)
func (q *processQueue) guarded(old bool, err *error) {
	debug.SetPanicOnFault(old)
	if r := recover(); r != nil {
		f, ok := r.(interface{ Addr() uintptr })
		if !ok {
			panic(r)
		}
		e := q.turnOff(fmt.Errorf("a page of its file's map faulted at %#x: the file %s was cut short while in use", f.Addr(), q.path))
		if err != nil {
			*err = e
		}
	}
}

// guard makes a fault on memory a panic that guarded recovers from, and
// returns what it was before.
func guard() bool { return debug.SetPanicOnFault(true) }

// remoteFileSystem names the file system the file at path is on if it
// is one whose pages and locks live elsewhere: a network file system, or
// FUSE, whose server is a program (perhaps this very one: a page fault
// on the queue's map would then wait for a goroutine that cannot run).
// SQLite's WAL mode is not meant for those either. "" for the others.
func remoteFileSystem(path string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return ""
	}
	switch uint32(st.Type) {
	case 0x65735546:
		return "FUSE"
	case 0x6969:
		return "NFS"
	case 0x517b, 0xff534d42, 0xfe534d42:
		return "SMB"
	case 0x01021997:
		return "9P"
	case 0x00c36400:
		return "Ceph"
	case 0x5346414f:
		return "AFS"
	case 0x0bd00bd0:
		return "Lustre"
	case 0x01161970:
		return "GFS2"
	case 0x7461636f:
		return "OCFS2"
	}
	return ""
}

func (q *queueFile) word(at int) *uint32 { return (*uint32)(unsafe.Pointer(&q.mem[at])) }

// slot is ticket t's wake word and count of sleepers.
func (q *queueFile) slot(t int64) (wake, sleepers *uint32) {
	at := queueSlotsAt + 8*int(t%queueSlots)
	return q.word(at), q.word(at + 4)
}

// next is the header's next ticket.
func (q *queueFile) next() *uint64 { return (*uint64)(unsafe.Pointer(&q.mem[queueNextAt])) }

// take hands out the next ticket, its byte locked by this process. Byte
// 0's lock is held for a few system calls; take waits for it up to
// within, so that a process stopped while it held it (SIGSTOP, a
// debugger) cannot hold a writer up for longer. An error that wraps
// errQueueOff says the queue is off for good.
func (q *processQueue) take(within time.Duration) (t int64, err error) {
	if err := q.check(within); err != nil {
		return 0, err
	}
	defer q.guarded(guard(), &err)
	if err := q.lockWithin(context.Background(), 0, within); err != nil {
		return 0, fmt.Errorf("queue: take a ticket: %w", err)
	}
	defer q.lock(syscall.F_UNLCK, 0)
	if magic := atomic.LoadUint32(q.word(queueMagicAt)); magic != queueMagic {
		return 0, q.turnOff(fmt.Errorf("its file %s was overwritten while in use (it starts with %#x)", q.path, magic))
	}
	t = int64(atomic.LoadUint64(q.next()))
	for {
		err := q.lock(syscall.F_WRLCK, t)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES) {
			return 0, fmt.Errorf("queue: take a ticket: %w", err)
		}
		t++ // held: someone rewrote the counter; the next byte then
	}
	atomic.StoreUint64(q.next(), uint64(t+1))
	return t, nil
}

// lockWithin takes byte b's lock, waiting for it up to within or until
// ctx ends.
func (q *queueFile) lockWithin(ctx context.Context, b int64, within time.Duration) error {
	for deadline := time.Now().Add(within); ; {
		err := q.lock(syscall.F_WRLCK, b)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("another process has held its lock of byte %d for %v (stopped while holding it?)", b, within)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// waitingAfter reports whether a ticket after t has been handed out: a
// process waits for the turn (or gave its place up since).
func (q *processQueue) waitingAfter(t int64) (after bool) {
	defer q.guarded(guard(), nil)
	after = true // if the map faults: hand the turn on
	return int64(atomic.LoadUint64(q.next())) > t+1
}

// wait returns once ticket t has the turn: no earlier ticket is held. It
// gives up at deadline (errTurnNotYet) or when done is closed
// (errTurnGivenUp). It reports whether it had to wait at all.
func (q *processQueue) wait(t int64, deadline time.Time, done <-chan struct{}) (waited bool, err error) {
	defer q.guarded(guard(), &err)
	wake, sleepers := q.slot(t)
	waiting := false
	defer func() {
		if waiting {
			atomic.AddUint32(sleepers, ^uint32(0))
		}
	}()
	for {
		seen := atomic.LoadUint32(wake)
		free, err := q.freeBelow(t)
		if err != nil {
			return waited, fmt.Errorf("queue: %w", err)
		}
		if free {
			return waited, nil
		}
		if !waiting {
			// Counted before looking again, so a release after the look
			// sees a waiter and wakes it (see release).
			waiting, waited = true, true
			atomic.AddUint32(sleepers, 1)
			continue
		}
		select {
		case <-done:
			return waited, errTurnGivenUp
		default:
		}
		left := time.Until(deadline)
		if left <= 0 {
			return waited, errTurnNotYet
		}
		futexWait(wake, seen, min(left, queueRecheck))
	}
}

// freeBelow reports whether no ticket below t is held by another open
// file description: one F_OFD_GETLK over them all.
func (q *queueFile) freeBelow(t int64) (bool, error) {
	if t <= 1 {
		return true, nil
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 1, Len: t - 1}
	if err := q.fcntl(fOFDGetLk, &lk); err != nil {
		return false, err
	}
	return lk.Type == syscall.F_UNLCK, nil
}

// release gives up ticket t (held or still waiting) and wakes the next
// ticket's process, if it sleeps; while the next ticket was given up, the
// one after it too.
func (q *processQueue) release(t int64) {
	defer q.guarded(guard(), nil)
	q.lock(syscall.F_UNLCK, t)
	next := int64(atomic.LoadUint64(q.next()))
	for u := t + 1; u < next && u <= t+queueSlots; u++ {
		// Unlocked before the wake word moves, and the sleepers read
		// after: a waiter that counted itself before this read is woken;
		// one that counted itself after reads the new wake word and
		// looks again.
		wake, sleepers := q.slot(u)
		atomic.AddUint32(wake, 1)
		if atomic.LoadUint32(sleepers) > 0 {
			futexWake(wake)
		}
		if held, err := q.held(u); err != nil || held {
			return
		}
	}
}

// held reports whether another open file description holds ticket u.
func (q *queueFile) held(u int64) (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: u, Len: 1}
	if err := q.fcntl(fOFDGetLk, &lk); err != nil {
		return false, err
	}
	return lk.Type != syscall.F_UNLCK, nil
}

// close unmaps the file and closes it, which drops this process's locks.
// The file stays: other processes may be using it.
func (q *queueFile) close() {
	if q.mem != nil {
		syscall.Munmap(q.mem)
		q.mem = nil
	}
	if q.f != nil {
		q.f.Close()
		q.f = nil
	}
}

// Linux's open-file-description locks: owned by the open file, not the
// process, so two DBs of one process on one file queue like two
// processes, and closing another descriptor of the file drops nothing.
const (
	fOFDGetLk = 36
	fOFDSetLk = 37
)

// lock sets (F_WRLCK) or clears (F_UNLCK) the lock of byte b, without
// waiting for it: a holder may be a process stopped for good, so every
// wait for a lock is bounded (lockWithin).
func (q *queueFile) lock(typ int16, b int64) error {
	lk := syscall.Flock_t{Type: typ, Whence: 0, Start: b, Len: 1}
	for {
		err := q.fcntl(fOFDSetLk, &lk)
		if err != syscall.EINTR {
			return err
		}
	}
}

func (q *queueFile) fcntl(cmd int, lk *syscall.Flock_t) error {
	_, _, errno := syscall.Syscall(syscall.SYS_FCNTL, q.fd, uintptr(cmd), uintptr(unsafe.Pointer(lk)))
	if errno != 0 {
		return errno
	}
	return nil
}

// futexWait sleeps while *addr is val, up to d. The word is in a shared
// mapping, so the futex is not process-private.
func futexWait(addr *uint32, val uint32, d time.Duration) {
	const futexWaitOp = 0
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWaitOp, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWake wakes every process sleeping on addr.
func futexWake(addr *uint32) {
	const futexWakeOp = 1
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWakeOp, math.MaxInt32, 0, 0, 0)
}
