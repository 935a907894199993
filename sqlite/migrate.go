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
// recorded in schema_migrations. It runs when the database opens
// (sqlitedb's Options.Setup), on the write connection, before anything
// else of this process uses it. Each migration runs in its own write
// transaction with its record, so a failed migration leaves no
// half-changed schema, and two processes starting at once cannot both
// apply it (the second waits for the write lock, then sees the record).
func (db *DB) migrate(ctx context.Context, conn *sql.Conn) error {
	if err := db.applyOn(ctx, conn, "", func() error {
		_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    TEXT PRIMARY KEY,
			applied_at DATETIME NOT NULL
		)`)
		return err
	}); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	// The connection also gets loremnews_unix_nanos, which migration 0003
	// converts DATETIME text with.
	if err := conn.Raw(func(dc any) error {
		return dc.(sqliteConn).SQLiteConnOf().RegisterFunc("loremnews_unix_nanos", unixNanosOfText, true)
	}); err != nil {
		return fmt.Errorf("register loremnews_unix_nanos: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		// Checked first outside a transaction too, so a migration applied
		// long ago costs one lookup at start, not its foreign key check
		// (which reads every table).
		if done, err := recorded(ctx, conn, name); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		} else if done {
			continue
		}
		body, err := fs.ReadFile(migrationFS, name)
		if err != nil {
			return err
		}
		if err := db.applyOn(ctx, conn, string(body), func() error {
			return applyOnce(ctx, conn, name, string(body), db.now())
		}); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	return nil
}

// foreignKeysOff is the first line of a migration that must run with
// foreign keys off: one that rebuilds a table others reference.
const foreignKeysOff = "-- migrate: foreign keys off\n"

// applyOn runs apply in one write transaction on conn. A migration whose
// body starts with foreignKeysOff runs with foreign keys off: PRAGMA
// foreign_keys does nothing inside a transaction, so it is set before
// BEGIN and set back after; before COMMIT, PRAGMA foreign_key_check must
// find no row that points nowhere, or the migration rolls back.
func (db *DB) applyOn(ctx context.Context, conn *sql.Conn, body string, apply func() error) (err error) {
	fkOff := strings.HasPrefix(body, foreignKeysOff)
	if fkOff {
		if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
			return err
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`)
	}
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
		}
	}()
	if err := apply(); err != nil {
		return err
	}
	if fkOff {
		var table string
		var rowid sql.NullInt64
		var parent string
		var fkid int64
		switch err := conn.QueryRowContext(ctx, `PRAGMA foreign_key_check`).Scan(&table, &rowid, &parent, &fkid); {
		case err == nil:
			return fmt.Errorf("foreign key check: row %d of %s points to a missing row of %s", rowid.Int64, table, parent)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("foreign key check: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// applyOnce runs a migration's body in tx and records it, unless it is
// recorded already (another process applied it first).
func applyOnce(ctx context.Context, tx *sql.Conn, name, body string, now time.Time) error {
	if done, err := recorded(ctx, tx, name); err != nil || done {
		return err
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, name, now)
	return err
}

// recorded reports whether schema_migrations records the migration name.
func recorded(ctx context.Context, conn *sql.Conn, name string) (bool, error) {
	var n int
	err := conn.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, name).Scan(&n)
	return n > 0, err
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
	err := db.read(ctx, func(ctx context.Context, q *sql.Conn) error {
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
