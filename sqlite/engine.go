package sqlite

// This file is how the store's SQL reaches the database: an engine runs
// reads and writes, and hands their functions a querier or an execer to run
// statements on. The default setups run on package sqlitedb
// (sqlitedbEngine); the baselines of the experiment on database/sql and
// the driver alone, as a framework or a hand-written program does
// (poolEngine, baseline.go).

import (
	"context"
	"database/sql"

	"github.com/loremnews/loremnews/sqlitedb"
)

// querier runs a read's statements, in one read transaction: one snapshot
// for the whole page.
type querier interface {
	Query(ctx context.Context, query string, args ...any) (rows, error)
	QueryRow(ctx context.Context, query string, args ...any) row
}

// execer runs a write's statements, in its write transaction.
type execer interface {
	querier
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// rows are a query's rows: *sqlitedb.Rows, or *sql.Rows in the baselines.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// row is QueryRow's result: sqlitedb.Row, or *sql.Row in the baselines.
type row interface{ Scan(dest ...any) error }

// engine runs the store's reads and writes on one database file.
type engine interface {
	// read runs fn in one read transaction.
	read(ctx context.Context, fn func(context.Context, querier) error) error
	// write runs fn in one write transaction and returns once it has
	// committed.
	write(ctx context.Context, fn func(context.Context, execer) error) error
	// coalesce is write for a write that cannot fail on its own (a
	// touch): where the engine can, those queued at one moment share a
	// commit.
	coalesce(ctx context.Context, fn func(context.Context, execer) error) error
	backup(ctx context.Context, path string) error
	path() string
	readConns() int
	stats() Stats
	close() error
}

// sqlitedbEngine runs on package sqlitedb: its read pool, its writer and
// its checkpointer, and its handles' statements.
type sqlitedbEngine struct{ db *sqlitedb.DB }

func (e sqlitedbEngine) read(ctx context.Context, fn func(context.Context, querier) error) error {
	return e.db.Read(ctx, func(ctx context.Context, r *sqlitedb.Rx) error { return fn(ctx, sqlitedbRx{r}) })
}

func (e sqlitedbEngine) write(ctx context.Context, fn func(context.Context, execer) error) error {
	return e.db.Write(ctx, func(ctx context.Context, t *sqlitedb.Tx) error { return fn(ctx, sqlitedbTx{t}) })
}

func (e sqlitedbEngine) coalesce(ctx context.Context, fn func(context.Context, execer) error) error {
	return e.db.Coalesce(ctx, func(ctx context.Context, t *sqlitedb.Tx) error { return fn(ctx, sqlitedbTx{t}) })
}

func (e sqlitedbEngine) backup(ctx context.Context, path string) error { return e.db.Backup(ctx, path) }
func (e sqlitedbEngine) path() string                                  { return e.db.Path() }
func (e sqlitedbEngine) readConns() int                                { return e.db.Options().ReadConns }
func (e sqlitedbEngine) stats() Stats                                  { return Stats{Stats: e.db.Stats()} }
func (e sqlitedbEngine) close() error                                  { return e.db.Close() }

// sqlitedbRx and sqlitedbTx are sqlitedb's handles as querier and execer.
type (
	sqlitedbRx struct{ *sqlitedb.Rx }
	sqlitedbTx struct{ *sqlitedb.Tx }
)

func (r sqlitedbRx) Query(ctx context.Context, query string, args ...any) (rows, error) {
	return queryOn(ctx, r.Rx, query, args)
}

func (r sqlitedbRx) QueryRow(ctx context.Context, query string, args ...any) row {
	return queryRowOn(ctx, r.Rx, query, args)
}

func (t sqlitedbTx) Query(ctx context.Context, query string, args ...any) (rows, error) {
	return queryOn(ctx, &t.Tx.Rx, query, args)
}

func (t sqlitedbTx) QueryRow(ctx context.Context, query string, args ...any) row {
	return queryRowOn(ctx, &t.Tx.Rx, query, args)
}

// queryOn is r.Query, with no typed nil in the interface on error.
func queryOn(ctx context.Context, r *sqlitedb.Rx, query string, args []any) (rows, error) {
	rs, err := r.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rs, nil
}

// queryRowOn is r.QueryRow as a row that costs no allocation of its own:
// the rows' pointer, or the error.
func queryRowOn(ctx context.Context, r *sqlitedb.Rx, query string, args []any) row {
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
