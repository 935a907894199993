//go:build cgo

package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
)

// DB is an open SQLite database: a read pool, one write connection, the
// goroutine that writes on it and the goroutine that checkpoints. It is
// safe for concurrent use.
type DB struct {
	path    string
	opts    Options
	pragmas []Pragma // run on every connection
	dsn     dsn
	// readOnly: opened with mode=ro (openReadOnly): no writeDB, writer or
	// checkpointer.
	readOnly bool

	readDB  *sql.DB       // reads: the query_only pool
	writeDB *sql.DB       // writes: one connection
	readers chan struct{} // one slot per read connection, taken in arrival order

	writer       *writer
	queue        *processQueue // nil: writers poll for SQLite's lock
	checkpointer *checkpointer
	stopped      *failStop // set once a sync of the database file failed

	busyRetries atomic.Int64 // BEGINs retried after SQLITE_BUSY
	busyErrors  atomic.Int64 // SQLITE_BUSY errors returned to callers
	timeouts    atomic.Int64 // ErrTimeout errors returned to callers
	readWaits   atomic.Int64 // reads that found every read connection taken
	readWaitNs  atomic.Int64 // their total wait, in nanoseconds

	closeOnce sync.Once
	closed    atomic.Bool
	closeErr  error
}

// Open opens the SQLite database at dsn, creating the file and its
// directory if needed, with opts (nil: the defaults).
//
// dsn is a file path ("data/app.db") or a file: URI
// ("file:data/app.db?_pragma=synchronous(FULL)"). Each
// _pragma=name(value) parameter replaces the pragma of that name from
// DefaultPragmas and Options.Pragmas. mode=ro (or immutable=1, for a file
// nothing will change, on read-only media) opens the database read-only:
// reads only, with no writer, no checkpointer and no Setup; Write and
// Coalesce return ErrReadOnly, and the file's journal mode stays as it is.
// A WAL-mode file opens read-only only with its -wal and -shm beside it,
// or in a folder the reader may create them in (SQLite's rule); the
// package's connections keep both when the last of them closes the file,
// and a Backup copy is not a WAL-mode file, so it needs neither.
//
// The writers of every process that opens the file with this package take
// turns in arrival order, through a small file beside it (app.db-queue
// beside app.db, with the database file's permissions): a process waits
// for the turn asleep, is woken when it comes, and never overtakes one
// that asked before it, while SQLite's write lock stays the only thing
// correctness rests on (a program without the queue, such as the sqlite3
// shell, writes beside it as before). A process killed holding the turn
// holds the others up for at most a few milliseconds. _writers=poll turns
// the queue off: the writers of several processes then poll for SQLite's
// lock every millisecond, in no order. Where the queue cannot be set up
// (not Linux; a network or FUSE file system, whose shared maps and locks
// it cannot count on; a file it cannot create, or a full disk), writers
// poll, and Stats().Writer.Queue and a log line say why.
//
// The queue's file is handled as SQLite handles its -shm: it is beside
// the database file's real path (every path to one file, symbolic links
// included, finds one queue); a symbolic link at its name is never
// followed; its mode and owner are set only by the call that created it;
// only a regular file with one link, of the database's owner (or this
// process's user) and of a queue's size is used. A queue file deleted or
// replaced while processes run is noticed at the next turn, and the one
// at the path used instead; one cut short or overwritten turns the queue
// off in every process using it, which goes on polling. Waiting for the
// lock that guards the file's set-up is bounded by ctx (Open fails with
// its error) and Options.Timeout (the queue is then off).
//
// The package sets _txlock, _busy_timeout and _timeout itself and refuses
// them; other parameters go to github.com/mattn/go-sqlite3, which hands the
// URI to SQLite. In-memory databases are refused: every connection of a
// pool would get its own.
func Open(ctx context.Context, dsnString string, opts *Options) (*DB, error) {
	d, err := parseDSN(dsnString)
	if err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	pragmas := mergePragmas(DefaultPragmas(), o.Pragmas, d.pragmas)
	if err := checkPragmas(pragmas); err != nil {
		return nil, err
	}
	if d.readOnly {
		return openReadOnly(ctx, d, o, pragmas)
	}
	if err := prepareDir(d.path); err != nil {
		return nil, err
	}
	db := &DB{path: d.path, opts: o, pragmas: pragmas, dsn: d, stopped: &failStop{path: d.path}}

	// Writes poll for SQLite's lock themselves (whileBusy): SQLite's
	// busy timeout is 0 on the write connection.
	db.writeDB = sql.OpenDB(db.connector(noBusyTimeout, pragmas, o.StatementCache))
	// Exactly one write connection: SQLite allows one writer at a time
	// anyway, and a second connection would only wait on the lock.
	db.writeDB.SetMaxOpenConns(1)
	db.writeDB.SetMaxIdleConns(1)
	// The read pool is query_only, so a bug can never write through it.
	// SQLite's own busy handler is fine here: in WAL mode a reader waits
	// only on crash recovery, never on a writer.
	readPragmas := mergePragmas(pragmas, []Pragma{{"query_only", "ON"}})
	db.readDB = sql.OpenDB(db.connector(o.Timeout, readPragmas, o.StatementCache))
	db.readDB.SetMaxOpenConns(o.ReadConns)
	db.readDB.SetMaxIdleConns(o.ReadConns)
	db.readers = make(chan struct{}, o.ReadConns)
	// Connections are cheap to keep and costly to reopen (each parses the
	// schema again), so they never expire.
	db.writeDB.SetConnMaxLifetime(0)
	db.readDB.SetConnMaxLifetime(0)

	fail := func(what string, err error) (*DB, error) {
		if db.checkpointer != nil { // not yet started if the first ping failed
			db.checkpointer.close()
		}
		db.closePools()
		return nil, fmt.Errorf("sqlitedb: %s %s: %w", what, d.path, describeOpenError(err, false))
	}
	if err := db.writeDB.PingContext(ctx); err != nil {
		return fail("open", err)
	}
	if err := db.startCheckpointer(ctx); err != nil {
		return fail("open", err)
	}
	if o.Setup != nil {
		if err := db.setup(ctx); err != nil {
			return fail("set up", err)
		}
	}
	if (o.MemoryMap || d.params.Get("vfs") == mapVFSName) && !isMapped(d.path) {
		// The VFS leaves a file unmapped where it cannot map it safely (a
		// 32-bit address space, a default VFS other than SQLite's unix
		// one, a descriptor it does not recognise): reads then use pread.
		slog.Warn("sqlitedb: the memory map was asked for but the database file is not mapped; reads use pread", "path", d.path)
	}
	queueState := "off: _writers=poll"
	if !d.pollWriters {
		q, err := openProcessQueue(ctx, d.path, o.Timeout)
		switch {
		case err == nil:
			db.queue, queueState = q, "on"
		case ctx.Err() != nil:
			return fail("open", err)
		default:
			queueState = "off: " + err.Error()
			if !errors.Is(err, errQueueRemote) {
				slog.Warn("sqlitedb: the writers of several processes will poll for the lock", "path", d.path, "err", err)
			}
		}
	}
	db.writer = newWriter(writerConfig{pool: db.writeDB, timeout: o.Timeout, owner: db,
		onWait: o.OnWriteWait, committed: db.checkpointer.committed, busyRetries: &db.busyRetries,
		procQueue: db.queue, queueState: queueState})
	return db, nil
}

// openReadOnly is Open for a read-only DSN: the read pool alone.
func openReadOnly(ctx context.Context, d dsn, o Options, pragmas []Pragma) (*DB, error) {
	if o.Setup != nil {
		return nil, fmt.Errorf("sqlitedb: open %s: Options.Setup needs the database opened read-write, not mode=ro", d.path)
	}
	// The file's journal mode is the file's: a read-only connection cannot
	// change it, and reads in either mode work.
	pragmas = slices.DeleteFunc(pragmas, func(p Pragma) bool { return p.Name == "journal_mode" })
	db := &DB{path: d.path, opts: o, pragmas: pragmas, dsn: d, stopped: &failStop{path: d.path}, readOnly: true}
	db.readDB = sql.OpenDB(db.connector(o.Timeout, mergePragmas(pragmas, []Pragma{{"query_only", "ON"}}), o.StatementCache))
	db.readDB.SetMaxOpenConns(o.ReadConns)
	db.readDB.SetMaxIdleConns(o.ReadConns)
	db.readDB.SetConnMaxLifetime(0)
	db.readers = make(chan struct{}, o.ReadConns)
	if err := db.readDB.PingContext(ctx); err != nil {
		db.readDB.Close()
		return nil, fmt.Errorf("sqlitedb: open %s read-only: %w", d.path, describeOpenError(err, true))
	}
	return db, nil
}

// noBusyTimeout is the busy timeout of a connection that never waits in
// SQLite's busy handler: the writer's polls for the lock itself
// (whileBusy), and a checkpoint that finds a lock tries again later.
const noBusyTimeout = 0

// connector is newConnector for the DB's file and VFS, with a busy timeout
// of busy (SQLite waits up to Options.Timeout while a new connection sets
// its pragmas), whose connections share the DB's fail-stop.
func (db *DB) connector(busy time.Duration, pragmas []Pragma, stmtCache int) *connector {
	c := newConnector(db.dsn, connectorConfig{busyTimeout: busy, openTimeout: db.opts.Timeout, pragmas: pragmas,
		stmtCache: stmtCache, memoryMap: db.opts.MemoryMap, connectHook: db.opts.ConnectHook})
	c.stopped = db.stopped
	return c
}

// setup runs Options.Setup on the write connection with SQLite's busy
// timeout raised to Timeout for the while.
func (db *DB) setup(ctx context.Context) error {
	conn, err := db.writeDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	bg := context.WithoutCancel(ctx)
	if _, err := conn.ExecContext(ctx, `PRAGMA busy_timeout = `+strconv.FormatInt(db.opts.Timeout.Milliseconds(), 10)); err != nil {
		return err
	}
	defer conn.ExecContext(bg, `PRAGMA busy_timeout = 0`)
	err = db.opts.Setup(ctx, conn)
	// Setup must leave no transaction open: the connection goes on to serve
	// every write. If it did, roll it back and say so.
	var autocommit bool
	if aerr := conn.Raw(func(dc any) error { autocommit = dc.(*driverConn).AutoCommit(); return nil }); aerr == nil && !autocommit {
		conn.ExecContext(bg, `ROLLBACK`)
		if err == nil {
			err = errors.New("setup returned inside a transaction (it was rolled back)")
		}
	}
	return err
}

// startCheckpointer sets the WAL hook on the one write connection and
// starts the checkpointer on a connection of its own. Its busy timeout is
// 0: a checkpoint never waits for a lock, it tries again on the next
// signal.
func (db *DB) startCheckpointer(ctx context.Context) error {
	conn, err := db.writeDB.Conn(ctx)
	if err != nil {
		return err
	}
	frames, err := watchWAL(ctx, conn)
	conn.Close()
	if err != nil {
		return err
	}
	ckdb := sql.OpenDB(db.connector(noBusyTimeout, db.pragmas, noStatementCache))
	ckdb.SetMaxOpenConns(1)
	ckdb.SetMaxIdleConns(1)
	ckdb.SetConnMaxLifetime(0)
	db.checkpointer = newCheckpointer(ckdb, db.writeDB, frames, db.stopped)
	return nil
}

// Path is the database file's path.
func (db *DB) Path() string { return db.path }

// Close lets the writes already queued finish, runs PRAGMA optimize (so the
// query planner's statistics stay fresh for the next start), checkpoints
// the WAL into the database file and truncates it, then closes every
// connection. Reads and writes that arrive meanwhile get ErrClosed. Calls
// after the first return the first's result.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.closed.Store(true)
		if db.readOnly {
			if err := db.readDB.Close(); err != nil {
				db.closeErr = fmt.Errorf("sqlitedb: close %s: %w", db.path, err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var errs []error
		db.writer.close() // runs what is queued, then stops
		if db.queue != nil {
			db.queue.close()
		}
		// Stopped next: the TRUNCATE below must not meet it.
		errs = append(errs, db.checkpointer.close())
		if err := db.optimize(ctx); err != nil {
			errs = append(errs, fmt.Errorf("optimize: %w", err))
		}
		// TRUNCATE leaves a zero-length WAL, so the file is complete on its
		// own (a copy of it alone is the whole database) — unless a sync of
		// the file failed: then the WAL keeps every frame, and the
		// connections close without SQLite's own checkpoint (failStop).
		if err := db.stopped.err(); err != nil {
			errs = append(errs, fmt.Errorf("%w (the WAL keeps every frame; the next open copies them again)", err))
		} else if _, err := db.writeDB.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil && !IsBusy(err) {
			// Busy: another process checkpoints or writes the file now;
			// the WAL stays for it, which is no loss.
			if isSyncError(err) {
				db.stopped.set(err, db.writeDB)
			}
			errs = append(errs, fmt.Errorf("checkpoint: %w", err))
		}
		errs = append(errs, db.closePools())
		if err := errors.Join(errs...); err != nil {
			db.closeErr = fmt.Errorf("sqlitedb: close %s: %w", db.path, err)
		}
	})
	return db.closeErr
}

// optimize runs PRAGMA optimize, which may write (ANALYZE), on the write
// connection. It waits up to a second for another process's write lock
// (a new process taking over during a reload writes all the while) and,
// if it cannot have it, leaves the statistics to that process: they are
// advice to the query planner, not data, and their age is no error.
func (db *DB) optimize(ctx context.Context) error {
	conn, err := db.writeDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA busy_timeout = 1000`); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA busy_timeout = 0`)
	if _, err := conn.ExecContext(ctx, `PRAGMA optimize`); err != nil && !IsBusy(err) {
		return err
	}
	return nil
}

// closePools closes the connection pools, once the writer and the
// checkpointer have stopped.
func (db *DB) closePools() error {
	return errors.Join(db.readDB.Close(), db.writeDB.Close())
}

// prepareDir makes sure the database's directory exists and the path is
// not a directory, so the error names the real problem rather than
// SQLite's "unable to open database file".
func prepareDir(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("sqlitedb: %s is a directory, not a database file", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("sqlitedb: create the directory of %s: %w", path, err)
	}
	return nil
}

// Library reports the linked SQLite's version and the options it was
// compiled with (PRAGMA compile_options), to confirm a build's CGO_CFLAGS.
func Library() (version string, options []string, err error) {
	db := sql.OpenDB(&connector{dsn: "file::memory:", driver: &sqlite3.SQLiteDriver{}})
	defer db.Close()
	if err := db.QueryRow(`SELECT sqlite_version()`).Scan(&version); err != nil {
		return "", nil, fmt.Errorf("sqlite version: %w", err)
	}
	rows, err := db.Query(`PRAGMA compile_options`)
	if err != nil {
		return "", nil, fmt.Errorf("compile options: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return "", nil, err
		}
		options = append(options, o)
	}
	return version, options, rows.Err()
}

// Stats returns the current counters.
func (db *DB) Stats() Stats {
	s := Stats{
		BusyRetries:  db.busyRetries.Load(),
		BusyErrors:   db.busyErrors.Load(),
		Timeouts:     db.timeouts.Load(),
		ReadWaits:    db.readWaits.Load(),
		ReadWaitTime: time.Duration(db.readWaitNs.Load()),
		ReadPool:     db.readDB.Stats(),
	}
	if db.readOnly {
		return s
	}
	s.WritePool, s.Writer = db.writeDB.Stats(), db.writer.snapshot()
	c := db.checkpointer
	s.Checkpoints = CheckpointStats{Background: c.runs.Load(), Inline: c.inline.Load(), Restarts: c.restarts.Load(), Truncates: c.truncates.Load(), CopiedElsewhere: c.copiedElsewhere.Load(), Errors: c.errors.Load()}
	if err := db.stopped.err(); err != nil {
		s.Checkpoints.Stopped = err.Error()
		if n := db.stopped.forgetErrors.Load(); n > 0 {
			s.Checkpoints.Stopped += fmt.Sprintf(" (and %d times the WAL index kept counting frames as copied: a read may meet a page the disk lost)", n)
		}
	}
	if db.opts.MemoryMap || db.dsn.params.Get("vfs") == mapVFSName {
		s.MappedDatabase, s.MappedWAL = isMapped(db.path), isMapped(db.path+"-wal")
	}
	return s
}
