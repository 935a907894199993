package sqlite

import (
	"context"
	"fmt"
	"iter"
	"strconv"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
)

// ImportDataset replaces every row with the given users, posts and comments
// (keeping their ids), then sets the counter caches to the true counts.
func (db *DB) ImportDataset(ctx context.Context, ds *loremnews.Dataset) error {
	return db.ImportStream(ctx, ds.Stream())
}

// ImportStream replaces every row with the stream's (keeping their ids),
// then sets the counter caches to the true counts. The rate limits'
// counters go too: the accounts they counted are gone. Each table's rows go
// through one prepared statement, so memory stays flat however many rows
// come: SQLite spills the transaction's pages to the WAL, not to RAM.
//
// It is one transaction, not a commit every N rows: the old rows are
// deleted in it too, so a crash midway (TestCrashDuringSeed) leaves the old
// data whole rather than a part of the new. The price is disk, not memory:
// the WAL holds the whole new data set until the checkpoint after commit.
func (db *DB) ImportStream(ctx context.Context, s loremnews.DatasetStream) error {
	// The caller's context, checked at every row: where writes share a
	// transaction (the batch setup coalesces every write), the
	// transaction's own context does not carry the caller's cancellation.
	caller := ctx
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		for _, stmt := range []string{
			`DELETE FROM comments`, `DELETE FROM posts`, `DELETE FROM sessions`, `DELETE FROM users`, `DELETE FROM rate_limits`,
			`DELETE FROM sqlite_sequence WHERE name IN ('users', 'posts', 'comments', 'sessions')`,
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", stmt, err)
			}
		}
		// Each user gets its keys (loremnews.NameKeys); look-alikes in the
		// data set (stored before the check existed) are kept as they are.
		// Each post gets its title key: a data set may hold titles that
		// are one by it (stored before migration 0005, exported from such
		// a database): a row whose key is taken is inserted again with the
		// key 0005 gives it (lookAlikeKey), so the import keeps them as
		// the migration did: rows come in id order, so the oldest keeps
		// the key. A row that breaks another unique index (the same name
		// or title again) fails the second insert too.
		if err := insertEach(ctx, caller, tx, `INSERT INTO users (id, screen_name, screen_name_key, screen_name_small_key, screen_name_capitals_key,
			password_digest, about, last_seen_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, s.Users, once(func(u *loremnews.User) []any {
			k := loremnews.ScreenNameKeys(u.ScreenName)
			return []any{u.ID, u.ScreenName, k.Shown, k.Small, k.Capitals, u.PasswordDigest, u.About, nanotime.Value(u.LastSeenAt), nanotime.Value(u.CreatedAt), nanotime.Value(u.UpdatedAt)}
		})); err != nil {
			return fmt.Errorf("users: %w", err)
		}
		if err := insertEach(ctx, caller, tx, `INSERT INTO posts (id, user_id, title, title_key, description, published_at, created_at, updated_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`, s.Posts, func(p *loremnews.Post, again bool) []any {
			key := loremnews.TitleKey(p.Title)
			if again {
				key = lookAlikeKey(key, p.ID)
			}
			return []any{p.ID, p.UserID, p.Title, key, p.Description, nanotime.Value(p.PublishedAt), nanotime.Value(p.CreatedAt), nanotime.Value(p.UpdatedAt)}
		}); err != nil {
			return fmt.Errorf("posts: %w", err)
		}
		if err := insertEach(ctx, caller, tx, `INSERT INTO comments (id, post_id, user_id, body, created_at, updated_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6)`, s.Comments, once(func(c *loremnews.Comment) []any {
			return []any{c.ID, c.PostID, c.UserID, c.Body, nanotime.Value(c.CreatedAt), nanotime.Value(c.UpdatedAt)}
		})); err != nil {
			return fmt.Errorf("comments: %w", err)
		}
		if err := insertEach(ctx, caller, tx, `INSERT INTO sessions (id, user_id, token_digest, user_agent, ip_address, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, s.Sessions, once(func(s *loremnews.Session) []any {
			return []any{s.ID, s.UserID, s.TokenDigest, s.UserAgent, s.IPAddress, nanotime.Value(s.CreatedAt), nanotime.Value(s.UpdatedAt)}
		})); err != nil {
			return fmt.Errorf("sessions: %w", err)
		}
		return resetCounters(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("load dataset: %w", err)
	}
	// Fresh statistics for the query planner after a bulk load.
	if err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		_, err := tx.Exec(ctx, `PRAGMA optimize`)
		return err
	}); err != nil {
		return fmt.Errorf("load dataset: optimize: %w", err)
	}
	return nil
}

// insertEach runs query once per row of rows (none when rows is nil), its
// statement prepared once on the connection, and stops when caller is done.
// A row that breaks a unique index is tried once more with
// args(row, true), unless that is nil (see once); SQLite undoes only the
// failed statement, not the transaction.
func insertEach[T any](ctx, caller context.Context, tx Execer, query string, rows iter.Seq[T], args func(row T, again bool) []any) error {
	if rows == nil {
		return nil
	}
	for row := range rows {
		if err := caller.Err(); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, query, args(row, false)...)
		if isUniqueViolation(err) {
			if again := args(row, true); again != nil {
				_, err = tx.Exec(ctx, query, again...)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// once is the arguments of a table that has no second try: nil again.
func once[T any](args func(T) []any) func(T, bool) []any {
	return func(row T, again bool) []any {
		if again {
			return nil
		}
		return args(row)
	}
}

// lookAlikeKey is the key migration 0005 gives a row stored before it
// whose key an older row (a lower id) has: its own, then " DUPLICATE " and
// its id, so the unique index holds. A real key never holds capitals.
func lookAlikeKey(key string, id int64) string {
	return key + " DUPLICATE " + strconv.FormatInt(id, 10)
}

// resetCounters sets every counter cache to the true count, a range of
// counterChunk ids per statement. One statement over a whole table would
// keep, in the statement journal (in memory, temp_store=MEMORY), the old
// image of every page it changes, and in a load's transaction that is the
// whole table: hundreds of MB for a large seed.
func resetCounters(ctx context.Context, tx Execer) error {
	for _, c := range []struct{ table, update string }{
		{"users", `UPDATE users SET posts_count = (SELECT count(*) FROM posts WHERE posts.user_id = users.id) WHERE id BETWEEN ? AND ?`},
		{"posts", `UPDATE posts SET comments_count = (SELECT count(*) FROM comments WHERE comments.post_id = posts.id) WHERE id BETWEEN ? AND ?`},
	} {
		var last int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM `+c.table).Scan(&last); err != nil {
			return fmt.Errorf("count %s: %w", c.table, err)
		}
		for from := int64(1); from <= last; from += counterChunk {
			if _, err := tx.Exec(ctx, c.update, from, from+counterChunk-1); err != nil {
				return fmt.Errorf("count %s: %w", c.table, err)
			}
		}
	}
	return nil
}

// counterChunk is how many ids one counter update covers: its statement
// journal holds at most their pages (a few MB of posts).
const counterChunk = 1000

// Consistency is the result of CheckConsistency.
type Consistency = loremnews.Consistency

// CheckConsistency checks the file's integrity, that no row references a
// missing parent, that every counter cache equals the true count, and that
// every copy of a screen name or a title equals its original. It is for
// tests and operators (it reads every row), not for the request path.
func (db *DB) CheckConsistency(ctx context.Context) (loremnews.Consistency, error) {
	var c loremnews.Consistency
	err := db.read(ctx, func(ctx context.Context, q Querier) error {
		if err := q.QueryRow(ctx, `PRAGMA integrity_check`).Scan(&c.Integrity); err != nil {
			return fmt.Errorf("integrity_check: %w", err)
		}
		rows, err := q.Query(ctx, `PRAGMA foreign_key_check`)
		if err != nil {
			return fmt.Errorf("foreign_key_check: %w", err)
		}
		for rows.Next() {
			c.ForeignKeyErrors++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		return q.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM users u WHERE u.posts_count <> (SELECT count(*) FROM posts p WHERE p.user_id = u.id)),
			(SELECT count(*) FROM posts p WHERE p.comments_count <> (SELECT count(*) FROM comments c WHERE c.post_id = p.id)),
			(SELECT count(*) FROM users), (SELECT count(*) FROM posts),
			(SELECT count(*) FROM comments), (SELECT count(*) FROM sessions)`).Scan(
			&c.WrongPostsCounts, &c.WrongCommentCounts, &c.Users, &c.Posts, &c.Comments, &c.Sessions)
	})
	if err != nil {
		return c, fmt.Errorf("check consistency: %w", err)
	}
	return c, nil
}

// Empty reports whether the database has no users (a fresh file).
func (db *DB) Empty(ctx context.Context) (bool, error) {
	var n int
	err := db.read(ctx, func(ctx context.Context, q Querier) error {
		return q.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM users LIMIT 1)`).Scan(&n)
	})
	if err != nil {
		return false, fmt.Errorf("check empty: %w", err)
	}
	return n == 0, nil
}

// ExportDataset reads every row in id order. It runs in one read transaction, so
// the rows are one consistent snapshot even while the site writes.
func (db *DB) ExportDataset(ctx context.Context) (*loremnews.Dataset, error) {
	ds := &loremnews.Dataset{}
	err := db.read(ctx, func(ctx context.Context, q Querier) error {
		return exportRows(ctx, q, ds)
	})
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return ds, nil
}

// exportRows reads every table into ds, in id order.
func exportRows(ctx context.Context, q Querier, ds *loremnews.Dataset) error {
	err := scanAll(ctx, q, `SELECT id, screen_name, password_digest, about, last_seen_at, posts_count, created_at, updated_at FROM users ORDER BY id`,
		func(rows Rows) error {
			var u loremnews.User
			err := rows.Scan(&u.ID, &u.ScreenName, &u.PasswordDigest, &u.About, nanotime.Into(&u.LastSeenAt), &u.PostsCount,
				nanotime.Into(&u.CreatedAt), nanotime.Into(&u.UpdatedAt))
			ds.Users = append(ds.Users, &u)
			return err
		})
	if err == nil {
		err = scanAll(ctx, q, `SELECT id, user_id, title, description, published_at, comments_count, created_at, updated_at FROM posts ORDER BY id`,
			func(rows Rows) error {
				var p loremnews.Post
				err := rows.Scan(&p.ID, &p.UserID, &p.Title, &p.Description, nanotime.Into(&p.PublishedAt), &p.CommentsCount,
					nanotime.Into(&p.CreatedAt), nanotime.Into(&p.UpdatedAt))
				ds.Posts = append(ds.Posts, &p)
				return err
			})
	}
	if err == nil {
		err = scanAll(ctx, q, `SELECT id, post_id, user_id, body, created_at, updated_at FROM comments ORDER BY id`,
			func(rows Rows) error {
				var c loremnews.Comment
				err := rows.Scan(&c.ID, &c.PostID, &c.UserID, &c.Body, nanotime.Into(&c.CreatedAt), nanotime.Into(&c.UpdatedAt))
				ds.Comments = append(ds.Comments, &c)
				return err
			})
	}
	if err == nil {
		err = scanAll(ctx, q, `SELECT id, user_id, token_digest, user_agent, ip_address, created_at, updated_at FROM sessions ORDER BY id`,
			func(rows Rows) error {
				var s loremnews.Session
				err := rows.Scan(&s.ID, &s.UserID, &s.TokenDigest, &s.UserAgent, &s.IPAddress, nanotime.Into(&s.CreatedAt), nanotime.Into(&s.UpdatedAt))
				ds.Sessions = append(ds.Sessions, &s)
				return err
			})
	}
	return err
}

func scanAll(ctx context.Context, q Querier, query string, scan func(Rows) error) error {
	rows, err := q.Query(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
