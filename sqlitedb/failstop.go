//go:build cgo

package sqlitedb

/*
#include "capi.h"

// lite_forget_copied sets the WAL index's count of the WAL's frames copied
// into the database file (nBackfill, the first field of its checkpoint
// information, at byte 96 of the -shm file) back to zero, holding the
// checkpoint lock, as SQLite's own recovery of the index does. A reader's
// transaction then looks every page up in the whole WAL, not only in the
// frames after that count, so a page whose copy in the database file was
// lost is read from its frame. It answers LITE_BUSY while another
// connection, of any process, checkpoints. The connection must be idle
// and used by one thread, with the WAL index open (it has read the file).
static int lite_forget_copied(sqlite3 *db) {
	sqlite3_file *f = 0;
	volatile void *index = 0;
	int rc = lite_wal_index(db, &f, &index);
	if (rc != LITE_OK) return rc;
	// WAL_CKPT_LOCK is the WAL index's lock 1.
	rc = f->pMethods->xShmLock(f, 1, 1, LITE_SHM_LOCK | LITE_SHM_EXCLUSIVE);
	if (rc != LITE_OK) return rc;
	__atomic_store_n((uint32_t *)((char *)index + 96), 0, __ATOMIC_SEQ_CST);
	f->pMethods->xShmBarrier(f);
	f->pMethods->xShmLock(f, 1, 1, LITE_SHM_UNLOCK | LITE_SHM_EXCLUSIVE);
	return LITE_OK;
}

*/
import "C"

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
)

// failStop is the first failed sync of a DB's database file, after which
// no checkpoint of the DB may complete, until the database is opened
// again.
//
// Linux reports a failed write-back once to each open descriptor, and may
// drop the pages it could not write: a later fsync returns success although
// they never reached the disk. A checkpoint that completed after that would
// let the WAL start over (or be truncated, or deleted at close) above
// database pages that are not on disk, and the rows in them would be lost
// for good, as PostgreSQL lost data before it made such a failure fatal.
// So once a sync fails, the background checkpoints, the writer's, Close's
// and SQLite's own at close all stop, and the WAL keeps every frame.
//
// Reads and writes go on, and reads do not meet the lost pages: the pages
// the kernel dropped stay in its cache only until it needs the memory, and
// a reader then reads the database file's older bytes. SQLite looks a page
// up only in the WAL's frames after those a checkpoint has marked copied,
// and a checkpoint that could copy only part of the WAL (a reader's
// snapshot held it) marked them before any sync. So the failure also sets
// the WAL index's count of copied frames back to zero, as SQLite's own
// recovery of the index does: every reader, in every process, then finds
// each page written since the last good sync in the WAL. The next open of
// the file, once no other process has it open, rebuilds the WAL's index
// from the file and copies every frame again. Stats, Close and the log say
// so.
type failStop struct {
	path  string
	first atomic.Pointer[error]
	// forgetErrors counts the failures to set the count of copied frames
	// back to zero.
	forgetErrors atomic.Int64
}

// err is the failure, wrapping ErrSyncFailed, or nil.
func (f *failStop) err() error {
	if p := f.first.Load(); p != nil {
		return *p
	}
	return nil
}

// set records a failed sync, the first one in the log, and sets the WAL
// index's count of copied frames back to zero on a connection of pool
// (the one the sync failed on, or any of the DB's): a checkpoint of
// another process may have counted more since the last failure.
func (f *failStop) set(err error, pool *sql.DB) {
	e := fmt.Errorf("%w: %w", ErrSyncFailed, err)
	if f.first.CompareAndSwap(nil, &e) {
		slog.Error("sqlitedb: a sync of the database file failed: checkpoints are stopped and the WAL keeps every frame until the database is opened again",
			"path", f.path, "err", err)
	}
	if ferr := forgetCopied(pool); ferr != nil {
		f.forgetErrors.Add(1)
		slog.Error("sqlitedb: after a failed sync of the database file, the WAL index still counts frames as copied: a read may meet a page the disk lost",
			"path", f.path, "err", ferr)
	}
}

// isSyncError reports whether err says a sync of a file failed.
func isSyncError(err error) bool {
	code := sqlite3.ErrNoExtended(ErrorCode(err))
	return code == sqlite3.ErrIoErrFsync || code == sqlite3.ErrIoErrDirFsync
}

// forgetCopied sets the WAL index's count of frames copied into the
// database file back to zero, on a connection of pool (see
// lite_forget_copied), waiting up to a few seconds for another process's
// checkpoint to end.
func forgetCopied(pool *sql.DB) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// A read first, so the connection has the WAL index open.
	var n int64
	if err := conn.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&n); err != nil {
		return err
	}
	for {
		var rc C.int
		err := onOwnConn(conn, "forgetCopied", func(c *driverConn) error {
			rc = C.lite_forget_copied(c.handle)
			return nil
		})
		switch {
		case err != nil:
			return err
		case rc == C.LITE_OK:
			return nil
		case rc != C.LITE_BUSY:
			return &Error{Code: int(rc), Message: "reset the WAL index's count of copied frames"}
		}
		select {
		case <-ctx.Done():
			return &Error{Code: int(rc), Message: "reset the WAL index's count of copied frames: another connection kept checkpointing"}
		case <-time.After(time.Millisecond):
		}
	}
}
