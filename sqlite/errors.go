package sqlite

// This file turns SQLite's errors into the domain's, by the result codes
// the driver names, the same contract as package postgres's errors.go. Busy, timed-out and
// closed errors come marked by package sqlitedb.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/mattn/go-sqlite3"
)

// isUniqueViolation reports whether err is a UNIQUE constraint failure.
func isUniqueViolation(err error) bool { return sqlitedb.IsUniqueViolation(err) }

// isForeignKeyViolation reports whether err is a FOREIGN KEY constraint failure.
func isForeignKeyViolation(err error) bool { return sqlitedb.IsForeignKeyViolation(err) }

// mapError turns errors every caller shares into domain errors: a database
// still locked after the timeout, a write that timed out waiting for its
// turn, or a database closing is EUNAVAILABLE (503, retry later) rather
// than a 500.
func mapError(err error) error {
	if err == nil || loremnews.ErrorCode(err) != loremnews.EINTERNAL {
		return err
	}
	code := sqlitedb.ErrorCode(err)
	if code == int(sqlite3.ErrConstraintCheck) {
		// The domain rules should have caught this first; the schema's
		// CHECK is the last line of defence, and its failure is the input's.
		return fmt.Errorf("%w (%v)", loremnews.ErrBreaksARule, err)
	}
	if code&0xff == int(sqlite3.ErrFull) {
		return fmt.Errorf("%w (%v)", loremnews.ErrDatabaseFull, err)
	}
	switch {
	case errors.Is(err, sqlitedb.ErrBusy):
		return fmt.Errorf("%w (%v)", loremnews.ErrBusy, err)
	case errors.Is(err, sqlitedb.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w (%v)", loremnews.ErrTooBusy, err)
	case errors.Is(err, sqlitedb.ErrClosed):
		return fmt.Errorf("%w (%v)", loremnews.ErrShuttingDown, err)
	}
	return err
}

// mustAffect turns "no row changed" into ENOTFOUND naming the thing.
func mustAffect(res sql.Result, thing string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return loremnews.Errorf(loremnews.ENOTFOUND, "%s not found.", thing)
	}
	return nil
}
