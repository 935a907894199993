//go:build cgo

package sqlitedb

/*
#include "capi.h"

// lite_sync_main flushes the main database file to disk, as SQLite does
// after a checkpoint that copied the whole WAL (xSync of the connection's
// own file object; the connection must be idle and used by one thread).
static int lite_sync_main(sqlite3 *db) {
	sqlite3_file *f = 0;
	int rc = lite_main_file(db, &f);
	if (rc != LITE_OK) return rc;
	return f->pMethods->xSync(f, LITE_SYNC_NORMAL);
}

// lite_wal_backlog reads, from the connection's WAL index, the WAL's size
// in frames (mxFrame, in the first copy of the index's header: byte 16 of
// the -shm file) and how many of them checkpoints, of any connection of
// any process, have copied into the database file (nBackfill, byte 96) or
// are copying now (nBackfillAttempted, byte 128: where the last checkpoint
// that started meant to reach; SQLite sets both back to zero when the WAL
// starts over). It takes no lock: the numbers may be a moment old, or from
// either side of the WAL starting over, so they are a hint, not a fact. It
// answers LITE_ERROR when the connection has no WAL index mapped, or its
// header is not one of the version this code reads (3007000),
// initialised. The connection must be idle and used by one thread, with
// the WAL index open (it has checkpointed).
static int lite_wal_backlog(sqlite3 *db, uint32_t *log, uint32_t *copied, uint32_t *copying) {
	sqlite3_file *f = 0;
	volatile void *index = 0;
	int rc = lite_wal_index(db, &f, &index);
	if (rc != LITE_OK) return rc;
	const char *h = (const char *)index;
	if (__atomic_load_n((const uint32_t *)h, __ATOMIC_ACQUIRE) != 3007000) return LITE_ERROR;
	if (__atomic_load_n((const uint8_t *)(h + 12), __ATOMIC_ACQUIRE) == 0) return LITE_ERROR;
	*log = __atomic_load_n((const uint32_t *)(h + 16), __ATOMIC_ACQUIRE);
	*copied = __atomic_load_n((const uint32_t *)(h + 96), __ATOMIC_ACQUIRE);
	*copying = __atomic_load_n((const uint32_t *)(h + 128), __ATOMIC_ACQUIRE);
	return LITE_OK;
}

*/
import "C"

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// checkpointer copies the WAL back into the database file from its own
// goroutine and connection, so no writer waits for it.
//
// By default SQLite checkpoints inside the COMMIT that takes the WAL past
// wal_autocheckpoint pages: it copies the pages into the database file and,
// with synchronous=NORMAL, fsyncs both files, all while holding the write
// lock, so every writer queued behind that commit waits too. Here the
// write connection's WAL hook
// (watchWAL, which also turns those automatic checkpoints off)
// tells the writer the WAL's size after each commit, and the writer only
// signals this goroutine, which runs a PASSIVE checkpoint on a connection
// of its own: it needs no write lock, so writers go on appending meanwhile,
// and the first writer after a complete checkpoint starts the WAL over
// from its beginning, as after an automatic one.
//
// A checkpoint from another connection never catches up with a busy
// writer, so the writer itself copies the last few frames (the finishing
// step, see committed), and that step, like SQLite's own, fsyncs the WAL
// and the database file while every writer waits. Its cost is the fsyncs,
// not the frames, and it grows with the database, over which the pages it
// copied are scattered (the CHANGELOG has the figures). So the background
// does all it can
// before it (catchUp: passes until few frames are left, each pass's pages
// flushed as it goes), and the writer takes the step only once the WAL
// holds walFinishFrames frames, forty background checkpoints, not after
// each one.
//
// Two bounds keep the WAL from growing without end when the checkpointer
// cannot keep up or readers never pause (SQLite starts the WAL over only
// when no reader is still reading from it, and with readers always active
// some always are): past walHardLimit frames the writer runs a RESTART
// checkpoint itself, which waits up to restartWait for the readers of older
// snapshots to finish — milliseconds, as new readers start on the newest
// snapshot and do not hold it up — so the next commit starts the WAL over;
// and once writes stop for checkpointIdle, the checkpointer truncates the
// WAL to zero bytes (TRUNCATE), so a quiet database is one file again.
type checkpointer struct {
	conn      *sql.DB // the checkpointer's own connection
	writeDB   *sql.DB // the writer's, for the checkpoints it runs inline
	closeOnce sync.Once
	wake      chan struct{} // one pending signal at most
	stop      chan struct{}
	done      chan struct{}
	frames    func() int // the WAL's frames after the last commit (writer's goroutine only)
	// finishFrames is walFinishFrames; the package's tests lower it.
	finishFrames atomic.Int64

	lastCommit atomic.Int64 // UnixNano of the last commit the writer reported (0: none yet)
	// copied is the WAL's size in frames when the last checkpoint ended:
	// the frames before it are in the database file already.
	copied atomic.Int64
	// finish is set when a background checkpoint has ended: the writer then
	// copies, inline, the few frames committed while it ran (see committed).
	finish   atomic.Bool
	runs     atomic.Int64 // PASSIVE checkpoints run in the background
	inline   atomic.Int64 // PASSIVE checkpoints the writer ran itself to finish a background one
	restarts atomic.Int64 // RESTART checkpoints the writer ran past walHardLimit
	// mu serializes committed; nextRestart is under it.
	mu sync.Mutex
	// nextRestart is the WAL size in frames below which no RESTART is
	// tried after one that readers held up.
	nextRestart int64
	truncates   atomic.Int64 // TRUNCATE checkpoints when idle
	// copiedElsewhere counts signals that ran no checkpoint: another
	// connection's checkpoint had copied the WAL already, or was copying
	// it.
	copiedElsewhere atomic.Int64
	// stopped is set when a sync of the database file failed: from then on
	// no checkpoint of this DB runs (see failStop).
	stopped *failStop
	errors  atomic.Int64 // checkpoints that failed (retried on the next signal)
}

const (
	// walCheckpointFrames is when a commit wakes the checkpointer: SQLite's
	// own default for wal_autocheckpoint, in pages.
	walCheckpointFrames = 1000
	// walHardLimit is when the writer checkpoints itself: ~235 MiB,
	// reached only if the checkpointer falls far behind.
	walHardLimit = 60 * walCheckpointFrames
	// checkpointIdle is how long writes must have stopped before the WAL
	// is truncated.
	checkpointIdle = 2 * time.Second
	// restartWait bounds how long a RESTART checkpoint past walHardLimit
	// waits for readers of older snapshots; if they take longer, the next
	// commit tries again.
	restartWait = 20 * time.Millisecond
	// catchUpFrames: the background catches up until a pass copies no
	// more than this, and leaves the rest to the writer's finishing step.
	catchUpFrames = 100
	// maxPasses bounds one catch-up, for a writer that commits faster
	// than the checkpointer copies.
	maxPasses = 8
)

// walFinishFrames is the WAL's size from which the writer takes the
// finishing step after a background checkpoint: ~157 MiB of 4 KiB pages,
// below journal_size_limit's default here (256 MiB), so the WAL file is
// reused as it is when it starts over, never cut and grown again.
const walFinishFrames = 40 * walCheckpointFrames

func newCheckpointer(conn, writeDB *sql.DB, frames func() int, stopped *failStop) *checkpointer {
	c := &checkpointer{conn: conn, writeDB: writeDB, frames: frames, stopped: stopped, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	c.finishFrames.Store(walFinishFrames)
	go c.run()
	return c
}

// committed is called by the writer after each commit,
// with its connection back in the pool. It costs a read of the WAL hook's
// counter, and, now and then:
//
//   - when the WAL has grown walCheckpointFrames past what was last copied,
//     it wakes the checkpointer;
//   - at the first commit after a background checkpoint ended, if the WAL
//     holds walFinishFrames, it runs one more PASSIVE checkpoint itself,
//     which copies only the frames committed since. A checkpoint from another
//     connection never catches up with a busy writer, and SQLite starts
//     the WAL over from its beginning only once every frame is copied;
//     without this step the WAL would grow until walHardLimit;
//   - past walHardLimit, it runs a RESTART checkpoint inline, whatever
//     the checkpointer is doing.
func (c *checkpointer) committed() {
	// Only the writer goroutine commits, so the lock is never contended;
	// it keeps nextRestart and the inline checkpoints to one caller.
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastCommit.Store(time.Now().UnixNano())
	if c.stopped.err() != nil {
		return
	}
	n := int64(c.frames())
	copied := c.copied.Load()
	if n < copied { // the WAL started over since
		c.copied.Store(0)
		c.nextRestart = 0
		copied = 0
	}
	switch {
	case n >= walHardLimit && n >= c.nextRestart:
		c.finish.Store(false)
		c.restarts.Add(1)
		if !c.restart() {
			// Readers held on: try again a checkpoint's worth of frames
			// later, not at the next commit.
			c.nextRestart = n + walCheckpointFrames
		}
	case c.finish.Swap(false) && n >= c.finishFrames.Load():
		// Right after a background catch-up, not at any later commit:
		// then only the frames of its last moments are left to copy.
		c.inline.Add(1)
		c.checkpointOn(context.Background(), c.writeDB, "PASSIVE")
	case n-copied >= walCheckpointFrames:
		select {
		case c.wake <- struct{}{}:
		default: // a signal is pending already
		}
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	idle := time.NewTicker(checkpointIdle / 2)
	defer idle.Stop()
	var truncatedAt int64 // the last commit before the last TRUNCATE
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
			if c.stopped.err() != nil {
				continue
			}
			if c.runs.Load() > 0 && c.copiedAlready(false) {
				c.copiedElsewhere.Add(1)
				continue
			}
			if !c.catchUp() {
				// Another connection held the checkpoint lock: its
				// checkpoint copies the WAL as it is now.
				c.copiedAlready(true)
				c.copiedElsewhere.Add(1)
				continue
			}
			c.runs.Add(1)
			// A signal sent while this checkpoint ran is for frames it
			// copied, or that the writer's finishing step will: answering
			// it would start another checkpoint at once, and the writer's
			// would find the checkpoint lock taken and copy nothing.
			select {
			case <-c.wake:
			default:
			}
			c.finish.Store(true)
		case <-idle.C:
			last := c.lastCommit.Load()
			if last != truncatedAt && time.Since(time.Unix(0, last)) >= checkpointIdle && c.stopped.err() == nil {
				c.checkpoint("TRUNCATE")
				c.truncates.Add(1)
				truncatedAt = last
			}
		}
	}
}

// catchUp copies the WAL into the database file in passes, each copying
// what was committed while the one before ran, until a pass copies at
// most catchUpFrames frames (or maxPasses have run), and flushes each
// pass's pages to disk as it goes. The writer's finishing step (see
// committed) then has only the frames of that last short pass's time to
// copy, and only their pages to flush: on a large database, where a
// thousand frames are a thousand pages scattered over the file, a single
// pass left the writer hundreds of frames and every page the pass had
// written to flush (the fsync at the end of a complete checkpoint), and
// every commit waited for that.
//
// A pass that copies everything ends it: SQLite flushed the file itself.
// It returns false when its first pass could not run because another
// connection, of this process or another, was checkpointing.
func (c *checkpointer) catchUp() (ran bool) {
	prev := c.copied.Load()
	for i := range maxPasses {
		log, copied, ok := c.checkpoint("PASSIVE")
		if !ok {
			return i > 0 || log != -1
		}
		if copied == log {
			return true
		}
		if !c.sync() {
			return true
		}
		n := copied - prev
		prev = copied
		if n <= catchUpFrames {
			return true
		}
	}
	return true
}

// copiedAlready reports whether another process's checkpoint has copied
// the WAL since this one's last, or is copying it now, to within
// walCheckpointFrames of its end: the signal, sent because this process's
// writer counted that many frames since its own last checkpoint, needs
// none then. Each process using the file has a checkpointer, and each
// counts from its own checkpoints, so without this look at what every
// process's checkpoints did, n processes that write would copy the WAL n
// times as often, each time flushing the database file, for the same
// frames. It notes how far the WAL is copied, so the writer's next signal
// comes walCheckpointFrames after that. With copying (another
// connection's checkpoint has just been found running), it notes the
// WAL's whole size as copied, which that checkpoint is copying.
//
// It reads the WAL index of the checkpointer's connection, which has
// checkpointed before, or just tried to (the caller makes sure): a
// PRAGMA wal_checkpoint opens the WAL and reads its index before it asks
// for the checkpoint lock, so the connection has the index open. If
// the index cannot be read, or the numbers do not fit together (read as
// the WAL started over), it answers false, and the checkpoint runs, as it
// did before the look.
func (c *checkpointer) copiedAlready(copying bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := c.conn.Conn(ctx)
	if err != nil {
		return false
	}
	defer conn.Close()
	var log, copied, attempted C.uint32_t
	err = onOwnConn(conn, "copiedAlready", func(dc *driverConn) error {
		if rc := C.lite_wal_backlog(dc.handle, &log, &copied, &attempted); rc != C.LITE_OK {
			return &Error{Code: int(rc), Message: "read the WAL index"}
		}
		return nil
	})
	if attempted <= log {
		copied = max(copied, attempted)
	}
	if copying && copied <= log {
		copied = log
	}
	if err != nil || copied > log || int64(log-copied) >= walCheckpointFrames {
		return false
	}
	c.copied.Store(int64(copied))
	return true
}

// sync flushes the database file from the checkpointer's connection and
// reports whether it did. A failure stops every checkpoint of the DB (see
// failStop).
func (c *checkpointer) sync() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := c.conn.Conn(ctx)
	if err == nil {
		err = syncMain(conn)
		conn.Close()
	}
	if err != nil {
		c.errors.Add(1)
		c.stopped.set(err, c.conn)
		return false
	}
	return true
}

// failed counts a checkpoint that failed with err, and stops every
// checkpoint if a sync failed in it.
func (c *checkpointer) failed(err error, on *sql.DB) {
	c.errors.Add(1)
	if isSyncError(err) {
		c.stopped.set(err, on)
	}
}

func (c *checkpointer) checkpoint(mode string) (log, copied int64, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.checkpointOn(ctx, c.conn, mode)
}

// checkpointOn runs a checkpoint on db's connection and notes how far the
// WAL is copied. It reports the WAL's size and how much of it is copied,
// in frames, and whether the checkpoint ran; when it did not because
// another connection was checkpointing, both sizes are -1.
func (c *checkpointer) checkpointOn(ctx context.Context, db *sql.DB, mode string) (log, copied int64, ok bool) {
	// busy is 1 when a reader's snapshot kept some frames from being
	// copied: not a failure, copied says how far it got.
	var busy int64
	if c.stopped.err() != nil {
		return 0, 0, false
	}
	if err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &log, &copied); err != nil {
		c.failed(err, db)
		return 0, 0, false
	}
	if copied < 0 {
		// -1: the checkpoint could not run at all (another connection
		// was checkpointing); how far the WAL is copied is unchanged.
		return -1, -1, false
	}
	c.copied.Store(copied)
	return log, copied, true
}

// restart runs a RESTART checkpoint on the write connection, with SQLite's
// busy handler waiting up to restartWait for readers of older snapshots,
// and reports whether it completed (the next commit starts the WAL over).
func (c *checkpointer) restart() bool {
	done, err := c.restartOn(context.Background())
	if err != nil {
		// With the connection back in the pool: a failed sync takes one.
		c.failed(err, c.writeDB)
	}
	return done
}

// restartOn is restart on a connection of its own, which it gives back
// before it returns; it returns a failed checkpoint's error.
func (c *checkpointer) restartOn(ctx context.Context) (done bool, err error) {
	conn, err := c.writeDB.Conn(ctx)
	if err != nil {
		c.errors.Add(1)
		return false, nil
	}
	defer conn.Close()
	var was int64
	if err := conn.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&was); err != nil {
		c.errors.Add(1)
		return false, nil
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, restartWait.Milliseconds())); err != nil {
		c.errors.Add(1)
		return false, nil
	}
	defer conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, was))
	var busy, log, copied int64
	if err := conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(RESTART)`).Scan(&busy, &log, &copied); err != nil {
		return false, err
	}
	if copied >= 0 {
		c.copied.Store(copied)
	}
	return busy == 0, nil
}

// close stops the checkpointer and closes its connection; a checkpoint in
// progress finishes first. Calls after the first return nil.
func (c *checkpointer) close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.stop)
		<-c.done
		err = c.conn.Close()
	})
	return err
}

// syncMain flushes the database file of conn's connection to disk, as
// SQLite does at the end of a checkpoint that copied the whole WAL.
func syncMain(conn *sql.Conn) error {
	return onOwnConn(conn, "syncMain", func(c *driverConn) error {
		if rc := C.lite_sync_main(c.handle); rc != C.LITE_OK {
			return &Error{Code: int(rc), Message: "sync the database file"}
		}
		return nil
	})
}
