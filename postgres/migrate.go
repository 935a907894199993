package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrationLock is the advisory lock key migrations hold, so two processes
// starting at once apply each migration once ("LOREM" in ASCII).
const migrationLock = 0x4c4f52454d

// migrate applies, in file-name order, every embedded migration not yet
// recorded in schema_migrations, all in one transaction with their records
// (PostgreSQL's DDL is transactional, so a failing migration leaves the
// schema as it was), under an advisory lock held until that transaction
// ends.
func (db *DB) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    text PRIMARY KEY,
			applied_at timestamptz NOT NULL
		)`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		for _, name := range names {
			var done bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, name).Scan(&done); err != nil {
				return err
			}
			if done {
				continue
			}
			body, err := fs.ReadFile(migrationFS, name)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, name, db.now()); err != nil {
				return err
			}
		}
		return nil
	})
}

// Migrations lists the applied migrations, oldest first.
func (db *DB) Migrations(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, db.mapError(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, db.mapError(err)
}

// MigrationFiles lists the embedded migration files, for the test that
// keeps both backends' schemas in step.
func MigrationFiles() []string {
	names, _ := fs.Glob(migrationFS, "migrations/*.sql")
	sort.Strings(names)
	return names
}
