package loremnews

import (
	"errors"
	"fmt"
)

// Error codes. Each maps to exactly one HTTP status, in one function of the
// http package; any other error is internal, logged, and shown to the user
// only as a generic message.
const (
	EINTERNAL    = "internal"    // a bug or an unavailable database
	EINVALID     = "invalid"     // the input breaks a validation rule
	ENOTFOUND    = "not_found"   // no such row
	EGONE        = "gone"        // the row existed but was deleted
	EFORBIDDEN   = "forbidden"   // signed in, but not the owner
	EUNAVAILABLE = "unavailable" // the database is busy or shutting down: retry later
	ETOOMANY     = "too_many"    // too many attempts (failed sign-ins): slow down
)

// Error is an application error whose Message is safe to show to users.
type Error struct {
	Code    string
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("loremnews error: code=%s message=%s", e.Code, e.Message)
}

// Errorf builds an *Error with a formatted, user-safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the *Error in err's chain, EINTERNAL for any
// other error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return "" // before e, which escapes: no allocation for no error
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the user-safe message of the *Error in err's chain, or
// a generic message for internal errors, whose text may reveal internals.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}

// What both stores answer for the same refusal or unavailability, so the
// two say it the same way.
var (
	ErrScreenNameTaken = Errorf(EINVALID, "Screen name has already been taken.")
	ErrTitleTaken      = Errorf(EINVALID, "Title has already been taken.")
	ErrBreaksARule     = Errorf(EINVALID, "The input breaks a rule of the database.")

	ErrDatabaseFull = Errorf(EUNAVAILABLE, "The database is full (out of disk space); nothing was saved. Please try again later.")
	ErrBusy         = Errorf(EUNAVAILABLE, "The database is busy. Please try again.")
	ErrTooBusy      = Errorf(EUNAVAILABLE, "The site is too busy right now. Please try again.")
	ErrShuttingDown = Errorf(EUNAVAILABLE, "The site is shutting down. Please try again in a moment.")
	ErrUnreachable  = Errorf(EUNAVAILABLE, "The database is unavailable. Please try again later.")
)
