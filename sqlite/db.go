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
	"fmt"
	"strings"
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

// DB is an open Lorem News database: its SQL, on the connections,
// writer and checkpointer of package sqlitedb.
type DB struct {
	sql     *sqlitedb.DB
	profile Profile
	// now is the clock, replaceable in tests.
	now func() time.Time
}

// Open opens (creating if needed) and migrates the database.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	if cfg.Profile == "" {
		cfg.Profile = ProfileSplit
	}
	opts, ok := cfg.Profile.options()
	if !ok {
		return nil, fmt.Errorf("sqlite: unknown profile %q (want one of %s)", cfg.Profile, strings.Join(ProfileNames(), ", "))
	}
	if opts.ReadConns == 0 {
		opts.ReadConns = cfg.ReadConns
	}
	opts.Timeout = cfg.WriterTimeout
	opts.OnWriteWait = cfg.OnWriteWait
	db := &DB{profile: cfg.Profile, now: func() time.Time { return time.Now().UTC() }}
	opts.Setup = db.migrate
	sdb, err := sqlitedb.Open(ctx, cfg.DSN, &opts)
	if err != nil {
		return nil, err
	}
	db.sql = sdb
	return db, nil
}

// Name is the database file's path, for messages (loremnews.Database).
func (db *DB) Name() string { return db.sql.Path() }

// Describe is "profile NAME": the connection setup is what tells SQLite
// runs apart.
func (db *DB) Describe() string { return "profile " + string(db.profile) }

// Ping reports whether the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	err := db.read(ctx, func(ctx context.Context, conn *sql.Conn) error {
		var one int
		return conn.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
	})
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// Close lets queued writes finish, runs PRAGMA optimize, checkpoints the
// WAL into the main file and truncates it, then closes every connection
// (sqlitedb.DB.Close). It is safe to call more than once.
func (db *DB) Close() error { return db.sql.Close() }

// Stats is a snapshot of the data layer's counters, for /metrics and tests.
type Stats struct {
	Profile Profile
	sqlitedb.Stats
}

// Stats returns the current counters.
func (db *DB) Stats() Stats { return Stats{Profile: db.profile, Stats: db.sql.Stats()} }

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

// DB is the SQLite implementation of the store the web layer uses.
var _ loremnews.Database = (*DB)(nil)
