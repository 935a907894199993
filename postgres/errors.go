package postgres

// This file turns PostgreSQL's errors into the domain's: each SQLSTATE is
// named by its pgerrcode constant, so a reader sees which condition is
// meant without a table at hand.

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/loremnews/loremnews"
)

// describeConnectError says in plain words why a connection failed when
// the cause is a common one (no server, no database, wrong credentials).
func describeConnectError(err error) error {
	var ne *net.OpError
	if errors.As(err, &ne) {
		return fmt.Errorf("the server does not answer (is PostgreSQL running there?): %w", err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case pgerrcode.InvalidCatalogName:
			return fmt.Errorf("the database does not exist (create it with createdb): %w", err)
		case pgerrcode.InvalidPassword, pgerrcode.InvalidAuthorizationSpecification:
			return fmt.Errorf("the server refused these credentials: %w", err)
		}
	}
	return err
}

// retryable reports whether a write should start over: PostgreSQL gave up
// on the transaction to break a deadlock or keep it serializable, or a
// picked row vanished.
func retryable(err error) bool {
	if errors.Is(err, errRetry) {
		return true
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == pgerrcode.SerializationFailure || pe.Code == pgerrcode.DeadlockDetected)
}

// pgCode returns the SQLSTATE of err, or "".
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// constraint returns the name of the constraint err violated, or "".
func constraint(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.ConstraintName
	}
	return ""
}

// mapError turns errors every caller shares into domain errors, as the
// SQLite store does: bad input the schema caught is EINVALID (422); a
// database that is overloaded, out of space, shutting down or unreachable
// is EUNAVAILABLE (503); a missing row is ENOTFOUND.
func (db *DB) mapError(err error) error {
	if err == nil || loremnews.ErrorCode(err) != loremnews.EINTERNAL {
		return err
	}
	unavailable := func(e error) error {
		return fmt.Errorf("%w (%v)", e, err)
	}
	switch code := pgCode(err); {
	case code == pgerrcode.CheckViolation, code == pgerrcode.CharacterNotInRepertoire,
		code == pgerrcode.UntranslatableCharacter, code == pgerrcode.StringDataRightTruncationDataException:
		// The domain rules should have caught this first: a CHECK,
		// a character PostgreSQL cannot store (NUL), an over-long value.
		return fmt.Errorf("%w (%v)", loremnews.ErrBreaksARule, err)
	case code == pgerrcode.DiskFull:
		return unavailable(loremnews.ErrDatabaseFull)
	case code == pgerrcode.LockNotAvailable, code == pgerrcode.SerializationFailure, code == pgerrcode.DeadlockDetected,
		code == pgerrcode.QueryCanceled, pgerrcode.IsInsufficientResources(code):
		return unavailable(loremnews.ErrBusy)
	case code == pgerrcode.AdminShutdown, code == pgerrcode.CrashShutdown, code == pgerrcode.CannotConnectNow,
		code == pgerrcode.DatabaseDropped, code == pgerrcode.IdleSessionTimeout,
		pgerrcode.IsConnectionException(code), code == pgerrcode.ReadOnlySQLTransaction:
		return unavailable(loremnews.ErrUnreachable)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return unavailable(loremnews.ErrTooBusy)
	}
	var ne *net.OpError
	if errors.As(err, &ne) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return unavailable(loremnews.ErrUnreachable)
	}
	return err
}

// mustAffect turns "no row changed" into ENOTFOUND naming the thing.
func mustAffect(tag pgconn.CommandTag, thing string) error {
	if tag.RowsAffected() == 0 {
		return loremnews.Errorf(loremnews.ENOTFOUND, "%s not found.", thing)
	}
	return nil
}

var errUserNotFound = loremnews.Errorf(loremnews.ENOTFOUND, "User not found.")

// uniqueError turns a unique or foreign-key violation into the domain error
// the SQLite store gives for it, and passes any other error through.
func uniqueError(err error) error {
	switch pgCode(err) {
	case pgerrcode.UniqueViolation:
		switch constraint(err) {
		case "index_users_on_screen_name":
			return loremnews.ErrScreenNameTaken
		case "index_posts_on_title", "index_posts_on_title_key":
			return loremnews.ErrTitleTaken
		}
	case pgerrcode.ForeignKeyViolation:
		return errUserNotFound
	}
	return err
}
