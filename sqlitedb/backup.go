//go:build cgo

package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mattn/go-sqlite3"
)

// BackupOptions pace a backup. The zero value copies as fast as it can.
type BackupOptions struct {
	// PagesPerStep is how many pages each step copies; 0 (or less) means
	// 1024. Between steps the copy checks its ctx, calls Progress and
	// pauses.
	PagesPerStep int
	// Pause is how long the copy sleeps between steps, so that copying a
	// large database leaves the disk to the site; 0 means no pause.
	Pause time.Duration
	// Progress, if set, is called after each step with the pages copied
	// so far and the pages of the whole copy. copied never decreases and
	// equals total after the last step. It runs on Backup's goroutine,
	// and the copy waits for it.
	Progress func(copied, total int)
}

// defaultBackupPages is BackupOptions.PagesPerStep when not set: 4 MiB a
// step with 4 KiB pages.
const defaultBackupPages = 1024

// Backup writes a consistent copy of the database to path with SQLite's
// online backup API while reads and writes go on, paced as opts say (nil:
// as fast as it can). path must not exist; its directory is created if
// needed.
//
// The copy is one snapshot: Backup holds one read transaction for the
// whole copy, so every page comes from the moment it began. In WAL mode
// that never blocks a writer, but the WAL cannot start over until the copy
// ends, so a slowly paced copy lets it grow meanwhile. With a rollback
// journal that read lock would keep every writer waiting, so there the
// copy is made in one step whatever opts say.
//
// The copy is written to a temporary file beside path, synced, renamed to
// path, and the directory synced: path appears only once it is a complete
// database, with no WAL beside it. It is a rollback-journal file, not a
// WAL one (setRollbackMode), so that it opens read-only (mode=ro) where its
// reader cannot write the folder, leaving nothing beside it; Open
// read-write puts it in WAL mode again. It has the database's pages as
// they are, free ones included. Its permission bits are the database file's
// without those 0644 lacks (and less the umask), so a copy is never more
// readable than the file it copies.
//
// On an error the temporary file is removed and nothing is left at path.
// The ctx is checked between steps and during pauses: once it ends Backup
// stops, with an error wrapping ctx.Err(). A DB closed before or during
// the copy gives ErrClosed. Backup works on a database opened read-only
// too; it reads on a connection of its own, not one of the read pool's.
func (db *DB) Backup(ctx context.Context, path string, opts *BackupOptions) error {
	if db.closed.Load() {
		return ErrClosed
	}
	var o BackupOptions
	if opts != nil {
		o = *opts
	}
	if o.PagesPerStep <= 0 {
		o.PagesPerStep = defaultBackupPages
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("sqlitedb: backup: %s already exists", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlitedb: backup: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sqlitedb: backup: %w", err)
	}
	fail := func(err error) error {
		return fmt.Errorf("sqlitedb: backup %s to %s: %w", db.path, path, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	tmp, err := createBackupFile(path, db.backupMode())
	if err != nil {
		return fail(err)
	}
	done := false
	defer func() { // on an error, a cancellation or a panic in Progress
		if !done {
			removeBackupFiles(tmp)
		}
	}()
	if err := db.copyTo(ctx, tmp, o); err != nil {
		return fail(err)
	}
	if err := setRollbackMode(tmp); err != nil {
		return fail(err)
	}
	if err := syncPath(tmp); err != nil {
		return fail(fmt.Errorf("sync the copy: %w", err))
	}
	// Checked again: a file that appeared at path during the copy is not
	// replaced.
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("sqlitedb: backup: %s already exists", path)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	if err := syncPath(dir); err != nil {
		os.Remove(path)
		return fail(fmt.Errorf("sync the directory: %w", err))
	}
	done = true
	return nil
}

// setRollbackMode marks the complete copy at path as a rollback-journal
// database, not a WAL one: bytes 18 and 19 of its header, the file format's
// write and read versions (2 in WAL mode, 1 otherwise), which the backup
// copies from the live file. A WAL-mode file opened read-only needs its
// -wal and -shm, which a reader creates beside it if it may and fails
// without (a folder it cannot write); a rollback-journal file is read with
// nothing beside it. Opened read-write by Open, the copy is in WAL mode
// again (the journal_mode pragma).
func setRollbackMode(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("mark the copy's journal mode: %w", err)
	}
	defer f.Close()
	var v [2]byte
	if _, err := f.ReadAt(v[:], 18); err != nil {
		return fmt.Errorf("mark the copy's journal mode: %w", err)
	}
	if v == [2]byte{2, 2} {
		if _, err := f.WriteAt([]byte{1, 1}, 18); err != nil {
			return fmt.Errorf("mark the copy's journal mode: %w", err)
		}
	}
	return f.Close()
}

// copyTo copies the database into the empty file tmp, in one read
// transaction on a connection of its own.
func (db *DB) copyTo(ctx context.Context, tmp string, o BackupOptions) error {
	// query_only: the backup only reads the database. The DB's own DSN,
	// so a read-only DB's connection is read-only too.
	pool := sql.OpenDB(db.connector(db.opts.Timeout, mergePragmas(db.pragmas, []Pragma{{"query_only", "ON"}}), noStatementCache))
	defer pool.Close()
	conn, err := pool.Conn(ctx)
	if err != nil {
		return withCtxErr(ctx, err)
	}
	defer conn.Close()
	return onOwnConn(conn, "Backup", func(src *driverConn) error {
		// SQLite starts a backup over whenever another connection changes
		// the source between two steps, so under steady writes a paced
		// copy would never end. Inside one read transaction every step
		// reads the same snapshot, which WAL mode keeps for it.
		if err := src.exec(`BEGIN`); err != nil {
			return fmt.Errorf("begin the read transaction: %w", err)
		}
		defer src.exec(`ROLLBACK`)
		var wal int64
		if err := src.queryInt(`SELECT journal_mode = 'wal' FROM pragma_journal_mode`, &wal); err != nil {
			return fmt.Errorf("read the journal mode: %w", err)
		}
		// A read of the schema takes the snapshot every step copies.
		var n int64
		if err := src.queryInt(`SELECT count(*) FROM sqlite_schema`, &n); err != nil {
			return fmt.Errorf("take the snapshot: %w", err)
		}
		pages := o.PagesPerStep
		if wal == 0 {
			// Outside WAL mode the read transaction holds a SHARED lock,
			// which no writer can commit past: copy all at once.
			pages = -1
		}
		dst, err := openBackupDest(tmp)
		if err != nil {
			return err
		}
		closed := false
		defer func() { // on an error, or a panic in Progress
			if !closed {
				dst.Close()
			}
		}()
		if err := db.copySteps(ctx, dst, src.SQLiteConn, pages, o); err != nil {
			return err
		}
		closed = true
		if err := dst.Close(); err != nil {
			return fmt.Errorf("close the copy: %w", err)
		}
		return nil
	})
}

// copySteps runs the backup from src into dst step by step, pages at a
// time (-1: all), as o says.
func (db *DB) copySteps(ctx context.Context, dst, src *sqlite3.SQLiteConn, pages int, o BackupOptions) error {
	b, err := dst.Backup("main", src, "main")
	if err != nil {
		return fmt.Errorf("start the backup: %w", err)
	}
	defer b.Finish() // a no-op once finished below
	copied := 0
	var busySince time.Time
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if db.closed.Load() {
			return ErrClosed
		}
		done, err := b.Step(pages)
		if err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		total := b.PageCount()
		now := total - b.Remaining()
		if done {
			now = total
		}
		// A step that copied nothing met a lock (go-sqlite3 answers
		// SQLITE_BUSY and SQLITE_LOCKED as not done, with no error): on
		// the copy, since the source's read transaction is already open.
		// Nothing else should hold it; give up after Options.Timeout.
		busy := !done && now <= copied
		copied = max(copied, now)
		if o.Progress != nil {
			o.Progress(copied, total)
		}
		if done {
			break
		}
		wait := o.Pause
		if busy {
			if busySince.IsZero() {
				busySince = time.Now()
			} else if time.Since(busySince) > db.opts.Timeout {
				return fmt.Errorf("copy: %w", ErrBusy)
			}
			wait = max(wait, time.Millisecond)
		} else {
			busySince = time.Time{}
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	}
	if err := b.Finish(); err != nil {
		return fmt.Errorf("finish the backup: %w", err)
	}
	return nil
}

// openBackupDest opens the empty file tmp as the backup's destination,
// with SQLite's default VFS. It keeps no journal and never syncs: the
// file is useless until complete, removed on any error, and Backup syncs
// it once before renaming it.
func openBackupDest(tmp string) (*sqlite3.SQLiteConn, error) {
	abs, err := filepath.Abs(tmp)
	if err != nil {
		return nil, err
	}
	c, err := (&sqlite3.SQLiteDriver{}).Open(FileURI(abs, nil))
	if err != nil {
		return nil, fmt.Errorf("open the copy %s: %w", tmp, err)
	}
	dst := c.(*sqlite3.SQLiteConn)
	for _, s := range []string{`PRAGMA journal_mode = OFF`, `PRAGMA synchronous = OFF`} {
		if _, err := dst.Exec(s, nil); err != nil {
			dst.Close()
			return nil, fmt.Errorf("open the copy %s: %s: %w", tmp, s, err)
		}
	}
	return dst, nil
}

// backupMode is the permission bits of a copy of the database: the
// database file's, without those 0644 lacks (0600 if the file cannot be
// read).
func (db *DB) backupMode() fs.FileMode {
	fi, err := os.Stat(db.path)
	if err != nil {
		return 0o600
	}
	return fi.Mode().Perm() & 0o644
}

// createBackupFile creates an empty file with mode (less the umask) beside
// path, named path.tmp-<random>, and returns its name.
func createBackupFile(path string, mode fs.FileMode) (string, error) {
	for range 100 {
		tmp := path + ".tmp-" + strconv.FormatUint(rand.Uint64(), 36)
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		} else if err != nil {
			return "", err
		}
		// Closed at once: closing a descriptor of the file later, while
		// SQLite has it open, would drop SQLite's locks on it.
		if err := f.Close(); err != nil {
			os.Remove(tmp)
			return "", err
		}
		return tmp, nil
	}
	return "", fmt.Errorf("create a temporary file beside %s: every name tried exists", path)
}

// removeBackupFiles removes the temporary copy and any file SQLite kept
// beside it.
func removeBackupFiles(tmp string) {
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		os.Remove(tmp + suffix)
	}
}

// syncPath flushes the file or directory at path to disk.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
