//go:build cgo

package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"
)

// MigrationsTable is the table Migrate records applied migrations in:
// version (the file's path in the fs.FS) and applied_at.
const MigrationsTable = "schema_migrations"

// ForeignKeysOff is the first line of a migration that must run with
// foreign keys off: one that rebuilds a table other tables reference
// (SQLite's twelve-step ALTER TABLE, sqlite.org/lang_altertable.html).
const ForeignKeysOff = "-- migrate: foreign keys off\n"

// Migrate returns a function for Options.Setup that applies, in path
// order, every file of fsys matching pattern (fs.Glob: "migrations/*.sql")
// not yet recorded in MigrationsTable, which it creates if needed. The
// function also runs on a connection of a pool of your own, opened with
// the github.com/mattn/go-sqlite3 driver outside any transaction.
//
// Each migration runs in a write transaction of its own with its record,
// so a migration that fails leaves no half-changed schema and is not
// recorded, and Open fails naming it. Two processes opening the database
// at once cannot both apply one: the second waits for the write lock, then
// finds the record. A migration whose file starts with ForeignKeysOff runs
// with foreign keys off (PRAGMA foreign_keys does nothing inside a
// transaction, so it is set before BEGIN and back after); before its
// COMMIT, PRAGMA foreign_key_check must find no row that points nowhere,
// or it rolls back. A migration recorded already costs one lookup.
//
// A migration's file may hold several statements. Name the files so that
// path order is the order to apply them (0001_create.sql, 0002_…). A
// pattern that matches no file is an error.
func Migrate(fsys fs.FS, pattern string) func(ctx context.Context, conn *sql.Conn) error {
	return func(ctx context.Context, conn *sql.Conn) error {
		names, err := fs.Glob(fsys, pattern)
		if err != nil {
			return fmt.Errorf("migrations %q: %w", pattern, err)
		}
		if len(names) == 0 {
			// A misspelt pattern or an embed that missed the files would
			// otherwise open a database with no schema, and say nothing.
			return fmt.Errorf("migrations %q: no file matches", pattern)
		}
		sort.Strings(names)
		err = migrateOn(ctx, conn, false, func() error {
			_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+MigrationsTable+` (
				version    TEXT PRIMARY KEY,
				applied_at DATETIME NOT NULL
			)`)
			return err
		})
		if err != nil {
			return fmt.Errorf("create %s: %w", MigrationsTable, err)
		}
		for _, name := range names {
			// Looked up outside a transaction first, so a migration
			// applied long ago costs no foreign key check (which reads
			// every table).
			if done, err := migrationRecorded(ctx, conn, name); err != nil {
				return fmt.Errorf("migration %s: %w", name, err)
			} else if done {
				continue
			}
			body, err := fs.ReadFile(fsys, name)
			if err != nil {
				return fmt.Errorf("migration %s: %w", name, err)
			}
			err = withTempFiles(ctx, conn, func() error {
				return migrateOn(ctx, conn, strings.HasPrefix(string(body), ForeignKeysOff), func() error {
					// Again inside the transaction: another process may have
					// applied it meanwhile.
					if done, err := migrationRecorded(ctx, conn, name); err != nil || done {
						return err
					}
					if _, err := conn.ExecContext(ctx, string(body)); err != nil {
						return err
					}
					_, err := conn.ExecContext(ctx, `INSERT INTO `+MigrationsTable+` (version, applied_at) VALUES (?, ?)`, name, time.Now().UTC())
					return err
				})
			})
			if err != nil {
				return fmt.Errorf("migration %s: %w", name, err)
			}
		}
		return nil
	}
}

// withTempFiles runs fn with PRAGMA temp_store = FILE on conn, and sets
// it back after. A migration that builds an index or rewrites a table
// sorts, and keeps statement journals of, about as much as the table
// holds; with temp_store=MEMORY (DefaultPragmas) all of that is the
// process's own memory, growing with the table (the CHANGELOG has a
// measurement), against about the size of the cache with temporary files
// (they go to SQLite's temporary directory: SQLITE_TMPDIR, else TMPDIR,
// else /var/tmp, /usr/tmp or /tmp).
func withTempFiles(ctx context.Context, conn *sql.Conn, fn func() error) error {
	var was int
	if err := conn.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&was); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA temp_store = FILE`); err != nil {
		return err
	}
	err := fn()
	if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(`PRAGMA temp_store = %d`, was)); err == nil {
		err = rerr
	}
	return err
}

// migrateOn runs apply in one write transaction on conn, with foreign keys
// off if fkOff (see Migrate).
func migrateOn(ctx context.Context, conn *sql.Conn, fkOff bool, apply func() error) (err error) {
	if fkOff {
		if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			return err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`)
	}
	if err := execOn(conn, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			execOn(conn, `ROLLBACK`)
		}
	}()
	if err := apply(); err != nil {
		return err
	}
	if fkOff {
		var table, parent string
		var rowid sql.NullInt64
		var fkid int64
		switch err := conn.QueryRowContext(ctx, `PRAGMA foreign_key_check`).Scan(&table, &rowid, &parent, &fkid); {
		case err == nil:
			return fmt.Errorf("foreign key check: row %d of %s points to a missing row of %s", rowid.Int64, table, parent)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("foreign key check: %w", err)
		}
	}
	if err := execCommit(conn); err != nil {
		execOn(conn, `ROLLBACK`)
		if mayLeaveFrames(err) {
			// SQLite's busy handler waits for the lock (Setup raises it).
			if verr := voidFailedCommit(conn, func(try func() error) error { return try() }); verr != nil {
				return fmt.Errorf("commit: %w (and voiding what it may have left in the WAL failed: %w)", err, verr)
			}
		}
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// migrationRecorded reports whether MigrationsTable records name.
func migrationRecorded(ctx context.Context, conn *sql.Conn, name string) (bool, error) {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT count(*) FROM `+MigrationsTable+` WHERE version = ?`, name).Scan(&n)
	return n > 0, err
}
