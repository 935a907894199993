package sqlite

// The baselines of the experiment, built from database/sql and the
// go-sqlite3 driver alone, the way a framework or a hand-written program
// sets them up: one pool of connections shared by reads and writes, each
// read and write in a transaction of its own on a connection of the pool.
// What the baselines change between them is how a write begins (BEGIN or
// BEGIN IMMEDIATE), how it waits for SQLite's lock (SQLite's busy handler,
// or polling at a constant interval) and whether writes take turns in
// arrival order. SQLite runs its own checkpoints, inside the commit that
// takes the WAL past 1,000 pages.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/loremnews/loremnews/sqlitedb"
)

// baseline is a setup on database/sql.
type baseline struct {
	conns   int               // the pool's size; 0: the read pool's default
	pragmas []sqlitedb.Pragma // on every connection
	// begin starts a write: BEGIN (deferred: the lock is taken at the first
	// write, and a transaction that read first cannot upgrade once another
	// connection committed) or BEGIN IMMEDIATE.
	begin string
	// poll, if set, is how often a write retries BEGIN while SQLite's lock
	// is taken (SQLite's busy timeout is then 0); unset, SQLite's busy
	// handler waits, backing off from 1 to 100 ms between tries.
	poll time.Duration
	// inTurn makes writes take turns in arrival order before they BEGIN
	// (a channel's blocked senders are served first come, first served).
	inTurn bool
}

// poolEngine runs a baseline.
type poolEngine struct {
	file    string
	pool    *sql.DB
	conns   int
	cfg     baseline
	timeout time.Duration
	turns   chan struct{} // with inTurn: one slot, taken in arrival order

	onWriteWait func(time.Duration)
	busyRetries atomic.Int64
	busyErrors  atomic.Int64

	closeOnce sync.Once
	closeErr  error
}

// openBaseline opens dsn's file with database/sql and the driver, b's
// pool and pragmas (after which the DSN's _pragma=name(value) parameters),
// and runs setup on one connection before anything else.
func openBaseline(ctx context.Context, dsn string, b baseline, cfg Config, setup func(context.Context, *sql.Conn) error) (*poolEngine, error) {
	file, params, pragmas, err := splitDSN(dsn)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, fmt.Errorf("sqlite: create the directory of %s: %w", file, err)
	}
	timeout := cfg.WriterTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	conns := b.conns
	if conns == 0 {
		conns = cfg.ReadConns
	}
	if conns <= 0 {
		conns = max(4, 2*runtime.GOMAXPROCS(0))
	}
	busy := timeout
	if b.poll > 0 {
		busy = 0
	}
	params.Set("_busy_timeout", strconv.FormatInt(busy.Milliseconds(), 10))
	params.Set("_stmt_cache_size", "64") // statements stay prepared per connection, as Rails keeps them
	all := append(append([]sqlitedb.Pragma{}, b.pragmas...), pragmas...)
	hook := func(c *sqlite3.SQLiteConn) error {
		for _, p := range all {
			if _, err := c.Exec("PRAGMA "+p.Name+" = "+p.Value, nil); err != nil {
				return fmt.Errorf("PRAGMA %s = %s: %w", p.Name, p.Value, err)
			}
		}
		return nil
	}
	pool := sql.OpenDB(driverConnector{dsn: "file:" + file + "?" + params.Encode(), driver: &sqlite3.SQLiteDriver{ConnectHook: hook}})
	pool.SetMaxOpenConns(conns)
	pool.SetMaxIdleConns(conns)
	pool.SetConnMaxLifetime(0)
	e := &poolEngine{file: file, pool: pool, conns: conns, cfg: b, timeout: timeout, onWriteWait: cfg.OnWriteWait}
	if b.inTurn {
		e.turns = make(chan struct{}, 1)
	}
	conn, err := pool.Conn(ctx)
	if err == nil {
		// Migrations wait for another process's write lock up to the
		// timeout, whatever the baseline's busy handling.
		if _, err = conn.ExecContext(ctx, `PRAGMA busy_timeout = `+strconv.FormatInt(timeout.Milliseconds(), 10)); err == nil {
			err = setup(ctx, conn)
			conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA busy_timeout = `+strconv.FormatInt(busy.Milliseconds(), 10))
		}
		conn.Close()
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", file, err)
	}
	return e, nil
}

// splitDSN splits a path or file: URI into the path, the driver's
// parameters and the _pragma=name(value) parameters.
func splitDSN(dsn string) (file string, params url.Values, pragmas []sqlitedb.Pragma, err error) {
	file, query, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	if file == "" || file == ":memory:" || strings.Contains(query, "mode=memory") {
		return "", nil, nil, errors.New("sqlite: in-memory databases are not supported; give a file path")
	}
	if params, err = url.ParseQuery(query); err != nil {
		return "", nil, nil, fmt.Errorf("sqlite: bad parameters in %q: %w", dsn, err)
	}
	for _, p := range params["_pragma"] {
		name, value, ok := strings.Cut(strings.TrimSuffix(p, ")"), "(")
		if !ok || !pragmaName(name) || !pragmaValue(value) {
			return "", nil, nil, fmt.Errorf("sqlite: bad _pragma %q: want name(value), e.g. _pragma=cache_size(-16000)", p)
		}
		pragmas = append(pragmas, sqlitedb.Pragma{Name: name, Value: value})
	}
	params.Del("_pragma")
	return file, params, pragmas, nil
}

func pragmaName(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz_") == ""
}

func pragmaValue(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == ""
}

// driverConnector opens the driver's connections for sql.OpenDB.
type driverConnector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
}

func (c driverConnector) Connect(context.Context) (driver.Conn, error) { return c.driver.Open(c.dsn) }
func (c driverConnector) Driver() driver.Driver                        { return c.driver }

// read runs fn in a read transaction (BEGIN … COMMIT) on a connection of
// the pool.
func (e *poolEngine) read(ctx context.Context, fn func(context.Context, querier) error) error {
	conn, err := e.pool.Conn(ctx)
	if err != nil {
		return e.result(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN`); err != nil {
		return e.result(err)
	}
	ended := false
	defer func() {
		if !ended { // fn failed or panicked, or COMMIT failed
			conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	if err := fn(ctx, sqlConn{conn}); err != nil {
		return e.result(err)
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return e.result(err)
	}
	ended = true
	return nil
}

// write runs fn in a write transaction on a connection of the pool, after
// the writes that came before it if writes take turns.
func (e *poolEngine) write(ctx context.Context, fn func(context.Context, execer) error) error {
	start := time.Now()
	if e.turns != nil {
		timer := time.NewTimer(e.timeout)
		select {
		case e.turns <- struct{}{}:
			timer.Stop()
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("waited %v for the turn to write: %w", e.timeout, sqlitedb.ErrTimeout)
		}
		defer func() { <-e.turns }()
	}
	conn, err := e.pool.Conn(ctx)
	if err != nil {
		return e.result(err)
	}
	defer conn.Close()
	err = e.begin(ctx, conn)
	if e.onWriteWait != nil {
		e.onWriteWait(time.Since(start))
	}
	if err != nil {
		return e.result(fmt.Errorf("begin: %w", err))
	}
	committed := false
	defer func() {
		if !committed {
			conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	if err := fn(ctx, sqlConn{conn}); err != nil {
		return e.result(err)
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return e.result(fmt.Errorf("commit: %w", err))
	}
	committed = true
	return nil
}

// begin runs the baseline's BEGIN, retrying every poll while the lock is
// taken, up to the timeout, if the baseline polls.
func (e *poolEngine) begin(ctx context.Context, conn *sql.Conn) error {
	var deadline time.Time
	for {
		_, err := conn.ExecContext(ctx, e.cfg.begin)
		if err == nil || e.cfg.poll == 0 || !sqlitedb.IsBusy(err) {
			return err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(e.timeout)
		} else if time.Now().After(deadline) {
			return err
		}
		e.busyRetries.Add(1)
		t := time.NewTimer(e.cfg.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// coalesce is write: a baseline shares no commits.
func (e *poolEngine) coalesce(ctx context.Context, fn func(context.Context, execer) error) error {
	return e.write(ctx, fn)
}

// result counts a busy error and marks it sqlitedb.ErrBusy, so the site
// answers it as the default setup does (503).
func (e *poolEngine) result(err error) error {
	if err == nil || !sqlitedb.IsBusy(err) {
		return err
	}
	e.busyErrors.Add(1)
	return fmt.Errorf("%w: %w", sqlitedb.ErrBusy, err)
}

// backup writes a compact copy of the database to path with VACUUM INTO.
func (e *poolEngine) backup(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("sqlite: backup: %s already exists", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	if _, err := e.pool.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		os.Remove(path)
		return fmt.Errorf("sqlite: backup to %s: %w", path, err)
	}
	return nil
}

func (e *poolEngine) path() string   { return e.file }
func (e *poolEngine) readConns() int { return e.conns }

func (e *poolEngine) stats() Stats {
	pool := e.pool.Stats()
	return Stats{SharedPool: true, Stats: sqlitedb.Stats{BusyRetries: e.busyRetries.Load(), BusyErrors: e.busyErrors.Load(), ReadPool: pool, WritePool: pool}}
}

// close runs PRAGMA optimize and truncates the WAL, as the default setup
// does, then closes the pool. Calls after the first return its result.
func (e *poolEngine) close() error {
	e.closeOnce.Do(func() { e.closeErr = e.closePool() })
	return e.closeErr
}

func (e *poolEngine) closePool() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	if _, err := e.pool.ExecContext(ctx, `PRAGMA optimize`); err != nil {
		errs = append(errs, fmt.Errorf("optimize: %w", err))
	}
	if _, err := e.pool.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		errs = append(errs, fmt.Errorf("checkpoint: %w", err))
	}
	errs = append(errs, e.pool.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close %s: %w", e.file, err)
	}
	return nil
}

// sqlConn is a pool's connection as querier and execer: database/sql's
// statements.
type sqlConn struct{ *sql.Conn }

func (c sqlConn) Query(ctx context.Context, query string, args ...any) (rows, error) {
	rs, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rs, nil
}

func (c sqlConn) QueryRow(ctx context.Context, query string, args ...any) row {
	return c.QueryRowContext(ctx, query, args...)
}

func (c sqlConn) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.ExecContext(ctx, query, args...)
}
