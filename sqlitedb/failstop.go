//go:build cgo

package sqlitedb

// #include "capi.h"
import "C"

import (
	"database/sql"
	"fmt"
	"log/slog"
	"sync/atomic"
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
	code := ErrorCode(err)
	return code == C.LITE_IOERR_FSYNC || code == C.LITE_IOERR_DIR_FSYNC
}
