//go:build cgo && linux

package sqlitedb

import (
	"errors"
	"fmt"
	"math"
	"os"
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
type processQueue struct {
	path string
	f    *os.File
	fd   uintptr
	mem  []byte // the file's header, mapped shared
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
)

// errQueueUnavailable wraps why a database has no process queue;
// errQueueRemote, that its file system is not one for it (said in Stats,
// not logged: the file is where its owner put it).
var (
	errQueueUnavailable = errors.New("no queue across processes")
	errQueueRemote      = fmt.Errorf("%w", errQueueUnavailable)
)

// openProcessQueue opens (creating it if needed) the queue of the
// database at dbPath. The file gets the database file's permissions and,
// when the process runs as root, its owner, as SQLite does its -wal and
// -shm, so every process that may write the database may queue.
func openProcessQueue(dbPath string) (_ *processQueue, err error) {
	path := dbPath + queueSuffix
	fi, err := os.Stat(dbPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errQueueUnavailable, err)
	}
	if name := remoteFileSystem(dbPath); name != "" {
		return nil, fmt.Errorf("%w: %s is on a %s file system, whose shared memory maps and locks the queue cannot count on", errQueueRemote, dbPath, name)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fi.Mode().Perm())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errQueueUnavailable, err)
	}
	q := &processQueue{path: path, f: f, fd: f.Fd()}
	defer func() {
		if err != nil {
			q.close()
			err = fmt.Errorf("%w: %s: %v", errQueueUnavailable, path, err)
		}
	}()
	// Set it up under byte 0's lock, which every process takes first.
	if err := q.lock(syscall.F_WRLCK, 0, true); err != nil {
		return nil, err
	}
	defer q.lock(syscall.F_UNLCK, 0, false)
	own, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if own.Size() == 0 {
		// The umask may have taken bits the database file has.
		if err := f.Chmod(fi.Mode().Perm()); err != nil {
			return nil, err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
			if err := f.Chown(int(st.Uid), int(st.Gid)); err != nil {
				return nil, err
			}
		}
	}
	if own.Size() < queueFileSize {
		if err := f.Truncate(queueFileSize); err != nil {
			return nil, err
		}
	}
	if q.mem, err = syscall.Mmap(int(q.fd), 0, queueFileSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	switch magic := atomic.LoadUint32(q.word(queueMagicAt)); magic {
	case 0:
		atomic.StoreUint64(q.next(), 1)
		atomic.StoreUint32(q.word(queueMagicAt), queueMagic)
	case queueMagic:
	default:
		return nil, fmt.Errorf("not a queue file (it starts with %#x)", magic)
	}
	return q, nil
}

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

func (q *processQueue) word(at int) *uint32 { return (*uint32)(unsafe.Pointer(&q.mem[at])) }

// slot is ticket t's wake word and count of sleepers.
func (q *processQueue) slot(t int64) (wake, sleepers *uint32) {
	at := queueSlotsAt + 8*int(t%queueSlots)
	return q.word(at), q.word(at + 4)
}

// next is the header's next ticket.
func (q *processQueue) next() *uint64 { return (*uint64)(unsafe.Pointer(&q.mem[queueNextAt])) }

// take hands out the next ticket, its byte locked by this process. Byte
// 0's lock is held for a few system calls; take waits for it up to
// within, so that a process stopped while it held it (SIGSTOP, a
// debugger) cannot hold a writer up for longer.
func (q *processQueue) take(within time.Duration) (int64, error) {
	for deadline := time.Now().Add(within); ; {
		err := q.lock(syscall.F_WRLCK, 0, false)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EACCES) || time.Now().After(deadline) {
			return 0, fmt.Errorf("queue: take a ticket: %w", err)
		}
		time.Sleep(50 * time.Microsecond)
	}
	defer q.lock(syscall.F_UNLCK, 0, false)
	t := int64(atomic.LoadUint64(q.next()))
	for {
		err := q.lock(syscall.F_WRLCK, t, false)
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

// waitingAfter reports whether a ticket after t has been handed out: a
// process waits for the turn (or gave its place up since).
func (q *processQueue) waitingAfter(t int64) bool {
	return int64(atomic.LoadUint64(q.next())) > t+1
}

// errTurnNotYet: the turn did not come before the wait's deadline.
var errTurnNotYet = errors.New("the turn did not come")

// wait returns once ticket t has the turn: no earlier ticket is held. It
// gives up at deadline (errTurnNotYet) or when done is closed
// (errTurnGivenUp). It reports whether it had to wait at all.
func (q *processQueue) wait(t int64, deadline time.Time, done <-chan struct{}) (waited bool, err error) {
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

// errTurnGivenUp: the waiter's caller left before the turn came.
var errTurnGivenUp = errors.New("gave up the turn")

// freeBelow reports whether no ticket below t is held by another open
// file description: one F_OFD_GETLK over them all.
func (q *processQueue) freeBelow(t int64) (bool, error) {
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
	q.lock(syscall.F_UNLCK, t, false)
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
func (q *processQueue) held(u int64) (bool, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: u, Len: 1}
	if err := q.fcntl(fOFDGetLk, &lk); err != nil {
		return false, err
	}
	return lk.Type != syscall.F_UNLCK, nil
}

// close unmaps the file and closes it, which drops this process's locks.
// The file stays: other processes may be using it.
func (q *processQueue) close() {
	if q.mem != nil {
		syscall.Munmap(q.mem)
		q.mem = nil
	}
	q.f.Close()
}

// Linux's open-file-description locks: owned by the open file, not the
// process, so two DBs of one process on one file queue like two
// processes, and closing another descriptor of the file drops nothing.
const (
	fOFDGetLk  = 36
	fOFDSetLk  = 37
	fOFDSetLkW = 38
)

// lock sets (F_WRLCK) or clears (F_UNLCK) the lock of byte b, waiting for
// it if block.
func (q *processQueue) lock(typ int16, b int64, block bool) error {
	cmd := fOFDSetLk
	if block {
		cmd = fOFDSetLkW
	}
	lk := syscall.Flock_t{Type: typ, Whence: 0, Start: b, Len: 1}
	for {
		err := q.fcntl(cmd, &lk)
		if err != syscall.EINTR {
			return err
		}
	}
}

func (q *processQueue) fcntl(cmd int, lk *syscall.Flock_t) error {
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
