package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/bench/setups"
	"github.com/loremnews/loremnews/metrics"
	"github.com/loremnews/loremnews/postgres"
	"github.com/loremnews/loremnews/sqlite"
	"github.com/loremnews/loremnews/sqlitedb"
)

// dbFlags are the database flags every command that opens it shares.
type dbFlags struct {
	dsn           string
	setup         string // the SQLite setup: setups.Names()
	readConns     int
	writerTimeout time.Duration
	pgMaxConns    int
	pgSyncCommit  string
	onWriteWait   func(time.Duration) // set by serve when metrics are on
}

const (
	defaultDB            = "storage/loremnews.sqlite3"
	defaultWriterTimeout = 5 * time.Second
)

// register adds --db and the pool tuning flags, for commands that serve or
// write in bulk, where the connection setup decides the outcome.
func (d *dbFlags) register(fs *flagSet) {
	d.registerDB(fs)
	fs.StringVar(&d.setup, "setup", setups.Split, "SQLite setup `NAME` (docs/setups.md): "+strings.Join(setups.Names(), ", "))
	fs.twin("setup", "LOREM_SETUP")
	fs.StringVar(&d.setup, "profile", setups.Split, "the same as --setup `NAME` (its earlier name)")
	fs.IntVar(&d.readConns, "read-conns", 0, "size of the read pool (shared pool in single-pool setups); 0 = max(4, 2×GOMAXPROCS)")
	fs.twin("read-conns", "LOREM_READ_CONNS")
	fs.DurationVar(&d.writerTimeout, "writer-timeout", defaultWriterTimeout, "longest a write waits for its turn and SQLite's lock (PostgreSQL: for a connection and for each row lock) before answering 503")
	fs.twin("writer-timeout", "LOREM_WRITER_TIMEOUT")
	fs.IntVar(&d.pgMaxConns, "pg-max-conns", 0, "PostgreSQL only: connection pool size; 0 = max(4, 4×GOMAXPROCS)")
	fs.twin("pg-max-conns", "LOREM_PG_MAX_CONNS")
	fs.StringVar(&d.pgSyncCommit, "pg-synchronous-commit", "", "PostgreSQL only: synchronous_commit `MODE` for this app (on, off, local, remote_write, remote_apply); empty = the server's setting")
	fs.twin("pg-synchronous-commit", "LOREM_PG_SYNCHRONOUS_COMMIT")
}

// registerDB adds --db alone, for commands whose work the pool tuning does
// not change (migrate, backup); the tuning keeps serve's defaults.
func (d *dbFlags) registerDB(fs *flagSet) {
	fs.StringVar(&d.dsn, "db", defaultDB, "SQLite file `PATH` or URI (pragmas ride along as file:PATH?_pragma=cache_size(-16000)),\n      or a PostgreSQL URL: postgres://user:password@host:5432/dbname")
	fs.twin("db", "LOREM_DB")
	d.setup = setups.Split
	d.writerTimeout = defaultWriterTimeout
}

func (d *dbFlags) validate(fs *flagSet) error {
	switch {
	case !setups.Valid(d.setup):
		return &usageError{msg: fmt.Sprintf("unknown --setup %q (want one of %s)", d.setup, strings.Join(setups.Names(), ", ")), cmd: fs.Name()}
	case d.readConns < 0:
		return &usageError{msg: "--read-conns must be 0 (auto) or more", cmd: fs.Name()}
	case d.writerTimeout <= 0:
		return &usageError{msg: "--writer-timeout must be positive", cmd: fs.Name()}
	case d.pgSyncCommit != "" && !slices.Contains([]string{"on", "off", "local", "remote_write", "remote_apply"}, d.pgSyncCommit):
		return &usageError{msg: fmt.Sprintf("--pg-synchronous-commit %q: want on, off, local, remote_write or remote_apply", d.pgSyncCommit), cmd: fs.Name()}
	case d.pgMaxConns < 0:
		return &usageError{msg: "--pg-max-conns must be 0 (auto) or more", cmd: fs.Name()}
	case d.dsn == "":
		return &usageError{msg: "--db must not be empty", cmd: fs.Name()}
	case d.postgres():
		if err := postgres.CheckURL(d.dsn); err != nil {
			return &usageError{msg: fmt.Sprintf("--db is not a valid PostgreSQL URL: %v", err), cmd: fs.Name()}
		}
		return nil
	}
	path, err := sqlitedb.DSNPath(d.dsn)
	if err != nil {
		return &usageError{msg: fmt.Sprintf("--db: %v", err), cmd: fs.Name()}
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return &usageError{msg: fmt.Sprintf("--db %s is a directory, not a database file", path), cmd: fs.Name()}
	}
	return nil
}

// postgres reports whether --db names a PostgreSQL database.
func (d *dbFlags) postgres() bool { return postgres.IsURL(d.dsn) }

// database is what the commands open: the site's store, its operations,
// and the collector of its own metrics.
type database interface {
	loremnews.Database
	metrics.Source
}

// open opens the SQLite file or the PostgreSQL database --db names.
func (d *dbFlags) open(ctx context.Context) (database, error) {
	// Each branch returns a nil interface on failure, never an interface
	// holding a nil *DB (which would compare unequal to nil).
	if d.postgres() {
		db, err := postgres.Open(ctx, postgres.Config{
			URL:               d.dsn,
			MaxConns:          d.pgMaxConns,
			SynchronousCommit: d.pgSyncCommit,
			WriterTimeout:     d.writerTimeout,
			OnWriteWait:       d.onWriteWait,
		})
		if err != nil {
			return nil, err
		}
		return db, nil
	}
	db, err := d.openSQLite(ctx)
	if err != nil {
		return nil, err
	}
	return db, nil
}

// openSQLite opens the SQLite file --db names, for the commands that work
// on a SQLite file alone (backup).
func (d *dbFlags) openSQLite(ctx context.Context) (*sqlite.DB, error) {
	return setups.Open(ctx, d.setup, sqlite.Config{
		DSN:           d.dsn,
		ReadConns:     d.readConns,
		WriterTimeout: d.writerTimeout,
		OnWriteWait:   d.onWriteWait,
	})
}

// seedFlags size the demo data set.
type seedFlags struct {
	seed  uint64
	users int
	posts int
}

func (s *seedFlags) register(fs *flagSet) {
	fs.Uint64Var(&s.seed, "seed", 1, "random seed: the same seed always builds the same data")
	fs.twin("seed", "LOREM_SEED")
	fs.IntVar(&s.users, "users", 100, "number of users")
	fs.twin("users", "LOREM_SEED_USERS")
	fs.IntVar(&s.posts, "posts", 1000, "number of posts (each gets 5–15 comments)")
	fs.twin("posts", "LOREM_SEED_POSTS")
}

func (s *seedFlags) validate(fs *flagSet) error {
	if s.users < 1 || s.posts < 0 {
		return &usageError{msg: "--users must be at least 1 and --posts at least 0", cmd: fs.Name()}
	}
	return nil
}
