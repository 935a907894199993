package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/loremnews/loremnews"
)

// The operations of the benchmarking endpoints (see loremnews.BenchmarkStore).
// Each write action is one transaction that starts with its random picks, so
// the transaction reads and then writes, like ordinary application code.

// pickRandomID picks a random row of table: a random id between the smallest
// and largest, then the first row at or after it, wrapping around to the
// first row if rows after it were deleted meanwhile. table is one of our own
// constants, never user input.
func pickRandomID(ctx context.Context, q querier, table string) (int64, error) {
	var lo, hi sql.NullInt64
	// Two subqueries, not "SELECT min(id), max(id)": SQLite answers a lone
	// min() or max() from the b-tree's edge, but scans the table for both.
	if err := q.QueryRowContext(ctx, `SELECT (SELECT min(id) FROM `+table+`), (SELECT max(id) FROM `+table+`)`).Scan(&lo, &hi); err != nil {
		return 0, err
	}
	if !lo.Valid {
		return 0, loremnews.Errorf(loremnews.ENOTFOUND, "There are no %s to pick from.", table)
	}
	target := lo.Int64 + rand.Int64N(hi.Int64-lo.Int64+1)
	var id int64
	err := q.QueryRowContext(ctx, `SELECT id FROM `+table+` WHERE id >= ? ORDER BY id LIMIT 1`, target).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		err = q.QueryRowContext(ctx, `SELECT id FROM `+table+` ORDER BY id LIMIT 1`).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, loremnews.Errorf(loremnews.ENOTFOUND, "There are no %s to pick from.", table)
		}
	}
	return id, err
}

// touchRandomUser picks a random user and sets its last_seen_at to now.
func (db *DB) touchRandomUser(ctx context.Context, tx *sql.Tx) (int64, error) {
	id, err := pickRandomID(ctx, tx, "users")
	if err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE users SET last_seen_at = ? WHERE id = ?`, db.now(), id)
	return id, err
}

// TouchRandomUser updates a random user's last_seen_at and returns its id
// (only the id: the write's critical section does no more than it must).
func (db *DB) TouchRandomUser(ctx context.Context) (int64, error) {
	var id int64
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		id, err = db.touchRandomUser(ctx, tx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("touch random user: %w", err)
	}
	return id, nil
}

// CreatePostByRandomUser touches a random user and creates a post by them.
func (db *DB) CreatePostByRandomUser(ctx context.Context, in loremnews.PostInput) (*loremnews.Post, error) {
	var p *loremnews.Post
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		userID, err := db.touchRandomUser(ctx, tx)
		if err != nil {
			return err
		}
		p, err = db.insertPost(ctx, tx, userID, in)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create post by random user: %w", err)
	}
	return p, nil
}

// CreateCommentOnRandomPost touches a random user and has them comment on a random post.
func (db *DB) CreateCommentOnRandomPost(ctx context.Context, in loremnews.CommentInput) (*loremnews.Comment, error) {
	var c *loremnews.Comment
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		userID, err := db.touchRandomUser(ctx, tx)
		if err != nil {
			return err
		}
		postID, err := pickRandomID(ctx, tx, "posts")
		if err != nil {
			return err
		}
		c, err = db.insertComment(ctx, tx, postID, userID, in)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create comment on random post: %w", err)
	}
	return c, nil
}

// DeleteRandomPost touches a random user and deletes a random post.
func (db *DB) DeleteRandomPost(ctx context.Context) error {
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := db.touchRandomUser(ctx, tx); err != nil {
			return err
		}
		id, err := pickRandomID(ctx, tx, "posts")
		if err != nil {
			return err
		}
		return deletePost(ctx, tx, id)
	})
	if err != nil {
		return fmt.Errorf("delete random post: %w", err)
	}
	return nil
}

// DeleteRandomComment touches a random user and deletes a random comment.
func (db *DB) DeleteRandomComment(ctx context.Context) (int64, error) {
	var postID int64
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := db.touchRandomUser(ctx, tx); err != nil {
			return err
		}
		id, err := pickRandomID(ctx, tx, "comments")
		if err != nil {
			return err
		}
		postID, err = deleteComment(ctx, tx, id)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete random comment: %w", err)
	}
	return postID, nil
}

// RandomPostID picks a random post for the read-only actions.
func (db *DB) RandomPostID(ctx context.Context) (int64, error) {
	var id int64
	err := db.read(ctx, func(q querier) (err error) {
		id, err = pickRandomID(ctx, q, "posts")
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("random post: %w", err)
	}
	return id, nil
}

// PostIDRange returns the smallest and largest post ids (0, 0 when there are none).
func (db *DB) PostIDRange(ctx context.Context) (minID, maxID int64, err error) {
	err = db.read(ctx, func(q querier) error {
		var lo, hi sql.NullInt64
		err := q.QueryRowContext(ctx, `SELECT (SELECT min(id) FROM posts), (SELECT max(id) FROM posts)`).Scan(&lo, &hi)
		minID, maxID = lo.Int64, hi.Int64
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("post id range: %w", err)
	}
	return minID, maxID, nil
}

// PointRead reads a random user's screen name in one statement: the id
// range from the primary key's two edges, then one seek at a random id in
// it (wrapping to the first user past a gap at the end).
func (db *DB) PointRead(ctx context.Context) (string, error) {
	var name sql.NullString
	err := db.read(ctx, func(q querier) error {
		return q.QueryRowContext(ctx, `SELECT coalesce(
			(SELECT screen_name FROM users WHERE id >= (SELECT min(id) FROM users) + ?1 % ((SELECT max(id) FROM users) - (SELECT min(id) FROM users) + 1)
				ORDER BY id LIMIT 1),
			(SELECT screen_name FROM users ORDER BY id LIMIT 1))`, rand.Int64()).Scan(&name)
	})
	if err != nil {
		return "", fmt.Errorf("point read: %w", err)
	}
	if !name.Valid {
		return "", loremnews.Errorf(loremnews.ENOTFOUND, "There are no users to pick from.")
	}
	return name.String, nil
}
