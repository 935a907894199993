// Package postgres implements loremnews.Database on PostgreSQL through pgx,
// beside the SQLite implementation: the same interface, the same behaviour
// for every route, counter cache, cascade and validation. Like package
// sqlite it is the only place that knows its SQL.
//
// Where the two differ it is because the engines do:
//   - PostgreSQL runs writers concurrently (row locks, READ COMMITTED), so
//     there is no writer queue. Instead every write transaction takes its
//     row locks in one global order — at most one post, then that post's
//     comments, then users in id order — so two Lorem News transactions
//     never deadlock; one that still fails with a deadlock or serialization
//     error is retried.
//   - A random row picked by a benchmarking action may be deleted by a
//     concurrent transaction before it is locked; the action then starts
//     over with a new pick (SQLite's single writer never sees this).
//   - Ids come from sequences, which are not transactional: an insert that
//     fails still uses up its id, so such an id later reads as "deleted"
//     rather than "never existed".
package postgres

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/loremnews/loremnews"
)

// Config says which database to use and how.
type Config struct {
	// URL is a PostgreSQL connection URL (postgres://user:pass@host/db) or
	// key=value string. Its pool_max_conns parameter, if present, wins over
	// MaxConns.
	URL string
	// MaxConns caps the connection pool; 0 means max(4, 4×GOMAXPROCS).
	MaxConns int
	// WriterTimeout bounds how long a statement waits for a row lock
	// (lock_timeout) and a request for a pooled connection; 0 means 5 s,
	// the same bound the SQLite store puts on its writer queue.
	WriterTimeout time.Duration
	// OnWriteWait, if set, is told how long each write waited from asking
	// to write until its BEGIN returned (a pooled connection).
	OnWriteWait func(time.Duration)
	// SynchronousCommit, if set, is this app's synchronous_commit ("on",
	// "off", …), whatever the server's default. "off" answers before the
	// commit's WAL is flushed: a crash of the server or machine may lose
	// the last ~0.6 s of commits (never corrupts), close to what SQLite's
	// synchronous=NORMAL in WAL mode risks on a power cut.
	SynchronousCommit string
}

// DB is an open Lorem News database on PostgreSQL.
type DB struct {
	pool          *pgxpool.Pool
	name          string
	writerTimeout time.Duration
	onWriteWait   func(time.Duration)

	// retries counts write transactions started over (deadlock,
	// serialization failure, or a random pick deleted meanwhile).
	retries atomic.Int64
	// deadlocks counts transactions PostgreSQL aborted as deadlocked; the
	// lock order should keep it at 0.
	deadlocks atomic.Int64

	now func() time.Time
}

// IsURL reports whether dsn names a PostgreSQL database rather than a
// SQLite file.
func IsURL(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// CheckURL reports whether dsn is a connection string pgx accepts, without
// connecting.
func CheckURL(dsn string) error {
	_, err := pgxpool.ParseConfig(dsn)
	return redactError(err, dsn)
}

// Open connects, checks the server answers, and migrates the schema.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: bad database URL: %w", redactError(err, cfg.URL))
	}
	if cfg.WriterTimeout <= 0 {
		cfg.WriterTimeout = 5 * time.Second
	}
	if !strings.Contains(cfg.URL, "pool_max_conns") {
		if cfg.MaxConns <= 0 {
			// The server runs on the same few cores; more connections than
			// a few per core only add context switches and lock waits.
			cfg.MaxConns = max(4, 4*runtime.GOMAXPROCS(0))
		}
		pc.MaxConns = int32(cfg.MaxConns)
	}
	pc.MinConns = min(pc.MaxConns, 4)
	// Connections are costly to open (a server process each): keep them.
	pc.MaxConnLifetime = time.Hour
	pc.MaxConnIdleTime = 30 * time.Minute
	// pgx's default mode prepares each distinct statement once per
	// connection and reuses it (statement cache of 512 per connection),
	// which is what an app with a fixed set of queries wants.
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement
	rp := pc.ConnConfig.RuntimeParams
	rp["timezone"] = "UTC"
	rp["application_name"] = "loremnews"
	// A row lock held longer than this means trouble; answer 503 rather
	// than queue forever. Same bound as the SQLite writer queue.
	rp["lock_timeout"] = fmt.Sprint(cfg.WriterTimeout.Milliseconds())
	if cfg.SynchronousCommit != "" {
		rp["synchronous_commit"] = cfg.SynchronousCommit
	}
	// No statement of this app should run long; a runaway one is cut off.
	rp["statement_timeout"] = "30000"
	// The session's transactions may hold row locks: never idle with them.
	rp["idle_in_transaction_session_timeout"] = "60000"
	pc.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		// Scan timestamps (schema_migrations' applied_at; the data's
		// times are integers, see times.go) in UTC, like the SQLite store.
		c.TypeMap().RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db := &DB{
		pool:          pool,
		name:          RedactURL(cfg.URL),
		writerTimeout: cfg.WriterTimeout,
		onWriteWait:   cfg.OnWriteWait,
		now:           func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s: %w", db.name, redactError(describeConnectError(err), cfg.URL))
	}
	if err := db.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: migrate %s: %w", db.name, redactError(err, cfg.URL))
	}
	return db, nil
}

// Name is the database URL without its password.
func (db *DB) Name() string { return db.name }

// Describe is "PostgreSQL".
func (db *DB) Describe() string { return "PostgreSQL" }

// Ping reports whether the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.pool.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("ping: %w", db.mapError(err))
	}
	return nil
}

// Close closes the pool, waiting for connections in use to be returned.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

// Stats is a snapshot of the pool and retry counters, for /metrics.
type Stats struct {
	Retries      int64
	Deadlocks    int64
	AcquiredConn int32
	IdleConns    int32
	TotalConns   int32
	MaxConns     int32
	EmptyAcquire int64 // acquires that had to wait for a connection
	// EmptyAcquireWait is the time spent in those waits.
	EmptyAcquireWait time.Duration
}

// Stats returns the current counters.
func (db *DB) Stats() Stats {
	s := db.pool.Stat()
	return Stats{Retries: db.retries.Load(), Deadlocks: db.deadlocks.Load(), AcquiredConn: s.AcquiredConns(), IdleConns: s.IdleConns(),
		TotalConns: s.TotalConns(), MaxConns: s.MaxConns(), EmptyAcquire: s.EmptyAcquireCount(), EmptyAcquireWait: s.EmptyAcquireWaitTime()}
}

// Settings returns the server's version and the settings that matter for
// this workload, for the benchmark report.
func (db *DB) Settings(ctx context.Context) (map[string]string, error) {
	out, err := querySettings(ctx, db.pool)
	if err != nil {
		return nil, err
	}
	out["pool_max_conns"] = fmt.Sprint(db.pool.Config().MaxConns)
	return out, nil
}

// ReadSettings connects to the server at url on one connection and returns
// the same settings as Settings (without the app's pool size). Unlike Open
// it does not migrate, so it can read an admin database without creating
// the app's tables there.
func ReadSettings(ctx context.Context, url string) (map[string]string, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect to %s: %w", RedactURL(url), redactError(describeConnectError(err), url))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return querySettings(ctx, conn)
}

// querySettings reads the server's version and the settings that matter for
// this workload.
func querySettings(ctx context.Context, q querier) (map[string]string, error) {
	out := map[string]string{}
	var version string
	if err := q.QueryRow(ctx, `SHOW server_version`).Scan(&version); err != nil {
		return nil, err
	}
	out["server_version"] = version
	rows, err := q.Query(ctx, `SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY($1) ORDER BY name`,
		[]string{"shared_buffers", "max_connections", "synchronous_commit", "fsync", "wal_level", "full_page_writes",
			"checkpoint_timeout", "max_wal_size", "work_mem", "effective_cache_size", "wal_buffers", "commit_delay", "random_page_cost", "jit"})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// DB is the PostgreSQL implementation of the store the web layer uses.
var _ loremnews.Database = (*DB)(nil)
