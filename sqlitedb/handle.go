//go:build cgo

package sqlitedb

/*
#include "capi.h"
*/
import "C"

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Rx is a read's handle on its connection, given to the function Read
// runs: its statements run in the read's transaction, on one snapshot.
// It is valid only while that function runs.
//
// Each statement stays prepared on the connection (up to 128 per
// connection) for the next call, and Query copies all its rows out of
// SQLite in one call into C, each column once, so Scan converts it with
// no driver.Value per column and no goroutine watching ctx.
//
// A statement that begins, commits or ends a transaction (BEGIN, COMMIT,
// END, ROLLBACK but ROLLBACK TO) is refused: the transaction is Read's and
// Write's to end. Savepoints are fine. Once SQLite has rolled the
// transaction back on its own (it does after an interrupted write
// statement, a full disk, some I/O errors), every further statement is
// refused with ErrRolledBack, so none runs, and commits, outside it. SQLite's errors come back as
// *Error, wrapped with ctx's error if ctx ended meanwhile.
type Rx struct {
	conn *sql.Conn // nil once the function it was given to returned
	txn  txnMark   // the transaction its statements belong to
}

// txnMark tells whether the transaction a handle was given in is still
// open on its connection. SQLite rolls a transaction back on its own after
// some errors (an interrupted write statement, a full disk, an I/O error,
// out of memory), and the statements after it would run outside any
// transaction, each committing on its own: a write reported failed would
// be partly committed. A handle whose transaction is gone refuses every
// further statement.
type txnMark struct {
	hooks *C.lite_hooks // nil: a handle outside the package's transactions (tests)
	began C.uint        // hooks.rollbacks when the transaction began
	lost  error         // the error after which the transaction was gone, if a handle saw it
}

// markTxn runs query (BEGIN or BEGIN IMMEDIATE) on conn and marks the
// transaction it began.
func markTxn(conn *sql.Conn, query string) (m txnMark, err error) {
	err = onOwnConn(conn, "a transaction", func(c *driverConn) error {
		if err := c.exec(query); err != nil {
			return err
		}
		m = txnMark{hooks: c.hooks, began: c.hooks.rollbacks}
		return nil
	})
	return m, err
}

// ended reports whether the transaction has been rolled back since it
// began, by anyone.
func (m *txnMark) ended() bool { return m.hooks != nil && m.hooks.rollbacks != m.began }

// endedError is the error of a statement refused because the transaction
// is gone.
func (m *txnMark) endedError() error {
	if m.lost != nil {
		return fmt.Errorf("%w; it ended after: %w", ErrRolledBack, m.lost)
	}
	return ErrRolledBack
}

// Tx is a write's handle: an Rx that can also Exec, given to the function
// Write or Coalesce runs. Its statements run in the write's transaction
// (BEGIN IMMEDIATE … COMMIT, on the one write connection). It is valid
// only while that function runs. &tx.Rx serves a function that only
// reads, inside the write's transaction.
type Tx struct {
	Rx
}

// errHandleDone answers a handle used after its function returned.
var errHandleDone = errors.New("sqlitedb: handle used after the function it was given to returned")

// Query runs a query and returns all its rows, copied out of SQLite in one
// pass. It is meant for the rows of a page (tens or hundreds), since they
// are held in memory at once: for a result too large for that (an export
// of a whole table), stream it through the escape hatch,
// rx.Conn().QueryContext, which reads one row at a time. Arguments may be
// int64, int, int32, bool, float64, string, []byte, time.Time (stored as
// text in UTC, in TimeFormat) or nil.
//
// If ctx ends while the query runs, the query is interrupted
// (sqlite3_interrupt) and Query returns an error wrapping ctx.Err(); the
// connection stays usable. (Read's and Write's own ctx already interrupt
// fn's statements; the ctx fn is given never ends.)
func (rx *Rx) Query(ctx context.Context, query string, args ...any) (*Rows, error) {
	var rows *Rows
	err := rx.on(ctx, query, func(c *driverConn) (err error) {
		rows, err = c.query(query, args)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// QueryRow runs a query expected to return at most one row; Row's Scan
// reads its first row, or answers sql.ErrNoRows.
func (rx *Rx) QueryRow(ctx context.Context, query string, args ...any) Row {
	rows, err := rx.Query(ctx, query, args...)
	return Row{rows: rows, err: err}
}

// Conn is the escape hatch: the *sql.Conn the handle runs on, for what the
// handle lacks (database/sql's Scan into other types, driver values,
// Rows that stream). It is inside the read's or write's transaction, is
// valid only while the function runs, and must not begin, commit or end
// transactions (nor write, in a read: the read connections are
// query_only). Its statements use database/sql's and the driver's own
// statement cache (Options.StatementCache).
func (rx *Rx) Conn() *sql.Conn { return rx.conn }

// Exec runs one statement and reports what it changed, as
// (*sql.Conn).ExecContext does, without database/sql's and the driver's
// layers. Rows the statement returns, if any, are stepped through and
// dropped. Arguments and ctx are as for Query.
func (tx *Tx) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res result
	err := tx.on(ctx, query, func(c *driverConn) error {
		s, err := c.prepared(query)
		if err != nil {
			return err
		}
		if err := c.bind(s, args); err != nil {
			return err
		}
		rc := C.sqlite3_step(s)
		for rc == C.LITE_ROW {
			rc = C.sqlite3_step(s)
		}
		if rc != C.LITE_DONE {
			err = c.lastError(rc)
		} else {
			res = result{changes: int64(C.sqlite3_changes64(c.handle)), lastID: int64(C.sqlite3_last_insert_rowid(c.handle))}
		}
		C.sqlite3_reset(s)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// on runs f on the handle's driver connection, with ctx interrupting it,
// once query has been checked not to end the transaction.
func (rx *Rx) on(ctx context.Context, query string, f func(*driverConn) error) error {
	if rx.conn == nil {
		return errHandleDone
	}
	if kw := transactionKeyword(query); kw != "" {
		return fmt.Errorf("sqlitedb: %s inside Read or Write: the transaction is theirs to end (savepoints are fine)", kw)
	}
	if rx.txn.ended() {
		return withCtxErr(ctx, rx.txn.endedError())
	}
	err := rx.conn.Raw(func(dc any) error {
		c, ok := dc.(*driverConn)
		if !ok { // cannot happen: handles are made on the package's connections
			return fmt.Errorf("sqlitedb: a handle on a %T, not one of the package's connections", dc)
		}
		defer c.interruptOnDone(ctx)()
		return f(c)
	})
	if err != nil && rx.txn.lost == nil && rx.txn.ended() {
		// This statement's error ended the transaction: say so.
		rx.txn.lost = err
		err = fmt.Errorf("%w (%w)", err, ErrRolledBack)
	}
	return withCtxErr(ctx, err)
}

// transactionKeyword is query's first keyword, upper-cased, if it begins or
// ends a transaction (BEGIN, COMMIT, END, ROLLBACK without TO), or "".
// Comments and spaces before it are skipped.
func transactionKeyword(query string) string {
	q := skipSpace(query)
	word := func(s string) string {
		n := 0
		for n < len(s) && (s[n]|0x20 >= 'a' && s[n]|0x20 <= 'z') {
			n++
		}
		return strings.ToUpper(s[:n])
	}
	first := word(q)
	switch first {
	case "BEGIN", "COMMIT", "END":
		return first
	case "ROLLBACK":
		rest := skipSpace(q[len(first):])
		if next := word(rest); next == "TRANSACTION" {
			rest = skipSpace(rest[len(next):])
		}
		if word(rest) == "TO" {
			return ""
		}
		return first
	}
	return ""
}

// skipSpace skips white space and SQL comments at the start of s.
func skipSpace(s string) string {
	for {
		switch {
		case s == "":
			return s
		case s[0] == ' ' || s[0] == '\t' || s[0] == '\n' || s[0] == '\r' || s[0] == '\f' || s[0] == ';':
			s = s[1:]
		case strings.HasPrefix(s, "--"):
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i+1:]
			} else {
				return ""
			}
		case strings.HasPrefix(s, "/*"):
			if i := strings.Index(s[2:], "*/"); i >= 0 {
				s = s[i+4:]
			} else {
				return ""
			}
		default:
			return s
		}
	}
}
