// Package sqlite implements loremnews.Store on an embedded SQLite database
// through mattn/go-sqlite3. SQL lives only in the store packages: this one
// and postgres/, its twin on PostgreSQL.
//
// How connections are set up is chosen by a Profile, so the experiment can
// run the same app on each of the setups the 2024 talk walked through (see
// profile.go). Every SQLite decision has its reason written beside it.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/mattn/go-sqlite3"
)

// Config says which file to open and how.
type Config struct {
	// DSN is a file path ("storage/loremnews.sqlite3") or a SQLite URI
	// ("file:storage/loremnews.sqlite3?_pragma=cache_size(-16000)"). Each
	// _pragma=name(value) parameter is run on every new connection after the
	// profile's own pragmas, replacing a profile pragma of the same name.
	// Other parameters go to the driver unchanged.
	DSN string
	// Profile is the connection setup; "" means ProfileSplit.
	Profile Profile
	// ReadConns caps the read pool (the shared pool for single-pool
	// profiles, but for naive and enhanced, which keep Rails's 5); 0 means
	// max(4, 2×GOMAXPROCS).
	ReadConns int
	// WriterTimeout bounds how long a write waits for its turn and for
	// SQLite's write lock; 0 means 5 s, SQLite's customary busy timeout.
	WriterTimeout time.Duration
	// OnWriteWait, if set, is told how long each write waited from asking
	// to write until its BEGIN returned: the writer queue plus the lock,
	// comparable across profiles (metrics use it).
	OnWriteWait func(time.Duration)
}

// DB is an open Lorem News database.
type DB struct {
	path          string
	profile       Profile
	spec          profileSpec
	readDB        *sql.DB         // reads: the read-only pool, or the shared pool
	writeDB       *sql.DB         // write transactions: one connection, or the shared pool
	queue         *writerQueue    // fair: writers take turns, one transaction each
	committer     *groupCommitter // batch: one goroutine commits queued writes together
	writerTimeout time.Duration

	// busyRetries counts BEGIN IMMEDIATE attempts that found the write lock
	// taken (by another process) and were retried after busyPollInterval.
	busyRetries atomic.Int64
	// busyErrors counts SQLITE_BUSY/LOCKED errors returned to callers: each
	// is a request that failed because the database was locked.
	busyErrors  atomic.Int64
	onWriteWait func(time.Duration)

	// now is the clock, replaceable in tests.
	now func() time.Time
}

// busyPollInterval is how often a writer that found SQLite's lock taken tries
// again, in the profiles that poll. A constant interval is the fix from the
// talk: SQLite's own busy handler backs off (1, 2, 5, … 100 ms), so the
// writer that has waited longest polls least often and loses to newcomers.
const busyPollInterval = time.Millisecond

var (
	pragmaNameRe  = regexp.MustCompile(`^[a-z_]+$`)
	pragmaValueRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	pragmaParamRe = regexp.MustCompile(`^([a-z_]+)\(([A-Za-z0-9_-]*)\)$`)
)

// Open opens (creating if needed) and migrates the database.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	path, params, userPragmas, err := parseDSN(cfg.DSN)
	if err != nil {
		return nil, err
	}
	if cfg.Profile == "" {
		cfg.Profile = ProfileSplit
	}
	spec, ok := profiles[cfg.Profile]
	if !ok {
		return nil, fmt.Errorf("sqlite: unknown profile %q (want one of %s)", cfg.Profile, strings.Join(ProfileNames(), ", "))
	}
	if cfg.ReadConns <= 0 {
		cfg.ReadConns = max(4, 2*runtime.GOMAXPROCS(0))
	}
	if cfg.WriterTimeout <= 0 {
		cfg.WriterTimeout = 5 * time.Second
	}
	if err := prepareDir(path); err != nil {
		return nil, err
	}

	db := &DB{
		path:          path,
		profile:       cfg.Profile,
		spec:          spec,
		writerTimeout: cfg.WriterTimeout,
		onWriteWait:   cfg.OnWriteWait,
		now:           func() time.Time { return time.Now().UTC() },
	}
	if spec.writerQueue {
		db.queue = newWriterQueue()
	}

	writePragmas := mergePragmas(spec.pragmas, userPragmas)
	if spec.stmtCache > 0 && !params.Has("_stmt_cache_size") {
		params.Set("_stmt_cache_size", strconv.Itoa(spec.stmtCache))
	}
	db.writeDB = sql.OpenDB(newConnector(path, params, spec.writerBusyTimeout(cfg.WriterTimeout), spec.txlock(), writePragmas))
	if spec.sharedPool {
		// One pool for everything, as a framework gives you by default,
		// of Rails's default size in the profiles that mirror Rails.
		size := cfg.ReadConns
		if spec.sharedPoolMax > 0 {
			size = spec.sharedPoolMax
		}
		db.writeDB.SetMaxOpenConns(size)
		db.writeDB.SetMaxIdleConns(size)
		db.readDB = db.writeDB
	} else {
		// Exactly one write connection: SQLite allows one writer at a time
		// anyway, and a second connection would only wait on the lock.
		db.writeDB.SetMaxOpenConns(1)
		db.writeDB.SetMaxIdleConns(1)
		// The read pool: query_only so a bug can never write through it;
		// SQLite's own busy timeout is fine here because in WAL mode readers
		// only ever wait on crash recovery, never on a writer.
		readPragmas := mergePragmas(append(append([]pragma{}, spec.pragmas...), pragma{"query_only", "ON"}), userPragmas)
		db.readDB = sql.OpenDB(newConnector(path, params, 5*time.Second, "deferred", readPragmas))
		db.readDB.SetMaxOpenConns(cfg.ReadConns)
		db.readDB.SetMaxIdleConns(cfg.ReadConns)
	}
	// Connections are cheap to keep and costly to reopen (each reparses the
	// schema), so never expire them.
	db.writeDB.SetConnMaxLifetime(0)
	db.readDB.SetConnMaxLifetime(0)

	if spec.groupCommit {
		db.committer = newGroupCommitter(db)
	}
	if err := db.writeDB.PingContext(ctx); err != nil {
		db.closePools()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, describeOpenError(err))
	}
	if err := db.migrate(ctx); err != nil {
		db.closePools()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", path, describeOpenError(err))
	}
	return db, nil
}

// Path is the database file's path.
func (db *DB) Path() string { return db.path }

// Name is the database file's path (loremnews.Database).
func (db *DB) Name() string { return db.path }

// Engine is "sqlite".
func (db *DB) Engine() string { return "sqlite" }

// Profile is the connection setup in use.
func (db *DB) Profile() Profile { return db.profile }

// Ping reports whether the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.readDB.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// Close runs PRAGMA optimize (so the query planner's statistics stay fresh
// for the next start), checkpoints the WAL into the main file and truncates
// it, then closes both pools. It is safe to call more than once.
func (db *DB) Close() error {
	if db.writeDB == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	if _, err := db.writeDB.ExecContext(ctx, `PRAGMA optimize`); err != nil {
		errs = append(errs, fmt.Errorf("optimize: %w", err))
	}
	// TRUNCATE waits for readers of this process (they are done by now) and
	// leaves a zero-length WAL, so a copied file is complete on its own.
	if _, err := db.writeDB.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		errs = append(errs, fmt.Errorf("checkpoint: %w", err))
	}
	errs = append(errs, db.closePools())
	db.writeDB, db.readDB = nil, nil
	return errors.Join(errs...)
}

func (db *DB) closePools() error {
	if db.committer != nil {
		db.committer.close()
	}
	var errs []error
	if db.readDB != nil && db.readDB != db.writeDB {
		errs = append(errs, db.readDB.Close())
	}
	if db.writeDB != nil {
		errs = append(errs, db.writeDB.Close())
	}
	return errors.Join(errs...)
}

// querier is what read helpers need: a pool, a connection or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// read runs fn against the read pool. In profiles that poll for SQLite's lock
// instead of using its busy handler, a read that meets SQLITE_BUSY (possible
// in WAL mode only while another connection recovers the WAL) is retried.
func (db *DB) read(ctx context.Context, fn func(q querier) error) error {
	if !db.spec.pollBusy && !db.spec.gemBusy || db.readDB != db.writeDB {
		return db.mapError(fn(db.readDB))
	}
	deadline := time.Now().Add(db.writerTimeout)
	for count := 0; ; count++ {
		err := fn(db.readDB)
		if err == nil || !isBusy(err) || !db.retryBusy(count, deadline) {
			return db.mapError(err)
		}
		if err := sleepCtx(ctx, db.busyInterval()); err != nil {
			return db.mapError(err)
		}
	}
}

// retryBusy decides whether the count-th SQLITE_BUSY (from 0) of one
// statement is retried: the gem's rule in the enhanced profile, the
// deadline in the polling ones.
func (db *DB) retryBusy(count int, deadline time.Time) bool {
	if db.spec.gemBusy {
		return gemBusyHandler(count, db.writerTimeout)
	}
	return db.spec.pollBusy && !time.Now().After(deadline)
}

// busyInterval is the sleep before the next try after SQLITE_BUSY.
func (db *DB) busyInterval() time.Duration {
	if db.spec.gemBusy {
		return gemRetryInterval
	}
	return busyPollInterval
}

// readSnapshot runs fn's queries in one read transaction on one read
// connection: one snapshot for the whole page, and one start of a read
// transaction instead of one per query. The latter matters because a
// connection drops its whole page cache when its read transaction starts
// after another connection committed — here, nearly always — so separate
// queries would each read the shared pages (b-tree roots, the users
// table) again. Single-pool profiles, whose connections begin IMMEDIATE,
// keep one implicit transaction per query.
func (db *DB) readSnapshot(ctx context.Context, fn func(q querier) error) error {
	if db.readDB == db.writeDB {
		return db.read(ctx, fn)
	}
	conn, err := db.readDB.Conn(ctx)
	if err != nil {
		return db.mapError(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN`); err != nil {
		return db.mapError(err)
	}
	err = fn(conn)
	// Ending a read transaction cannot fail for a reason worth reporting
	// over fn's, but it must run even if ctx is done, or the connection
	// would go back to the pool inside a transaction.
	if _, cerr := conn.ExecContext(context.WithoutCancel(ctx), `COMMIT`); err == nil {
		err = cerr
	}
	return db.mapError(err)
}

// write runs fn in one write transaction and commits it. In order:
//  1. with a writer queue, wait for this process's earlier writers to finish
//     (first come, first served), at most WriterTimeout;
//  2. BEGIN (IMMEDIATE in every profile but naive, so the write lock is taken
//     up front: a deferred transaction that reads and then writes fails with
//     SQLITE_BUSY at once if another writer committed since its read, and no
//     busy timeout can help it);
//  3. fn, then COMMIT. Any error rolls back.
//
// In the batch profile the group committer does all three for the writes
// queued at that moment together (group_commit.go). fn gets the context to
// run its statements with: the request's, or in a batch one that keeps the
// request's values but cannot be cancelled.
func (db *DB) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if db.committer != nil {
		return db.mapError(db.committer.submit(ctx, fn))
	}
	// WriterTimeout bounds the wait for the turn and the lock, not the
	// transaction itself (a large seed may take longer).
	start := time.Now()
	deadline := start.Add(db.writerTimeout)
	if db.queue != nil {
		qctx, cancel := context.WithDeadline(ctx, deadline)
		release, err := db.queue.acquire(qctx)
		cancel()
		if err != nil {
			db.observeWriteWait(start)
			return db.mapError(fmt.Errorf("wait for writer turn: %w", err))
		}
		defer release()
	}
	tx, err := db.beginWrite(ctx, deadline)
	db.observeWriteWait(start)
	if err != nil {
		return db.mapError(fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback()
	if err := fn(ctx, tx); err != nil {
		return db.mapError(err)
	}
	if err := tx.Commit(); err != nil {
		return db.mapError(fmt.Errorf("commit: %w", err))
	}
	return nil
}

// beginWrite starts a write transaction. Where the profile polls, a BEGIN
// IMMEDIATE that finds the lock held by another connection is retried every
// busyPollInterval until the deadline, or on the gem's schedule in the
// enhanced profile; elsewhere SQLite's busy handler does the waiting inside
// the BEGIN. The transaction lives as long as ctx.
func (db *DB) beginWrite(ctx context.Context, deadline time.Time) (*sql.Tx, error) {
	for count := 0; ; count++ {
		tx, err := db.writeDB.BeginTx(ctx, nil)
		if err == nil || !isBusy(err) || !db.retryBusy(count, deadline) {
			return tx, err
		}
		db.busyRetries.Add(1)
		if err := sleepCtx(ctx, db.busyInterval()); err != nil {
			return nil, err
		}
	}
}

func (db *DB) observeWriteWait(start time.Time) {
	if db.onWriteWait != nil {
		db.onWriteWait(time.Since(start))
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Stats is a snapshot of the data layer's counters, for /metrics and tests.
type Stats struct {
	Profile     Profile
	BusyRetries int64
	BusyErrors  int64
	Writer      WriterQueueStats
	ReadPool    sql.DBStats
	WritePool   sql.DBStats
	SharedPool  bool
}

// Stats returns the current counters.
func (db *DB) Stats() Stats {
	s := Stats{
		Profile:     db.profile,
		BusyRetries: db.busyRetries.Load(),
		BusyErrors:  db.busyErrors.Load(),
		ReadPool:    db.readDB.Stats(),
		WritePool:   db.writeDB.Stats(),
		SharedPool:  db.readDB == db.writeDB,
	}
	if db.queue != nil {
		s.Writer = db.queue.stats()
	}
	if db.committer != nil {
		s.Writer = db.committer.snapshot()
	}
	return s
}

// pragma is one PRAGMA statement run on every new connection.
type pragma struct{ name, value string }

// mergePragmas returns base with each override replacing the pragma of the
// same name, or appended if base has none.
func mergePragmas(base, overrides []pragma) []pragma {
	out := append([]pragma{}, base...)
next:
	for _, o := range overrides {
		for i := range out {
			if out[i].name == o.name {
				out[i] = o
				continue next
			}
		}
		out = append(out, o)
	}
	return out
}

// parseDSN splits a path or file: URI into the file path, the parameters for
// the driver, and the _pragma=name(value) parameters.
func parseDSN(dsn string) (path string, params url.Values, pragmas []pragma, err error) {
	if dsn == "" {
		return "", nil, nil, errors.New("sqlite: empty database path")
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return "", nil, nil, fmt.Errorf("sqlite: %q is a PostgreSQL URL; this build serves SQLite only", dsn)
	}
	path, query, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	if path == "" || path == ":memory:" || strings.Contains(query, "mode=memory") {
		// Each pooled connection would get its own empty database.
		return "", nil, nil, errors.New("sqlite: in-memory databases are not supported; give a file path")
	}
	params, err = url.ParseQuery(query)
	if err != nil {
		return "", nil, nil, fmt.Errorf("sqlite: bad parameters in %q: %w", dsn, err)
	}
	for _, p := range params["_pragma"] {
		m := pragmaParamRe.FindStringSubmatch(p)
		if m == nil || !pragmaNameRe.MatchString(m[1]) || !pragmaValueRe.MatchString(m[2]) {
			return "", nil, nil, fmt.Errorf("sqlite: bad _pragma %q: want name(value), e.g. _pragma=cache_size(-16000)", p)
		}
		pragmas = append(pragmas, pragma{m[1], m[2]})
	}
	params.Del("_pragma")
	for _, reserved := range []string{"_txlock", "_busy_timeout", "_timeout", "mode"} {
		if params.Has(reserved) {
			return "", nil, nil, fmt.Errorf("sqlite: parameter %s is set by the profile; use --profile (or _pragma=busy_timeout(ms))", reserved)
		}
	}
	return path, params, pragmas, nil
}

// prepareDir makes sure the database's directory exists and the path is not
// a directory, so the error names the real problem rather than SQLite's
// generic "unable to open database file".
func prepareDir(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("sqlite: %s is a directory, not a database file", path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sqlite: create directory for %s: %w", path, err)
	}
	return nil
}

// connector opens connections with the given settings; sql.OpenDB calls it
// for every new pooled connection, so every connection gets the pragmas.
type connector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
}

func newConnector(path string, params url.Values, busyTimeout time.Duration, txlock string, pragmas []pragma) *connector {
	p := url.Values{}
	for k, v := range params {
		p[k] = v
	}
	for _, pr := range pragmas {
		if pr.name == "busy_timeout" { // user override of the profile's timeout
			fmt.Sscan(pr.value, &busyTimeout)
			busyTimeout *= time.Millisecond
		}
	}
	// The driver runs busy_timeout before anything else on a new connection,
	// which matters: setting journal_mode=WAL needs a lock, and without a
	// timeout it fails at once if another connection is mid-write.
	p.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	p.Set("_txlock", txlock)
	// database/sql never shares a connection between goroutines, so
	// SQLite's per-connection mutex is pure overhead (multi-thread mode).
	if !p.Has("_mutex") {
		p.Set("_mutex", "no")
	}
	var stmts []string
	for _, pr := range pragmas {
		if pr.name != "busy_timeout" {
			stmts = append(stmts, fmt.Sprintf("PRAGMA %s = %s", pr.name, pr.value))
		}
	}
	hook := func(c *sqlite3.SQLiteConn) error {
		for _, s := range stmts {
			if _, err := c.Exec(s, nil); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	}
	return &connector{
		dsn:    "file:" + path + "?" + p.Encode(),
		driver: &sqlite3.SQLiteDriver{ConnectHook: hook},
	}
}

func (c *connector) Connect(context.Context) (driver.Conn, error) { return c.driver.Open(c.dsn) }
func (c *connector) Driver() driver.Driver                        { return c.driver }

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended code).
func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
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

// DB is the SQLite implementation of the store the web layer uses.
var _ loremnews.Database = (*DB)(nil)
