package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrate applies, in file-name order, every embedded migration not yet
// recorded in schema_migrations. Each runs in its own write transaction with
// its record, so a failed migration leaves no half-changed schema, and two
// processes starting at once cannot both apply it (the second waits for the
// write lock, then sees the record).
func (db *DB) migrate(ctx context.Context) error {
	if err := db.write(ctx, func(ctx context.Context, tx writeTx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    TEXT PRIMARY KEY,
			applied_at DATETIME NOT NULL
		)`)
		return err
	}); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := db.applyMigration(ctx, name); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	return nil
}

// foreignKeysOff is the first line of a migration that must run with
// foreign keys off: one that rebuilds a table others reference.
const foreignKeysOff = "-- migrate: foreign keys off\n"

func (db *DB) applyMigration(ctx context.Context, name string) error {
	body, err := fs.ReadFile(migrationFS, name)
	if err != nil {
		return err
	}
	if strings.HasPrefix(string(body), foreignKeysOff) {
		return db.applyWithoutForeignKeys(ctx, name, string(body))
	}
	return db.write(ctx, func(ctx context.Context, tx writeTx) error {
		return applyOnce(ctx, tx, name, string(body), db.now())
	})
}

// applyOnce runs a migration's body in tx and records it, unless it is
// recorded already (another process applied it first).
func applyOnce(ctx context.Context, tx writeTx, name, body string, now time.Time) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, name).Scan(&n); err != nil {
		return err
	} else if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, name, now)
	return err
}

// applyWithoutForeignKeys runs a migration with foreign keys off, on one
// write connection taken for it. PRAGMA foreign_keys does nothing inside a
// transaction, so it is set before BEGIN and set back after; before COMMIT,
// PRAGMA foreign_key_check must find no row that points nowhere, or the
// migration rolls back. The connection also gets loremnews_unix_nanos,
// which migration 0003 converts DATETIME text with. It runs while Open
// holds the database, so nothing else of this process writes meanwhile.
func (db *DB) applyWithoutForeignKeys(ctx context.Context, name, body string) error {
	conn, err := db.writeDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error {
		return dc.(sqliteConn).SQLiteConnOf().RegisterFunc("loremnews_unix_nanos", unixNanosOfText, true)
	}); err != nil {
		return fmt.Errorf("register loremnews_unix_nanos: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`)
	var tx *sql.Tx
	start := time.Now()
	err = db.whileBusy(ctx, &db.busyRetries, func() (err error) {
		tx, err = conn.BeginTx(ctx, nil)
		return err
	})
	db.observeWriteWait(start)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := applyOnce(ctx, tx, name, body, db.now()); err != nil {
		return err
	}
	var table string
	var rowid sql.NullInt64
	var parent string
	var fkid int64
	switch err := tx.QueryRowContext(ctx, `PRAGMA foreign_key_check`).Scan(&table, &rowid, &parent, &fkid); {
	case err == nil:
		return fmt.Errorf("foreign key check: row %d of %s points to a missing row of %s", rowid.Int64, table, parent)
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("foreign key check: %w", err)
	}
	return tx.Commit()
}

// sqliteConn is a pooled connection (sqlitedb's) that can give go-sqlite3's
// own, for what only the driver offers, such as SQL functions in Go.
type sqliteConn interface{ SQLiteConnOf() *sqlite3.SQLiteConn }

// unixNanosOfText is loremnews_unix_nanos: a DATETIME value as the driver
// read it into a time.Time (text: "Z" trimmed, then each of its layouts in
// order, in UTC; an integer: Unix seconds, or milliseconds beyond 10^12),
// as Unix nanoseconds. NULL stays NULL; text that is no time is an error.
func unixNanosOfText(v any) (any, error) {
	switch v := v.(type) {
	case []byte: // the driver's form of NULL for an untyped argument
		if v == nil {
			return nil, nil
		}
	case int64:
		if v > 1e12 || v < -1e12 {
			return time.Unix(0, v*int64(time.Millisecond)).UnixNano(), nil
		}
		return time.Unix(v, 0).UnixNano(), nil
	case string:
		s := strings.TrimSuffix(v, "Z")
		for _, layout := range sqlite3.SQLiteTimestampFormats {
			if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
				return t.UnixNano(), nil
			}
		}
		return nil, fmt.Errorf("%q is not a time", v)
	}
	return nil, fmt.Errorf("a %T is not a time", v)
}

// Migrations lists the applied migrations, oldest first.
func (db *DB) Migrations(ctx context.Context) ([]string, error) {
	var names []string
	err := db.read(ctx, func(q querier) error {
		rows, err := q.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				return err
			}
			names = append(names, v)
		}
		return rows.Err()
	})
	return names, err
}
