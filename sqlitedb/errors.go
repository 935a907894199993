//go:build cgo

package sqlitedb

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/mattn/go-sqlite3"
)

// The errors a DB returns say what happened, so a caller can tell a client
// to come back (HTTP 503) or retry. Test them with errors.Is; the error
// SQLite returned, if any, is wrapped too (errors.As with sqlite3.Error or
// *Error).
var (
	// ErrClosed: the database was closed before the read or write began.
	ErrClosed = errors.New("sqlitedb: database is closed")
	// ErrReadOnly: a write to a database opened read-only (mode=ro).
	ErrReadOnly = errors.New("sqlitedb: database is open read-only")
	// ErrBusy: SQLite answered SQLITE_BUSY or SQLITE_LOCKED, and waiting
	// did not help within Options.Timeout: another process held the write
	// lock that long.
	ErrBusy = errors.New("sqlitedb: database is locked")
	// ErrTimeout: the read or write waited longer than Options.Timeout for
	// its turn or its connection, and did not run. errors.Is(err,
	// context.DeadlineExceeded) is true for it too, so that code written
	// for deadlines handles it; to tell the package's timeout (the
	// database is overloaded: 503) from the caller's own deadline, check
	// errors.Is(err, ErrTimeout) first: a ctx that ended gives its own
	// error, which is not ErrTimeout.
	ErrTimeout error = timeoutError{}
	// ErrRolledBack: SQLite rolled the transaction back on its own, after
	// an error that ends a transaction (an interrupted write statement, a
	// full disk, an I/O error, out of memory). Nothing of it was
	// committed; the statements after it were refused, not run outside it.
	ErrRolledBack = errors.New("sqlitedb: SQLite rolled the transaction back; nothing of it is committed")
	// ErrSyncFailed: a sync of the database file failed, so pages the
	// process wrote to it may never have reached the disk (Linux reports a
	// lost write-back once, then forgets it). From then on no checkpoint
	// of this DB completes, so the WAL keeps every frame: reads and writes
	// go on (reads find every page written since the last good sync in the
	// WAL, not in the file, in every process), and opening the database
	// again copies the whole WAL again.
	// Close reports it; Stats().Checkpoints.Stopped says so meanwhile.
	ErrSyncFailed = errors.New("sqlitedb: a sync of the database file failed; checkpoints are stopped until the database is opened again")
)

// The ends of a wait for the turn among processes (processQueue.wait):
// errTurnNotYet, the turn did not come before the wait's deadline;
// errTurnGivenUp, the waiter's caller left before it came.
var (
	errTurnNotYet  = errors.New("the turn did not come")
	errTurnGivenUp = errors.New("gave up the turn")
)

type timeoutError struct{}

func (timeoutError) Error() string        { return "sqlitedb: timed out waiting for a turn" }
func (timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Error is an error SQLite returned to a statement run through a handle.
type Error struct {
	Code    int    // SQLite's extended result code
	Message string // sqlite3_errmsg
	// Errno, for an I/O error, a corrupt file, a full disk or a file that
	// cannot be opened, is the operating system's error behind it
	// (sqlite3_system_errno), if any: SQLite reports a read that failed
	// with EIO as "database disk image is malformed", and this tells a
	// failing disk from a damaged file.
	Errno syscall.Errno
}

func (e *Error) Error() string {
	if e.Errno != 0 {
		return "sqlite: " + e.Message + " (the system call failed: " + e.Errno.Error() + ")"
	}
	return "sqlite: " + e.Message
}

// Unwrap answers Errno, if any, so errors.Is(err, syscall.EIO) works.
func (e *Error) Unwrap() error {
	if e.Errno != 0 {
		return e.Errno
	}
	return nil
}

// IsBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended
// code), from the driver or from a handle's statement.
func IsBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	var re *Error
	return errors.As(err, &re) && (re.Code&0xff == int(sqlite3.ErrBusy) || re.Code&0xff == int(sqlite3.ErrLocked))
}

// describeOpenError adds what SQLite's terse open errors usually mean.
func describeOpenError(err error, readOnly bool) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch {
		case se.Code == sqlite3.ErrNotADB:
			return fmt.Errorf("the file is not a SQLite database (or is encrypted): %w", err)
		case se.Code == sqlite3.ErrCorrupt:
			return fmt.Errorf("the database file is corrupt: %w", err)
		case se.Code == sqlite3.ErrCantOpen && readOnly:
			return fmt.Errorf("cannot open the file (check that it exists and is readable): %w", err)
		case se.Code == sqlite3.ErrCantOpen:
			return fmt.Errorf("cannot open the file (check that the path exists and is writable): %w", err)
		case se.Code == sqlite3.ErrReadonly && readOnly:
			return fmt.Errorf("a WAL-mode file opens read-only only with its -wal and -shm beside it, or where the reader may create them; here it may not: %w", err)
		case se.Code == sqlite3.ErrReadonly:
			return fmt.Errorf("the file or its directory is read-only: %w", err)
		}
	}
	return err
}

// ErrorCode is SQLite's extended result code carried by err (e.g. 2067,
// SQLITE_CONSTRAINT_UNIQUE), from the driver or from a handle's statement, or 0
// if err carries none. Its low byte is the primary code (19,
// SQLITE_CONSTRAINT).
func ErrorCode(err error) int {
	if err == nil { // the usual case, and errors.As's targets would escape
		return 0
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		return int(se.ExtendedCode)
	}
	var re *Error
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

// The constraint a statement broke, by name, whichever path ran it (a
// handle's statement, the escape hatch's database/sql, a Setup): each
// reports whether err carries that extended result code.

// IsUniqueViolation: a UNIQUE constraint or PRIMARY KEY failed
// (SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY).
func IsUniqueViolation(err error) bool {
	c := ErrorCode(err)
	return c == int(sqlite3.ErrConstraintUnique) || c == int(sqlite3.ErrConstraintPrimaryKey)
}

// IsForeignKeyViolation: a FOREIGN KEY constraint failed
// (SQLITE_CONSTRAINT_FOREIGNKEY).
func IsForeignKeyViolation(err error) bool {
	return ErrorCode(err) == int(sqlite3.ErrConstraintForeignKey)
}

// IsNotNullViolation: a NOT NULL constraint failed
// (SQLITE_CONSTRAINT_NOTNULL).
func IsNotNullViolation(err error) bool { return ErrorCode(err) == int(sqlite3.ErrConstraintNotNull) }

// IsCheckViolation: a CHECK constraint failed (SQLITE_CONSTRAINT_CHECK).
func IsCheckViolation(err error) bool { return ErrorCode(err) == int(sqlite3.ErrConstraintCheck) }

// PanicError is what a write's fn panicked with, carried from the writer
// goroutine to the caller of Write or Coalesce, which panics with it: a
// panic in fn reaches the goroutine that asked for the write, where it can
// be recovered (net/http recovers each request's), instead of ending the
// program on the writer's goroutine. The transaction was rolled back and
// the writer goes on.
type PanicError struct {
	Value any    // what fn panicked with
	Stack []byte // the writer goroutine's stack where it panicked
}

func (p *PanicError) Error() string {
	return fmt.Sprintf("sqlitedb: a write's function panicked: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap answers Value, if it is an error.
func (p *PanicError) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}
