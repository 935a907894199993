// Package sqlite implements loremnews.Store on an embedded SQLite database
// through package sqlitedb. SQL lives only in the store packages: this one
// and postgres/, its twin on PostgreSQL.
//
// Open opens the store on sqlitedb; the experiment runs the same store on
// setups of its own through OpenEngine. Every SQLite decision has its
// reason written beside it.
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/mattn/go-sqlite3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlitedb"
)

// Config says which file to open and how.
type Config struct {
	// DSN is a file path ("storage/loremnews.sqlite3") or a SQLite URI
	// ("file:storage/loremnews.sqlite3?_pragma=cache_size(-16000)"), as
	// sqlitedb.Open takes it.
	DSN string
	// ReadConns caps the read pool; 0 means max(4, 2×GOMAXPROCS).
	ReadConns int
	// WriterTimeout bounds how long a write waits for its turn and for
	// SQLite's write lock; 0 means 5 s, SQLite's customary busy timeout.
	WriterTimeout time.Duration
	// OnWriteWait, if set, is told how long each write waited from asking
	// to write until its BEGIN returned (metrics use it).
	OnWriteWait func(time.Duration)
}

// Options are sqlitedb's options for cfg, with the store's setup on its
// connections: what Open opens the file with.
//
// Pages are read from sqlitedb's memory map of the file and of its WAL
// (MemoryMap), not by a pread each: nearly every request commits, so a
// read connection refills its page cache at nearly every request; the
// performance log's attempt 64 measured what that saves. A read error
// through the map is an error, as with pread.
// A DSN's vfs parameter decides instead (vfs=unix: SQLite's own reads).
func (cfg Config) Options(h Hooks) *sqlitedb.Options {
	return &sqlitedb.Options{ReadConns: cfg.ReadConns, Timeout: cfg.WriterTimeout, OnWriteWait: cfg.OnWriteWait,
		ConnectHook: h.Conn, Setup: h.Migrate, MemoryMap: true}
}

// Hooks are what an engine runs for the store: Conn on every new
// connection, before any statement of the store's (it registers the SQL
// functions the migrations call), and Migrate once, on one connection,
// before any read or write.
type Hooks struct {
	Conn    func(*sqlite3.SQLiteConn) error
	Migrate func(context.Context, *sql.Conn) error
}

// DB is an open Lorem News database: its SQL, on an engine.
type DB struct {
	eng Engine
	// setup names the engine's setup, for the start-up line and metrics.
	setup string
	// names keeps screen names and titles for the listings.
	names *names
	// now is the clock, replaceable in tests.
	now func() time.Time
}

// ProductSetup is the name of the setup Open opens: package sqlitedb with
// its defaults, one writer and a pool of readers. The experiment calls it
// "split" too.
const ProductSetup = "split"

// Open opens (creating if needed) and migrates the database, on package
// sqlitedb.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	return OpenEngine(ctx, ProductSetup, func(ctx context.Context, h Hooks) (Engine, error) {
		sdb, err := sqlitedb.Open(ctx, cfg.DSN, cfg.Options(h))
		if err != nil {
			return nil, err
		}
		return NewEngine(sdb), nil
	})
}

// OpenEngine opens the store on the engine open returns, which must run
// the Hooks it is given: Conn on each of its connections and Migrate
// before anything else. name names the setup ("setup NAME" in Describe,
// and the setup label of the metrics).
func OpenEngine(ctx context.Context, name string, open func(context.Context, Hooks) (Engine, error)) (*DB, error) {
	db := &DB{setup: name, names: newNames(), now: func() time.Time { return time.Now().UTC() }}
	eng, err := open(ctx, Hooks{Conn: registerFunctions, Migrate: migrate})
	if err != nil {
		return nil, err
	}
	db.eng = eng
	return db, nil
}

// Name is the database file's path, for messages (loremnews.Database).
func (db *DB) Name() string { return db.eng.Path() }

// Describe is "setup NAME": the setup is what tells SQLite runs apart.
func (db *DB) Describe() string { return "setup " + db.setup }

// Ping reports whether the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	err := db.read(ctx, func(ctx context.Context, q Querier) error {
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
func (db *DB) Close() error { return db.eng.Close() }

// Stats returns the engine's counters, for tests.
func (db *DB) Stats() sqlitedb.Stats { return db.eng.Stats() }

// Collector exports the database's counters to Prometheus, read at each
// scrape: namespace_db_setup_info{setup}, and the engine's own
// (for sqlitedb, package sqlitedbprom's namespace_sqlite_… metrics).
func (db *DB) Collector(namespace string) prometheus.Collector {
	info := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "db", Name: "setup_info",
		Help: "The setup in use.", ConstLabels: prometheus.Labels{"setup": db.setup}})
	info.Set(1)
	return append(multiCollector{info}, db.eng.Collectors(namespace)...)
}

// multiCollector is several collectors as one.
type multiCollector []prometheus.Collector

func (m multiCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m {
		c.Describe(ch)
	}
}

func (m multiCollector) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m {
		c.Collect(ch)
	}
}

// DB is the SQLite implementation of the store the web layer uses.
var _ loremnews.Database = (*DB)(nil)
