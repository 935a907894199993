//go:build cgo

package sqlitedb

/*
#include <stdlib.h>
#include "capi.h"

// sqlitedb_handle() answers the connection's own sqlite3 pointer, so the Go
// side can reach, through database/sql, the handle of a connection that
// github.com/mattn/go-sqlite3 opened. It is registered on every connection
// by an automatic extension, DIRECTONLY so no trigger or view can call it.
static void lite_handle_func(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
	sqlite3_result_int64(ctx, (sqlite3_int64)(intptr_t)sqlite3_context_db_handle(ctx));
}

static int lite_register_handle_func(sqlite3 *db, char **err, const sqlite3_api_routines *api) {
	return sqlite3_create_function_v2(db, "sqlitedb_handle", 0, LITE_UTF8 | LITE_DIRECTONLY, 0,
		lite_handle_func, 0, 0, 0);
}

// lite_wal_hook runs after every commit on the connection it is set on and
// stores how many frames the WAL now holds. Setting it turns SQLite's
// automatic checkpoints off on that connection (they are a WAL hook too).
static int lite_wal_hook(void *frames, sqlite3 *db, const char *schema, int n) {
	*(volatile int *)frames = n;
	return LITE_OK;
}

static int *lite_watch_wal(sqlite3 *db) {
	int *frames = calloc(1, sizeof(int));
	if (frames) sqlite3_wal_hook(db, lite_wal_hook, frames);
	return frames;
}

static void lite_unwatch_wal(sqlite3 *db, int *frames) {
	sqlite3_wal_hook(db, 0, 0);
	free(frames);
}

static sqlite3 *lite_handle_from(sqlite3_int64 h) { return (sqlite3 *)(intptr_t)h; }

// lite_persist_wal keeps the -wal and -shm when the connection is the last
// to close the file (SQLITE_FCNTL_PERSIST_WAL): the WAL emptied, not
// deleted, so a reader that cannot write the folder can still open the
// database read-only (SQLite reads a WAL-mode file read-only only with
// both files there, or created by the reader).
static int lite_persist_wal(sqlite3 *db) {
	int on = 1;
	return sqlite3_file_control(db, "main", LITE_FCNTL_PERSIST_WAL, &on);
}

static int lite_commit_hook(void *p) { return ((lite_hooks *)p)->allow_commit ? 0 : 1; }
static void lite_rollback_hook(void *p) { ((lite_hooks *)p)->rollbacks++; }

// lite_set_hooks sets the connection's commit and rollback hooks, and
// says in *had which of them were set before (1: commit, 2: rollback),
// each of which it replaced: SQLite keeps one of each per connection.
static lite_hooks *lite_set_hooks(sqlite3 *db, int *had) {
	lite_hooks *h = calloc(1, sizeof(lite_hooks));
	if (!h) return 0;
	h->allow_commit = 1;
	*had = 0;
	if (sqlite3_commit_hook(db, lite_commit_hook, h)) *had |= 1;
	if (sqlite3_rollback_hook(db, lite_rollback_hook, h)) *had |= 2;
	return h;
}

static void lite_unset_hooks(sqlite3 *db, lite_hooks *h) {
	sqlite3_commit_hook(db, 0, 0);
	sqlite3_rollback_hook(db, 0, 0);
	free(h);
}

// lite_last_errno answers the error of the system call that failed last
// on the database file: SQLite keeps it per file (SQLITE_FCNTL_LAST_ERRNO),
// where sqlite3_system_errno may have read errno after another call.
static int lite_last_errno(sqlite3 *db) {
	int e = sqlite3_system_errno(db);
	if (e == 0) sqlite3_file_control(db, "main", LITE_FCNTL_LAST_ERRNO, &e);
	return e;
}

// lite_no_checkpoint_on_close keeps SQLite from checkpointing the WAL
// into the database file when this connection, the last to the file,
// closes.
static int lite_no_checkpoint_on_close(sqlite3 *db) {
	return sqlite3_db_config(db, LITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}

static int lite_install(void) {
	return sqlite3_auto_extension((void (*)(void))lite_register_handle_func);
}

static int lite_bind_text(sqlite3_stmt *s, int i, const char *p, int n) {
	// SQLITE_TRANSIENT: SQLite copies the bytes before this returns, so Go
	// memory is never kept by C. A NULL pointer would bind NULL, not "".
	return sqlite3_bind_text(s, i, n ? p : "", n, (void (*)(void *))-1);
}

static int lite_bind_blob(sqlite3_stmt *s, int i, const void *p, int n) {
	return sqlite3_bind_blob(s, i, n ? p : "", n, (void (*)(void *))-1);
}
*/
import "C"

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/mattn/go-sqlite3"
)

// installOnce registers sqlitedb_handle on every connection opened after it.
var installOnce = sync.OnceValue(func() error {
	if rc := C.lite_install(); rc != C.LITE_OK {
		return fmt.Errorf("sqlitedb: register the connection handle function: SQLite error %d", int(rc))
	}
	return nil
})

// driverConn is a connection go-sqlite3 opened, with its SQLite handle and the
// statements the handles' queries prepared on it. database/sql hands it out
// exactly like the driver's own connection (every method but Close is the
// driver's); Close finalizes the reader's statements first, so SQLite can
// really close the connection.
type driverConn struct {
	*sqlite3.SQLiteConn
	handle *C.sqlite3
	stmts  map[string]*C.sqlite3_stmt
	// walFrames, once watchWAL has set it, is where the WAL hook stores the
	// WAL's size in frames after each commit on this connection.
	walFrames *C.int
	// hooks is what the connection's commit and rollback hooks share with
	// the handles and the writer: whether a commit may go through, and
	// how many transactions were rolled back (see txnMark).
	hooks *C.lite_hooks
	// syncFailed, if set, reports whether a sync of the database file has
	// failed (the DB's fail-stop): once one has, Close keeps SQLite from
	// checkpointing at close.
	syncFailed func() bool
	// fill is where lite_fill says how much of query's buffer it used and
	// needs: a field, not a local the cgo call would move to the heap.
	fill struct{ used, need C.int64_t }
}

// newDriverConn wraps a connection go-sqlite3 opened after installOnce.
func newDriverConn(c *sqlite3.SQLiteConn) (*driverConn, error) {
	rows, err := c.Query(`SELECT sqlitedb_handle()`, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlitedb: read the connection handle: %w", err)
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return nil, fmt.Errorf("sqlitedb: read the connection handle: %w", err)
	}
	h, ok := v[0].(int64)
	if !ok || h == 0 {
		return nil, fmt.Errorf("sqlitedb: read the connection handle: got %v", v[0])
	}
	dc := &driverConn{SQLiteConn: c, handle: C.lite_handle_from(C.sqlite3_int64(h)), stmts: map[string]*C.sqlite3_stmt{}}
	var had C.int
	if dc.hooks = C.lite_set_hooks(dc.handle, &had); dc.hooks == nil {
		return nil, errors.New("sqlitedb: set the connection's hooks: out of memory")
	}
	if had != 0 {
		C.lite_unset_hooks(dc.handle, dc.hooks)
		dc.hooks = nil
		return nil, errHookTaken(had)
	}
	C.lite_persist_wal(dc.handle) // SQLITE_NOTFOUND where the VFS keeps no WAL: nothing to keep
	return dc, nil
}

// errHookTaken is the error of a connection whose ConnectHook set a commit
// hook (had&1) or a rollback hook (had&2).
func errHookTaken(had C.int) error {
	var names []string
	if had&1 != 0 {
		names = append(names, "a commit hook (RegisterCommitHook)")
	}
	if had&2 != 0 {
		names = append(names, "a rollback hook (RegisterRollbackHook)")
	}
	return fmt.Errorf("sqlitedb: ConnectHook set %s: SQLite keeps one of each per connection, and the package's own are what let no COMMIT through but the package's own and say when SQLite rolled a transaction back; do what the hook would after Write returns instead", strings.Join(names, " and "))
}

// Close finalizes the handles' statements, then closes the connection.
func (c *driverConn) Close() error {
	if c.walFrames != nil {
		C.lite_unwatch_wal(c.handle, c.walFrames)
		c.walFrames = nil
	}
	c.finalizeStatements()
	if c.syncFailed != nil && c.syncFailed() {
		// The last connection to close would checkpoint and sync
		// "successfully" over pages whose write-back was lost: the WAL
		// must keep every frame for the next open to copy again.
		C.lite_no_checkpoint_on_close(c.handle)
	}
	if c.hooks != nil { // unset first: a close SQLite defers could call them later
		C.lite_unset_hooks(c.handle, c.hooks)
		c.hooks = nil
	}
	return c.SQLiteConn.Close()
}

// finalizeStatements finalizes every statement the handles kept.
func (c *driverConn) finalizeStatements() {
	for q, s := range c.stmts {
		C.sqlite3_finalize(s)
		delete(c.stmts, q)
	}
}

func (c *driverConn) lastError(rc C.int) error {
	e := &Error{Code: int(C.sqlite3_extended_errcode(c.handle)), Message: C.GoString(C.sqlite3_errmsg(c.handle))}
	switch sqlite3.ErrNo(e.Code & 0xff) {
	case sqlite3.ErrIoErr, sqlite3.ErrFull, sqlite3.ErrCantOpen:
		e.Errno = syscall.Errno(C.lite_last_errno(c.handle))
	case sqlite3.ErrCorrupt:
		// Only the errors SQLite turns into a corrupt file
		// (SQLITE_IOERR_CORRUPTFS): the file's last errno may be older
		// than a corruption found in the bytes themselves.
		switch errno := syscall.Errno(C.lite_last_errno(c.handle)); errno {
		case syscall.EIO, syscall.ERANGE, syscall.ENXIO:
			e.Errno = errno
		}
	}
	return e
}

// maxStatements bounds the statements the handles keep per
// connection: a program that builds its SQL at run time would otherwise
// grow the cache without end. Past it the cache starts over.
const maxStatements = 128

// prepared returns query's prepared statement on c, preparing it on first
// use and keeping it (up to maxStatements) for the connection's life.
func (c *driverConn) prepared(query string) (*C.sqlite3_stmt, error) {
	if s, ok := c.stmts[query]; ok {
		return s, nil
	}
	if len(c.stmts) >= maxStatements {
		c.finalizeStatements()
	}
	cq := C.CString(query)
	defer C.free(unsafe.Pointer(cq))
	var s *C.sqlite3_stmt
	var tail *C.char
	if rc := C.sqlite3_prepare_v3(c.handle, cq, -1, C.LITE_PREPARE_PERSISTENT, &s, &tail); rc != C.LITE_OK {
		return nil, c.lastError(rc)
	}
	if s == nil {
		return nil, errors.New("sqlitedb: empty query")
	}
	if *tail != 0 { // something follows the first statement: only comments, or a second one?
		var next *C.sqlite3_stmt
		C.sqlite3_prepare_v3(c.handle, tail, -1, 0, &next, nil)
		if next != nil {
			C.sqlite3_finalize(next)
			C.sqlite3_finalize(s)
			return nil, fmt.Errorf("sqlitedb: one statement at a time, and the query goes on after the first: %.40q", C.GoString(tail))
		}
	}
	c.stmts[query] = s
	return s, nil
}

func (c *driverConn) bind(s *C.sqlite3_stmt, args []any) error {
	if n := int(C.sqlite3_bind_parameter_count(s)); n != len(args) {
		return fmt.Errorf("sqlitedb: the query takes %d arguments, got %d", n, len(args))
	}
	for i, a := range args {
		col := C.int(i + 1)
		var rc C.int
		switch v := a.(type) {
		case int64:
			rc = C.sqlite3_bind_int64(s, col, C.sqlite3_int64(v))
		case int:
			rc = C.sqlite3_bind_int64(s, col, C.sqlite3_int64(v))
		case int32:
			rc = C.sqlite3_bind_int64(s, col, C.sqlite3_int64(v))
		case bool:
			var b C.sqlite3_int64
			if v {
				b = 1
			}
			rc = C.sqlite3_bind_int64(s, col, b)
		case float64:
			rc = C.sqlite3_bind_double(s, col, C.double(v))
		case string:
			rc = C.lite_bind_text(s, col, (*C.char)(unsafe.Pointer(unsafe.StringData(v))), C.int(len(v)))
		case []byte:
			if v == nil {
				rc = C.sqlite3_bind_null(s, col)
			} else {
				rc = C.lite_bind_blob(s, col, unsafe.Pointer(unsafe.SliceData(v)), C.int(len(v)))
			}
		case time.Time:
			t := v.UTC().Format(TimeFormat)
			rc = C.lite_bind_text(s, col, (*C.char)(unsafe.Pointer(unsafe.StringData(t))), C.int(len(t)))
		case nil:
			rc = C.sqlite3_bind_null(s, col)
		default:
			return fmt.Errorf("sqlitedb: argument %d: cannot bind a %T (want int64, int, int32, bool, float64, string, []byte, time.Time or nil)", i+1, a)
		}
		if rc != C.LITE_OK {
			return c.lastError(rc)
		}
	}
	return nil
}

// watchWAL makes conn report, after each of its commits, how many frames
// (pages) the WAL holds; the returned function reads the figure the last
// commit left. It is meant for the one connection that writes, read by the
// goroutine that commits on it. It also turns off SQLite's automatic
// checkpoints on conn, which would otherwise run inside the commits that
// take the WAL past wal_autocheckpoint pages: the caller checkpoints
// instead, from another connection.
func watchWAL(ctx context.Context, conn *sql.Conn) (frames func() int, err error) {
	err = onOwnConn(conn, "watchWAL", func(c *driverConn) error {
		if c.walFrames == nil {
			if c.walFrames = C.lite_watch_wal(c.handle); c.walFrames == nil {
				return errors.New("sqlitedb: watchWAL: out of memory")
			}
		}
		p := c.walFrames
		frames = func() int { return int(*p) }
		return nil
	})
	return frames, err
}

// onOwnConn runs fn on conn's driver connection, which must be one the
// package opened; what names the caller in the error if it is not.
func onOwnConn(conn *sql.Conn, what string, fn func(*driverConn) error) error {
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*driverConn)
		if !ok {
			return fmt.Errorf("sqlitedb: %s needs a connection of a sqlitedb.DB, got %T", what, dc)
		}
		return fn(c)
	})
}

// interruptOnDone interrupts the statement running on c, if any, when ctx
// ends, until the function it returns is called; that function returns
// once no interrupt can come any more, so none reaches a later statement,
// and may be called again.
// A ctx that never ends costs nothing.
func (c *driverConn) interruptOnDone(ctx context.Context) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	h := c.handle
	fired := make(chan struct{})
	stopWatch := context.AfterFunc(ctx, func() {
		C.sqlite3_interrupt(h)
		close(fired)
	})
	stopped := false
	return func() { // idempotent: a deferred call may follow a direct one
		if !stopped && !stopWatch() {
			<-fired
		}
		stopped = true
	}
}

// interruptOnDone is driverConn.interruptOnDone for conn, a connection of
// a DB's pool.
func interruptOnDone(ctx context.Context, conn *sql.Conn) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	stop = func() {}
	conn.Raw(func(dc any) error {
		stop = dc.(*driverConn).interruptOnDone(ctx)
		return nil
	})
	return stop
}

// withCtxErr answers err, wrapped with ctx's error if ctx has ended: the
// statement was interrupted, or failed meanwhile.
func withCtxErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w: %w", ctx.Err(), err)
}

// exec runs a statement that takes no arguments and whose rows, if any,
// are not wanted (BEGIN, COMMIT, SAVEPOINT), prepared once per connection.
func (c *driverConn) exec(query string) error {
	s, err := c.prepared(query)
	if err != nil {
		return err
	}
	rc := C.sqlite3_step(s)
	if rc != C.LITE_DONE && rc != C.LITE_ROW {
		err = c.lastError(rc)
	}
	C.sqlite3_reset(s)
	return err
}

// queryInt runs a query that takes no arguments and answers one integer
// in its first row, prepared once per connection.
func (c *driverConn) queryInt(query string, v *int64) error {
	s, err := c.prepared(query)
	if err != nil {
		return err
	}
	rc := C.sqlite3_step(s)
	if rc == C.LITE_ROW {
		*v = int64(C.sqlite3_column_int64(s, 0))
	} else if rc != C.LITE_DONE {
		err = c.lastError(rc)
	} else {
		err = sql.ErrNoRows
	}
	C.sqlite3_reset(s)
	return err
}

// execOn runs exec on conn, a connection of a DB's pool: what BEGIN and
// COMMIT cost through database/sql (a driver.Result, locks, an interface
// per call) is more than SQLite's own work for them. On a connection the
// driver opened for another pool (Migrate's), it runs the statement
// through database/sql.
func execOn(conn *sql.Conn, query string) error {
	return runOn(conn, query, (*driverConn).exec)
}

// runOn runs query on conn with own if conn is one of the package's
// connections, else through database/sql.
func runOn(conn *sql.Conn, query string, own func(*driverConn, string) error) error {
	foreign := false
	err := conn.Raw(func(dc any) error {
		c, ok := dc.(*driverConn)
		if !ok {
			foreign = true
			return nil
		}
		return own(c, query)
	})
	if foreign {
		_, err = conn.ExecContext(context.Background(), query)
	}
	return err
}

// TimeFormat is how a time.Time argument is stored: text, in UTC, with
// the fraction of a second it has. SQLite's date and time functions read
// it, and since every value is in UTC with trailing zeros of the fraction
// cut, such texts sort in time order.
const TimeFormat = "2006-01-02 15:04:05.999999999-07:00"

// timeFormats are the texts a time column is read from: TimeFormat, then
// what SQLite's date and time functions write.
var timeFormats = []string{
	TimeFormat,
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}
