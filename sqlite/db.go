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
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlitedb"
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
	readDB        *sql.DB       // reads: the read-only pool, or the shared pool
	writeDB       *sql.DB       // write transactions: one connection, or the shared pool
	writer        *writer       // where the profile has one: the goroutine that runs every write
	checkpointer  *checkpointer // where the profile has one: WAL checkpoints off the writer's path
	readers       chan struct{} // with a read pool of its own: one slot per read connection, taken first come, first served
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
		db.readers = make(chan struct{}, cfg.ReadConns)
	}
	// Connections are cheap to keep and costly to reopen (each reparses the
	// schema), so never expire them.
	db.writeDB.SetConnMaxLifetime(0)
	db.readDB.SetConnMaxLifetime(0)

	switch {
	case spec.groupCommit:
		db.writer = newWriter(db, groupCommitBatch)
	case spec.writerQueue:
		db.writer = newWriter(db, 1)
	}
	if err := db.writeDB.PingContext(ctx); err != nil {
		db.closePools()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, describeOpenError(err))
	}
	if spec.checkpointer {
		if err := db.startCheckpointer(ctx, path, params, writePragmas); err != nil {
			db.closePools()
			return nil, fmt.Errorf("sqlite: open %s: %w", path, describeOpenError(err))
		}
	}
	if err := db.migrate(ctx); err != nil {
		db.closePools()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", path, describeOpenError(err))
	}
	return db, nil
}

// startCheckpointer sets the WAL hook on the one write connection and
// starts the checkpointer on a connection of its own. Its busy timeout is
// 0: a checkpoint never waits for a lock, it tries again on the next
// signal.
func (db *DB) startCheckpointer(ctx context.Context, path string, params url.Values, pragmas []pragma) error {
	conn, err := db.writeDB.Conn(ctx)
	if err != nil {
		return err
	}
	frames, err := sqlitedb.WatchWAL(ctx, conn)
	conn.Close()
	if err != nil {
		return err
	}
	ckdb := sql.OpenDB(newConnector(path, params, 0, "deferred", pragmas))
	ckdb.SetMaxOpenConns(1)
	ckdb.SetMaxIdleConns(1)
	ckdb.SetConnMaxLifetime(0)
	db.checkpointer = newCheckpointer(ckdb, db.writeDB, frames)
	return nil
}

// Name is the database file's path, for messages (loremnews.Database).
func (db *DB) Name() string { return db.path }

// Describe is "profile NAME": the connection setup is what tells SQLite
// runs apart.
func (db *DB) Describe() string { return "profile " + string(db.profile) }

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
	if db.checkpointer != nil {
		// Stopped first: the TRUNCATE below must not meet it checkpointing.
		errs = append(errs, db.checkpointer.close())
	}
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
	if db.writer != nil {
		db.writer.close()
	}
	var errs []error
	if db.checkpointer != nil {
		errs = append(errs, db.checkpointer.close())
	}
	if db.readDB != nil && db.readDB != db.writeDB {
		errs = append(errs, db.readDB.Close())
	}
	if db.writeDB != nil {
		errs = append(errs, db.writeDB.Close())
	}
	return errors.Join(errs...)
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
	if db.writer != nil {
		s.Writer = db.writer.snapshot()
	}
	return s
}

// DatabaseStats reports the counters in the store-neutral form /metrics reads.
func (db *DB) DatabaseStats() loremnews.DatabaseStats {
	s := db.Stats()
	out := loremnews.DatabaseStats{
		Setup: string(s.Profile),
		Lock:  &loremnews.LockStats{BusyRetries: s.BusyRetries, BusyErrors: s.BusyErrors},
		WriterQueue: &loremnews.WriterQueueStats{Depth: s.Writer.Depth, MaxDepth: s.Writer.MaxDepth,
			Turns: s.Writer.Turns, Abandoned: s.Writer.Abandoned, Commits: s.Writer.Commits},
	}
	pool := func(name string, p sql.DBStats) loremnews.PoolStats {
		return loremnews.PoolStats{Name: name, Open: p.OpenConnections, InUse: p.InUse, Waits: p.WaitCount, WaitTime: p.WaitDuration}
	}
	if s.SharedPool {
		out.Pools = []loremnews.PoolStats{pool("shared", s.WritePool)}
	} else {
		out.Pools = []loremnews.PoolStats{pool("write", s.WritePool), pool("read", s.ReadPool)}
	}
	return out
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

// DB is the SQLite implementation of the store the web layer uses.
var _ loremnews.Database = (*DB)(nil)
