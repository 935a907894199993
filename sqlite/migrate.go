package sqlite

import (
	"context"
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlitedb"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrate applies every embedded migration not yet recorded
// (sqlitedb.Migrate: each in a transaction of its own, in file-name order,
// recorded in schema_migrations). It runs when the database opens
// (Setup.Migrate), on one connection, before anything else of this
// process uses it.
var migrate = sqlitedb.Migrate(migrationFS, "migrations/*.sql")

// registerFunctions gives a connection the SQL functions the migrations
// call (Setup.Conn): loremnews_unix_nanos, which migration 0003 converts
// DATETIME text with, loremnews_skeleton, which migration 0004 computed the
// look-alike keys of the stored names and titles with, and
// loremnews_name_key and loremnews_title_key, which 0011 computes their
// keys with now.
func registerFunctions(c *sqlite3.SQLiteConn) error {
	for _, f := range []struct {
		name string
		impl any
	}{
		{"loremnews_unix_nanos", unixNanosOfText},
		{"loremnews_skeleton", skeletonOfText},
		{"loremnews_name_key", nameKeyOfText},
		{"loremnews_title_key", loremnews.TitleKey},
	} {
		if err := c.RegisterFunc(f.name, f.impl, true); err != nil {
			return fmt.Errorf("register %s: %w", f.name, err)
		}
	}
	return nil
}

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

// skeletonOfText is loremnews_skeleton: loremnews.ConfusableKey of a
// text, the key the store writes beside each screen name and title. NULL
// stays NULL.
func skeletonOfText(v any) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []byte: // the driver's form of NULL, or a BLOB
		if v == nil {
			return nil, nil
		}
		return loremnews.ConfusableKey(string(v)), nil
	case string:
		return loremnews.ConfusableKey(v), nil
	}
	return nil, fmt.Errorf("a %T is not text", v)
}

// Migrations lists the applied migrations, oldest first.
func (db *DB) Migrations(ctx context.Context) ([]string, error) {
	var names []string
	err := db.read(ctx, func(ctx context.Context, q Querier) (err error) {
		rows, err := q.Query(ctx, `SELECT version FROM `+sqlitedb.MigrationsTable+` ORDER BY version`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return err
			}
			names = append(names, name)
		}
		return rows.Err()
	})
	return names, err
}

// nameKeyOfText is loremnews_name_key(name, which): the key of name as
// shown (0), in small letters (1) or in capitals (2) (loremnews.NameKeys).
func nameKeyOfText(name string, which int64) (string, error) {
	k := loremnews.ScreenNameKeys(name)
	switch which {
	case 0:
		return k.Shown, nil
	case 1:
		return k.Small, nil
	case 2:
		return k.Capitals, nil
	}
	return "", fmt.Errorf("loremnews_name_key: no key %d", which)
}
