package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"math"
	"sort"

	"github.com/jackc/pgx/v5"
	"github.com/loremnews/loremnews"
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
			if after := afterMigration[name]; after != nil {
				if err := after(ctx, tx); err != nil {
					return fmt.Errorf("migration %s: %w", name, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, name, db.now()); err != nil {
				return err
			}
		}
		return nil
	})
}

// afterMigration is Go a migration needs run right after its SQL, in the
// same transaction: what SQL cannot compute.
var afterMigration = map[string]func(context.Context, pgx.Tx) error{
	"migrations/0004_confusable_keys.sql":            fillConfusableKeys,
	"migrations/0011_name_and_title_keys.sql":        fillNameAndTitleKeys,
	"migrations/0014_name_keys_read_fewer_pairs.sql": fillNameKeys,
}

// fillConfusableKeys gives every user and post stored before migration
// 0004 its look-alike key (loremnews.ConfusableKey, as the store computes
// it on insert), keyBatch rows per statement, in id order.
func fillConfusableKeys(ctx context.Context, tx pgx.Tx) error {
	for _, t := range []struct{ table, column, key string }{
		{"users", "screen_name", "screen_name_key"},
		{"posts", "title", "title_key"},
	} {
		for last := int64(math.MinInt64); ; {
			rows, _ := tx.Query(ctx, `SELECT id, `+t.column+` FROM `+t.table+` WHERE id > $1 ORDER BY id LIMIT $2`, last, keyBatch)
			var (
				ids  []int64
				keys []string
				id   int64
				text string
			)
			_, err := pgx.ForEachRow(rows, []any{&id, &text}, func() error {
				ids, keys = append(ids, id), append(keys, loremnews.ConfusableKey(text))
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s keys: %w", t.table, err)
			}
			if len(ids) == 0 {
				break
			}
			if _, err := tx.Exec(ctx, `UPDATE `+t.table+` AS t SET `+t.key+` = v.key
				FROM unnest($1::bigint[], $2::text[]) AS v (id, key) WHERE t.id = v.id`, ids, keys); err != nil {
				return fmt.Errorf("%s keys: %w", t.table, err)
			}
			last = ids[len(ids)-1]
		}
	}
	return nil
}

// fillNameAndTitleKeys gives every user its three name keys
// (loremnews.ScreenNameKeys) and every post its title key
// (loremnews.TitleKey), keyBatch rows per statement, in id order.
func fillNameAndTitleKeys(ctx context.Context, tx pgx.Tx) error {
	return fillKeys(ctx, tx, userNameKeys, postTitleKeys)
}

// fillNameKeys gives every user its three name keys again.
func fillNameKeys(ctx context.Context, tx pgx.Tx) error { return fillKeys(ctx, tx, userNameKeys) }

// keyedTable is a table whose key columns are computed from a text
// column by Go.
type keyedTable struct {
	table, column string
	keys          []string
	of            func(string) []string
}

var (
	userNameKeys = keyedTable{"users", "screen_name", []string{"screen_name_key", "screen_name_small_key", "screen_name_capitals_key"}, func(s string) []string {
		k := loremnews.ScreenNameKeys(s)
		return []string{k.Shown, k.Small, k.Capitals}
	}}
	postTitleKeys = keyedTable{"posts", "title", []string{"title_key"}, func(s string) []string { return []string{loremnews.TitleKey(s)} }}
)

// fillKeys computes the key columns of every row of each of tables,
// keyBatch rows per statement, in id order.
func fillKeys(ctx context.Context, tx pgx.Tx, tables ...keyedTable) error {
	for _, t := range tables {
		set, unnest := "", "$1::bigint[]"
		for i, k := range t.keys {
			set += fmt.Sprintf(", %s = v.k%d", k, i)
			unnest += fmt.Sprintf(", $%d::text[]", i+2)
		}
		names := "id"
		for i := range t.keys {
			names += fmt.Sprintf(", k%d", i)
		}
		for last := int64(math.MinInt64); ; {
			rows, _ := tx.Query(ctx, `SELECT id, `+t.column+` FROM `+t.table+` WHERE id > $1 ORDER BY id LIMIT $2`, last, keyBatch)
			var (
				ids  []int64
				keys = make([][]string, len(t.keys))
				id   int64
				text string
			)
			_, err := pgx.ForEachRow(rows, []any{&id, &text}, func() error {
				ids = append(ids, id)
				for i, k := range t.of(text) {
					keys[i] = append(keys[i], k)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s keys: %w", t.table, err)
			}
			if len(ids) == 0 {
				break
			}
			args := []any{ids}
			for _, k := range keys {
				args = append(args, k)
			}
			if _, err := tx.Exec(ctx, `UPDATE `+t.table+` AS t SET `+set[2:]+`
				FROM unnest(`+unnest+`) AS v (`+names+`) WHERE t.id = v.id`, args...); err != nil {
				return fmt.Errorf("%s keys: %w", t.table, err)
			}
			last = ids[len(ids)-1]
		}
	}
	return nil
}

// keyBatch is how many rows one statement of fillConfusableKeys and
// fillNameAndTitleKeys keys.
const keyBatch = 1000

// Migrations lists the applied migrations, oldest first.
func (db *DB) Migrations(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, db.mapError(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, db.mapError(err)
}
