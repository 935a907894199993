package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/loremnews/loremnews"
)

// LoadDataset replaces every row with the given users, posts and comments
// (keeping their ids), then sets the counter caches to the true counts.
// It is one transaction: a crash midway leaves the old data untouched.
func (db *DB) LoadDataset(ctx context.Context, users []*loremnews.User, posts []*loremnews.Post, comments []*loremnews.Comment) error {
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, stmt := range []string{
			`DELETE FROM comments`, `DELETE FROM posts`, `DELETE FROM sessions`, `DELETE FROM users`,
			`DELETE FROM sqlite_sequence WHERE name IN ('users', 'posts', 'comments', 'sessions')`,
		} {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", stmt, err)
			}
		}
		if err := insertEach(ctx, tx, `INSERT INTO users (id, screen_name, password_digest, about, last_seen_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, len(users), func(i int) []any {
			u := users[i]
			return []any{u.ID, u.ScreenName, u.PasswordDigest, u.About, u.LastSeenAt, u.CreatedAt, u.UpdatedAt}
		}); err != nil {
			return fmt.Errorf("users: %w", err)
		}
		if err := insertEach(ctx, tx, `INSERT INTO posts (id, user_id, title, description, published_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, len(posts), func(i int) []any {
			p := posts[i]
			return []any{p.ID, p.UserID, p.Title, p.Description, p.PublishedAt, p.CreatedAt, p.UpdatedAt}
		}); err != nil {
			return fmt.Errorf("posts: %w", err)
		}
		if err := insertEach(ctx, tx, `INSERT INTO comments (id, post_id, user_id, body, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)`, len(comments), func(i int) []any {
			c := comments[i]
			return []any{c.ID, c.PostID, c.UserID, c.Body, c.CreatedAt, c.UpdatedAt}
		}); err != nil {
			return fmt.Errorf("comments: %w", err)
		}
		return resetCounters(ctx, tx)
	})
	if err != nil {
		return fmt.Errorf("load dataset: %w", err)
	}
	// Fresh statistics for the query planner after a bulk load.
	if _, err := db.writeDB.ExecContext(ctx, `PRAGMA optimize`); err != nil {
		return fmt.Errorf("load dataset: optimize: %w", err)
	}
	return nil
}

func insertEach(ctx context.Context, tx *sql.Tx, query string, n int, args func(i int) []any) error {
	stmt, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i := range n {
		if _, err := stmt.ExecContext(ctx, args(i)...); err != nil {
			return err
		}
	}
	return nil
}

// resetCounters sets every counter cache to the true count.
func resetCounters(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `UPDATE users SET posts_count = (SELECT count(*) FROM posts WHERE posts.user_id = users.id)`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE posts SET comments_count = (SELECT count(*) FROM comments WHERE comments.post_id = posts.id)`)
	return err
}

// Consistency is the result of CheckConsistency.
type Consistency struct {
	Integrity          string // PRAGMA integrity_check's answer: "ok" when sound
	ForeignKeyErrors   int    // rows of PRAGMA foreign_key_check
	WrongPostsCounts   int    // users whose posts_count differs from their posts
	WrongCommentCounts int    // posts whose comments_count differs from their comments
	Users, Posts       int
	Comments, Sessions int
}

// OK reports whether every check passed.
func (c Consistency) OK() bool {
	return c.Integrity == "ok" && c.ForeignKeyErrors == 0 && c.WrongPostsCounts == 0 && c.WrongCommentCounts == 0
}

// CheckConsistency checks the file's integrity, that no row references a
// missing parent, and that every counter cache equals the true count. It is
// for tests and operators (it reads every row), not for the request path.
func (db *DB) CheckConsistency(ctx context.Context) (Consistency, error) {
	var c Consistency
	err := db.read(ctx, func(q querier) error {
		if err := q.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&c.Integrity); err != nil {
			return fmt.Errorf("integrity_check: %w", err)
		}
		rows, err := q.QueryContext(ctx, `PRAGMA foreign_key_check`)
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
		return q.QueryRowContext(ctx, `SELECT
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
	err := db.read(ctx, func(q querier) error {
		return q.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM users LIMIT 1)`).Scan(&n)
	})
	if err != nil {
		return false, fmt.Errorf("check empty: %w", err)
	}
	return n == 0, nil
}
