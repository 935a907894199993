package sqlite

// This file turns SQLite's errors into the domain's, by the result codes
// the driver names, the same contract as package postgres's errors.go.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/mattn/go-sqlite3"
)

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended
// code), from the driver or from the row reader.
func isBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	var re *sqlitedb.Error
	return errors.As(err, &re) && re.Busy()
}

// isUniqueViolation reports whether err is a UNIQUE constraint failure.
func isUniqueViolation(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique
}

// mapError turns errors every caller shares into domain errors: a database
// still locked after the timeout, or a write that timed out waiting for its
// turn, is EUNAVAILABLE (503, retry later) rather than a 500.
func (db *DB) mapError(err error) error {
	if err == nil || loremnews.ErrorCode(err) != loremnews.EINTERNAL {
		return err
	}
	var se sqlite3.Error
	if errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintCheck {
		// The domain rules should have caught this first; the schema's
		// CHECK is the last line of defence, and its failure is the input's.
		return fmt.Errorf("%w (%v)", loremnews.Errorf(loremnews.EINVALID, "The input breaks a rule of the database."), err)
	}
	if errors.As(err, &se) && se.Code == sqlite3.ErrFull {
		return fmt.Errorf("%w (%v)", loremnews.Errorf(loremnews.EUNAVAILABLE, "The database is full (out of disk space); nothing was saved. Please try again later."), err)
	}
	if isBusy(err) {
		db.busyErrors.Add(1)
		return fmt.Errorf("%w (%v)", loremnews.Errorf(loremnews.EUNAVAILABLE, "The database is busy. Please try again."), err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (%v)", loremnews.Errorf(loremnews.EUNAVAILABLE, "The site is too busy right now. Please try again."), err)
	}
	return err
}

// describeOpenError adds what SQLite's terse open errors usually mean.
func describeOpenError(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrNotADB:
			return fmt.Errorf("the file is not a SQLite database (or is encrypted): %w", err)
		case sqlite3.ErrCorrupt:
			return fmt.Errorf("the database file is corrupt: %w", err)
		case sqlite3.ErrCantOpen:
			return fmt.Errorf("cannot open the file (check that the path exists and is writable): %w", err)
		case sqlite3.ErrReadonly:
			return fmt.Errorf("the file or its directory is read-only: %w", err)
		}
	}
	return err
}

var errScreenNameTaken = loremnews.Errorf(loremnews.EINVALID, "Screen name has already been taken.")

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

var errTitleTaken = loremnews.Errorf(loremnews.EINVALID, "Title has already been taken.")
