package postgres

import (
	"context"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"
	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
)

// ImportDataset replaces every row with ds's (keeping ids) in one
// transaction; see ImportStream.
func (db *DB) ImportDataset(ctx context.Context, ds *loremnews.Dataset) error {
	return db.ImportStream(ctx, ds.Stream())
}

// ImportStream replaces every row with the stream's (keeping ids) in one
// transaction, each table through one COPY fed row by row as the stream
// yields (so memory stays flat however many rows come), then sets the
// counter caches to the true counts and each id sequence past the largest id.
// The rate limits' counters go too: the accounts they counted are gone.
func (db *DB) ImportStream(ctx context.Context, s loremnews.DatasetStream) error {
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `TRUNCATE revoked_devices, sessions, comments, posts, users, rate_limits RESTART IDENTITY`); err != nil {
			return err
		}
		// The title keys are checked after dedupeKeys, below: a data set
		// may hold titles that are one, stored before migration 0005. So
		// their unique constraint is dropped for the copy and added back
		// (all in this transaction). Look-alike screen names are kept as
		// they are.
		if _, err := tx.Exec(ctx, `ALTER TABLE posts DROP CONSTRAINT index_posts_on_title_key`); err != nil {
			return err
		}
		copies := []struct {
			table   string
			columns []string
			rows    closingSource
		}{
			{"users", []string{"id", "screen_name", "screen_name_key", "screen_name_small_key", "screen_name_capitals_key",
				"password_digest", "about", "last_seen_at", "created_at", "updated_at"},
				copySource(s.Users, func(u *loremnews.User) []any {
					k := loremnews.ScreenNameKeys(u.ScreenName)
					return []any{u.ID, u.ScreenName, k.Shown, k.Small, k.Capitals, u.PasswordDigest, u.About,
						nanotime.Value(u.LastSeenAt), nanotime.Value(u.CreatedAt), nanotime.Value(u.UpdatedAt)}
				})},
			{"posts", []string{"id", "user_id", "title", "title_key", "description", "published_at", "created_at", "updated_at"},
				copySource(s.Posts, func(p *loremnews.Post) []any {
					return []any{p.ID, p.UserID, p.Title, loremnews.TitleKey(p.Title), p.Description,
						nanotime.Value(p.PublishedAt), nanotime.Value(p.CreatedAt), nanotime.Value(p.UpdatedAt)}
				})},
			{"comments", []string{"id", "post_id", "user_id", "body", "created_at", "updated_at"},
				copySource(s.Comments, func(c *loremnews.Comment) []any {
					return []any{c.ID, c.PostID, c.UserID, c.Body, nanotime.Value(c.CreatedAt), nanotime.Value(c.UpdatedAt)}
				})},
			{"sessions", []string{"id", "user_id", "token_digest", "user_agent", "ip_address", "created_at", "updated_at"},
				copySource(s.Sessions, func(s *loremnews.Session) []any {
					return []any{s.ID, s.UserID, s.TokenDigest, s.UserAgent, s.IPAddress, nanotime.Value(s.CreatedAt), nanotime.Value(s.UpdatedAt)}
				})},
		}
		for _, c := range copies {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{c.table}, c.columns, c.rows)
			c.rows.close()
			if err != nil {
				return fmt.Errorf("%s: %w", c.table, uniqueError(err))
			}
			if _, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, 'id'), coalesce(max(id), 1), max(id) IS NOT NULL) FROM `+c.table, c.table); err != nil {
				return fmt.Errorf("%s sequence: %w", c.table, err)
			}
		}
		for _, stmt := range dedupeKeys {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("look-alike keys: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `ALTER TABLE posts ADD CONSTRAINT index_posts_on_title_key UNIQUE (title_key)`); err != nil {
			return uniqueError(err)
		}
		if _, err := tx.Exec(ctx, `UPDATE users SET posts_count = (SELECT count(*) FROM posts WHERE posts.user_id = users.id)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE posts SET comments_count = (SELECT count(*) FROM comments WHERE comments.post_id = posts.id)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("load dataset: %w", db.mapError(err))
	}
	// Fresh statistics for the query planner after a bulk load.
	if _, err := db.pool.Exec(ctx, `ANALYZE users, posts, comments, sessions`); err != nil {
		return fmt.Errorf("load dataset: analyze: %w", db.mapError(err))
	}
	return nil
}

// dedupeKeys gives every post whose title key an older row (a lower id)
// has the key migration 0005 gives such a row stored before it: its own,
// then " DUPLICATE " and its id. A data set exported from a database with
// such rows so loads as they were; a seeded one has none.
var dedupeKeys = []string{
	`UPDATE posts SET title_key = title_key || ' DUPLICATE ' || id
	  WHERE id IN (SELECT d.id FROM (SELECT id, row_number() OVER (PARTITION BY title_key ORDER BY id) AS n FROM posts) AS d
	               WHERE d.n > 1)`,
}

// rowSource is a CopyFromSource that pulls one row at a time from a
// sequence, so COPY never needs the rows in memory. The pull starts at the
// first Next; close ends it wherever CopyFrom stopped (an error midway).
type rowSource[T any] struct {
	rows   iter.Seq[T]
	next   func() (T, bool)
	stop   func()
	values func(T) []any
	row    []any
}

// copySource feeds COPY from rows (none when rows is nil).
func copySource[T any](rows iter.Seq[T], values func(T) []any) closingSource {
	return &rowSource[T]{rows: rows, values: values}
}

// closingSource is a CopyFromSource that must be closed after CopyFrom.
type closingSource interface {
	pgx.CopyFromSource
	close()
}

func (s *rowSource[T]) Next() bool {
	if s.rows == nil {
		return false
	}
	if s.next == nil {
		s.next, s.stop = iter.Pull(s.rows)
	}
	v, ok := s.next()
	if ok {
		s.row = s.values(v)
	}
	return ok
}

func (s *rowSource[T]) Values() ([]any, error) { return s.row, nil }

func (s *rowSource[T]) Err() error { return nil }

func (s *rowSource[T]) close() {
	if s.stop != nil {
		s.stop()
	}
}

// ExportDataset reads every row in id order from one REPEATABLE READ snapshot.
func (db *DB) ExportDataset(ctx context.Context) (*loremnews.Dataset, error) {
	ds := &loremnews.Dataset{}
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		rows, _ := tx.Query(ctx, `SELECT id, screen_name, password_digest, about, last_seen_at, posts_count, created_at, updated_at FROM users ORDER BY id`)
		if ds.Users, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*loremnews.User, error) {
			var u loremnews.User
			err := r.Scan(&u.ID, &u.ScreenName, &u.PasswordDigest, &u.About, nanotime.Into(&u.LastSeenAt), &u.PostsCount, nanotime.Into(&u.CreatedAt), nanotime.Into(&u.UpdatedAt))
			return &u, err
		}); err != nil {
			return err
		}
		rows, _ = tx.Query(ctx, `SELECT id, user_id, title, description, published_at, comments_count, created_at, updated_at FROM posts ORDER BY id`)
		if ds.Posts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*loremnews.Post, error) {
			var p loremnews.Post
			err := r.Scan(&p.ID, &p.UserID, &p.Title, &p.Description, nanotime.Into(&p.PublishedAt), &p.CommentsCount, nanotime.Into(&p.CreatedAt), nanotime.Into(&p.UpdatedAt))
			return &p, err
		}); err != nil {
			return err
		}
		rows, _ = tx.Query(ctx, `SELECT id, post_id, user_id, body, created_at, updated_at FROM comments ORDER BY id`)
		if ds.Comments, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*loremnews.Comment, error) {
			var c loremnews.Comment
			return &c, r.Scan(&c.ID, &c.PostID, &c.UserID, &c.Body, nanotime.Into(&c.CreatedAt), nanotime.Into(&c.UpdatedAt))
		}); err != nil {
			return err
		}
		rows, _ = tx.Query(ctx, `SELECT id, user_id, token_digest, user_agent, ip_address, created_at, updated_at FROM sessions ORDER BY id`)
		ds.Sessions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (*loremnews.Session, error) {
			var s loremnews.Session
			return &s, r.Scan(&s.ID, &s.UserID, &s.TokenDigest, &s.UserAgent, &s.IPAddress, nanotime.Into(&s.CreatedAt), nanotime.Into(&s.UpdatedAt))
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("export: %w", db.mapError(err))
	}
	return ds, nil
}

// CheckConsistency checks every index with the amcheck extension (installed
// on first use where the role may; otherwise Integrity says it could not
// check), that no row references a missing parent, and the counter caches.
func (db *DB) CheckConsistency(ctx context.Context) (loremnews.Consistency, error) {
	var c loremnews.Consistency
	c.Integrity = db.checkIndexes(ctx)
	err := db.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM posts p WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = p.user_id)) +
		(SELECT count(*) FROM comments c WHERE NOT EXISTS (SELECT 1 FROM posts p WHERE p.id = c.post_id)
			OR NOT EXISTS (SELECT 1 FROM users u WHERE u.id = c.user_id)) +
		(SELECT count(*) FROM sessions s WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = s.user_id)),
		(SELECT count(*) FROM users u WHERE u.posts_count <> (SELECT count(*) FROM posts p WHERE p.user_id = u.id)),
		(SELECT count(*) FROM posts p WHERE p.comments_count <> (SELECT count(*) FROM comments c WHERE c.post_id = p.id)),
		(SELECT count(*) FROM users), (SELECT count(*) FROM posts),
		(SELECT count(*) FROM comments), (SELECT count(*) FROM sessions)`).Scan(
		&c.ForeignKeyErrors, &c.WrongPostsCounts, &c.WrongCommentCounts, &c.Users, &c.Posts, &c.Comments, &c.Sessions)
	if err != nil {
		return c, fmt.Errorf("check consistency: %w", db.mapError(err))
	}
	return c, nil
}

// checkIndexes runs amcheck's bt_index_check on every index of the schema
// and returns "ok" or what is wrong.
func (db *DB) checkIndexes(ctx context.Context) string {
	if _, err := db.pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS amcheck`); err != nil {
		return fmt.Sprintf("not checked (amcheck extension unavailable: %v)", err)
	}
	var n int
	err := db.pool.QueryRow(ctx, `SELECT count(bt_index_check(c.oid, true))
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
		WHERE am.amname = 'btree' AND c.relnamespace = current_schema()::regnamespace`).Scan(&n)
	if err != nil {
		return fmt.Sprintf("index check failed: %v", err)
	}
	return "ok"
}

// Empty reports whether the database has no users (a fresh database).
func (db *DB) Empty(ctx context.Context) (bool, error) {
	var empty bool
	if err := db.pool.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM users)`).Scan(&empty); err != nil {
		return false, fmt.Errorf("check empty: %w", db.mapError(err))
	}
	return empty, nil
}
