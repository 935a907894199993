package sqlite

// This file is how the store's SQL reaches the database: an Engine runs
// reads and writes, and hands their functions a Querier or an Execer to run
// statements on. The store runs on package sqlitedb (NewEngine); the
// experiment opens the same store on engines of its own (OpenEngine).

import (
	"context"
	"database/sql"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/loremnews/loremnews/sqlitedb/sqlitedbprom"
)

// Querier runs a read's statements, in one read transaction: one snapshot
// for the whole page.
type Querier interface {
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Execer runs a write's statements, in its write transaction.
type Execer interface {
	Querier
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Rows are a query's rows (*sqlitedb.Rows, or database/sql's *sql.Rows).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// Row is QueryRow's result.
type Row interface{ Scan(dest ...any) error }

// Engine runs the store's reads and writes on one database file.
type Engine interface {
	// Read runs fn in one read transaction.
	Read(ctx context.Context, fn func(context.Context, Querier) error) error
	// Write runs fn in one write transaction and returns once it has
	// committed.
	Write(ctx context.Context, fn func(context.Context, Execer) error) error
	// Coalesce is Write for a write that cannot fail on its own (a
	// touch): where the engine can, those queued at one moment share a
	// commit.
	Coalesce(ctx context.Context, fn func(context.Context, Execer) error) error
	// Backup writes a consistent copy of the database to path, which must
	// not exist, while reads and writes go on, paced as opts say where the
	// engine can (nil: as fast as it can).
	Backup(ctx context.Context, path string, opts *sqlitedb.BackupOptions) error
	// Path is the database file's path.
	Path() string
	// Stats are the engine's counters: sqlitedb's, or as many of them as
	// the engine keeps.
	Stats() sqlitedb.Stats
	// Collectors export the engine's counters to Prometheus.
	Collectors(namespace string) []prometheus.Collector
	// Close ends the engine: queued writes finish, then the connections
	// close. It is safe to call more than once.
	Close() error
}

// NewEngine is the store's engine on package sqlitedb: its read pool, its
// writer and its checkpointer, and its handles' statements.
func NewEngine(db *sqlitedb.DB) Engine { return sqlitedbEngine{db} }

type sqlitedbEngine struct{ db *sqlitedb.DB }

func (e sqlitedbEngine) Read(ctx context.Context, fn func(context.Context, Querier) error) error {
	return e.db.Read(ctx, func(ctx context.Context, r *sqlitedb.Rx) error { return fn(ctx, sqlitedbRx{r}) })
}

func (e sqlitedbEngine) Write(ctx context.Context, fn func(context.Context, Execer) error) error {
	return e.db.Write(ctx, func(ctx context.Context, t *sqlitedb.Tx) error { return fn(ctx, sqlitedbTx{t}) })
}

func (e sqlitedbEngine) Coalesce(ctx context.Context, fn func(context.Context, Execer) error) error {
	return e.db.Coalesce(ctx, func(ctx context.Context, t *sqlitedb.Tx) error { return fn(ctx, sqlitedbTx{t}) })
}

func (e sqlitedbEngine) Backup(ctx context.Context, path string, opts *sqlitedb.BackupOptions) error {
	return e.db.Backup(ctx, path, opts)
}
func (e sqlitedbEngine) Path() string          { return e.db.Path() }
func (e sqlitedbEngine) Stats() sqlitedb.Stats { return e.db.Stats() }
func (e sqlitedbEngine) Close() error          { return e.db.Close() }

func (e sqlitedbEngine) Collectors(namespace string) []prometheus.Collector {
	return []prometheus.Collector{sqlitedbprom.NewCollector(e.db, namespace)}
}

// sqlitedbRx and sqlitedbTx are sqlitedb's handles as Querier and Execer.
type (
	sqlitedbRx struct{ *sqlitedb.Rx }
	sqlitedbTx struct{ *sqlitedb.Tx }
)

func (r sqlitedbRx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	return queryOn(ctx, r.Rx, query, args)
}

func (r sqlitedbRx) QueryRow(ctx context.Context, query string, args ...any) Row {
	return queryRowOn(ctx, r.Rx, query, args)
}

func (t sqlitedbTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	return queryOn(ctx, &t.Tx.Rx, query, args)
}

func (t sqlitedbTx) QueryRow(ctx context.Context, query string, args ...any) Row {
	return queryRowOn(ctx, &t.Tx.Rx, query, args)
}

// queryOn is r.Query, with no typed nil in the interface on error.
func queryOn(ctx context.Context, r *sqlitedb.Rx, query string, args []any) (Rows, error) {
	rs, err := r.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// queryRowOn is r.QueryRow as a row that costs no allocation of its own:
// the rows' pointer, or the error.
func queryRowOn(ctx context.Context, r *sqlitedb.Rx, query string, args []any) Row {
	rs, err := r.Query(ctx, query, args...)
	if err != nil {
		return errRow{err}
	}
	return (*firstRow)(rs)
}

// firstRow scans the first of its rows, or answers sql.ErrNoRows.
type firstRow sqlitedb.Rows

func (r *firstRow) Scan(dest ...any) error {
	rs := (*sqlitedb.Rows)(r)
	if !rs.Next() {
		return sql.ErrNoRows
	}
	return rs.Scan(dest...)
}

// errRow answers its query's error.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
