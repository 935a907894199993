package setups

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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/loremnews/loremnews/sqlite"
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
	cfg     baseline
	timeout time.Duration
	turns   chan struct{} // with inTurn: one slot, taken in arrival order

	onWriteWait func(time.Duration)
	busyRetries atomic.Int64
	busyErrors  atomic.Int64

	closeOnce sync.Once
	closeErr  error
}

// openBaseline opens cfg.DSN's file with database/sql and the driver, b's
// pool and pragmas (after which the DSN's _pragma=name(value) parameters),
// runs s.Conn on every new connection and s.Migrate on one before anything
// else.
func openBaseline(ctx context.Context, cfg sqlite.Config, b baseline, s sqlite.Hooks) (*poolEngine, error) {
	file, params, pragmas, err := splitDSN(cfg.DSN)
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
		if s.Conn != nil {
			return s.Conn(c)
		}
		return nil
	}
	pool := sql.OpenDB(driverConnector{dsn: "file:" + file + "?" + params.Encode(), driver: &sqlite3.SQLiteDriver{ConnectHook: hook}})
	pool.SetMaxOpenConns(conns)
	pool.SetMaxIdleConns(conns)
	pool.SetConnMaxLifetime(0)
	e := &poolEngine{file: file, pool: pool, cfg: b, timeout: timeout, onWriteWait: cfg.OnWriteWait}
	if b.inTurn {
		e.turns = make(chan struct{}, 1)
	}
	conn, err := pool.Conn(ctx)
	if err == nil && s.Migrate != nil {
		// Migrations wait for another process's write lock up to the
		// timeout, whatever the baseline's busy handling.
		if _, err = conn.ExecContext(ctx, `PRAGMA busy_timeout = `+strconv.FormatInt(timeout.Milliseconds(), 10)); err == nil {
			err = s.Migrate(ctx, conn)
			conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA busy_timeout = `+strconv.FormatInt(busy.Milliseconds(), 10))
		}
	}
	if conn != nil {
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
	if scheme, _, ok := strings.Cut(dsn, "://"); ok && !strings.ContainsAny(scheme, "/?") {
		return "", nil, nil, fmt.Errorf("sqlite: %q is a %s URL, not a SQLite file path or file: URI", dsn, scheme)
	}
	file, query, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	if file == "" || file == ":memory:" || strings.Contains(query, "mode=memory") {
		return "", nil, nil, errors.New("sqlite: in-memory databases are not supported; give a file path")
	}
	if params, err = url.ParseQuery(query); err != nil {
		return "", nil, nil, fmt.Errorf("sqlite: bad parameters in %q: %w", dsn, err)
	}
	// What the baseline sets itself, as sqlitedb refuses it: how writes
	// begin and wait, and a database opened to be written.
	for _, reserved := range []string{"_txlock", "_busy_timeout", "_timeout", "_stmt_cache_size"} {
		if params.Has(reserved) {
			return "", nil, nil, fmt.Errorf("sqlite: parameter %s is set by the setup", reserved)
		}
	}
	if mode := params.Get("mode"); mode != "" && mode != "rwc" {
		return "", nil, nil, fmt.Errorf("sqlite: mode=%s: the setups open a database read-write, creating it if needed", mode)
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

// Read runs fn in a read transaction (BEGIN … COMMIT) on a connection of
// the pool.
func (e *poolEngine) Read(ctx context.Context, fn func(context.Context, sqlite.Querier) error) error {
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

// Write runs fn in a write transaction on a connection of the pool, after
// the writes that came before it if writes take turns.
func (e *poolEngine) Write(ctx context.Context, fn func(context.Context, sqlite.Execer) error) error {
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

// Coalesce is Write: a baseline shares no commits.
func (e *poolEngine) Coalesce(ctx context.Context, fn func(context.Context, sqlite.Execer) error) error {
	return e.Write(ctx, fn)
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

// Backup writes a compact copy of the database to path with VACUUM INTO,
// in one go: a baseline neither paces it nor reports progress.
func (e *poolEngine) Backup(ctx context.Context, path string, _ *sqlitedb.BackupOptions) error {
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

func (e *poolEngine) Path() string { return e.file }

// Stats are the busy counters, and the one pool as both ReadPool and
// WritePool: a baseline has no writer or checkpointer of its own.
func (e *poolEngine) Stats() sqlitedb.Stats {
	pool := e.pool.Stats()
	return sqlitedb.Stats{BusyRetries: e.busyRetries.Load(), BusyErrors: e.busyErrors.Load(), ReadPool: pool, WritePool: pool}
}

// Collectors are the busy counters under sqlitedb's names, and the one
// pool as database/sql's go_sql_… metrics with db_name="namespace".
func (e *poolEngine) Collectors(namespace string) []prometheus.Collector {
	busy := func(name, help string, v func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Subsystem: "sqlite", Name: name, Help: help},
			func() float64 { return float64(v()) })
	}
	return []prometheus.Collector{
		busy("busy_retries_total", "BEGINs retried because another connection held the lock.", e.busyRetries.Load),
		busy("busy_errors_total", "Reads and writes that failed because the database was locked.", e.busyErrors.Load),
		collectors.NewDBStatsCollector(e.pool, namespace)}
}

// Close runs PRAGMA optimize and truncates the WAL, as the default setup
// does, then closes the pool. Calls after the first return its result.
func (e *poolEngine) Close() error {
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

// sqlConn is a pool's connection as Querier and Execer: database/sql's
// statements.
type sqlConn struct{ *sql.Conn }

func (c sqlConn) Query(ctx context.Context, query string, args ...any) (sqlite.Rows, error) {
	rs, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rs, nil
}

func (c sqlConn) QueryRow(ctx context.Context, query string, args ...any) sqlite.Row {
	return c.QueryRowContext(ctx, query, args...)
}

func (c sqlConn) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.ExecContext(ctx, query, args...)
}
