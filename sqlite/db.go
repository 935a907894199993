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

// DB is an open Lorem News database: its SQL, on the engine its profile
// chose.
type DB struct {
	eng     engine
	profile Profile
	// names keeps screen names and titles for the listings.
	names *names
	// now is the clock, replaceable in tests.
	now func() time.Time
}

// Open opens (creating if needed) and migrates the database.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	if cfg.Profile == "" {
		cfg.Profile = ProfileSplit
	}
	opts, base, ok := cfg.Profile.setup()
	if !ok {
		return nil, fmt.Errorf("sqlite: unknown profile %q (want one of %s)", cfg.Profile, strings.Join(ProfileNames(), ", "))
	}
	db := &DB{profile: cfg.Profile, names: newNames(), now: func() time.Time { return time.Now().UTC() }}
	if base != nil {
		eng, err := openBaseline(ctx, cfg.DSN, *base, cfg, db.migrate)
		if err != nil {
			return nil, err
		}
		db.eng = eng
		return db, nil
	}
	opts.ReadConns = cfg.ReadConns
	opts.Timeout = cfg.WriterTimeout
	opts.OnWriteWait = cfg.OnWriteWait
	opts.Setup = db.migrate
	sdb, err := sqlitedb.Open(ctx, cfg.DSN, opts)
	if err != nil {
		return nil, err
	}
	db.eng = sqlitedbEngine{sdb}
	return db, nil
}

// Name is the database file's path, for messages (loremnews.Database).
func (db *DB) Name() string { return db.eng.path() }

// Describe is "profile NAME": the connection setup is what tells SQLite
// runs apart.
func (db *DB) Describe() string { return "profile " + string(db.profile) }

// Ping reports whether the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	err := db.read(ctx, func(ctx context.Context, q querier) error {
		var one int
		return q.QueryRow(ctx, `SELECT 1`).Scan(&one)
	})
	if err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// Close lets queued writes finish, runs PRAGMA optimize, checkpoints the
// WAL into the main file and truncates it, then closes every connection
// (sqlitedb.DB.Close). It is safe to call more than once.
func (db *DB) Close() error { return db.eng.close() }

// Stats is a snapshot of the data layer's counters, for /metrics and tests.
// A baseline fills in the busy counters and its one pool (as both
// ReadPool and WritePool), and has no writer or checkpointer of its own.
type Stats struct {
	Profile    Profile
	SharedPool bool // a baseline's one pool of connections
	sqlitedb.Stats
}

// Stats returns the current counters.
func (db *DB) Stats() Stats {
	s := db.eng.stats()
	s.Profile = db.profile
	return s
}

// DB is the SQLite implementation of the store the web layer uses.
var _ loremnews.Database = (*DB)(nil)
