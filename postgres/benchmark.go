package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/loremnews/loremnews"
)

// The operations of the benchmarking endpoints (see loremnews.BenchmarkStore),
// each one transaction that picks its random rows and then writes. The
// random user's last_seen_at is written last, with any other user row the
// action changes, in id order: users are the rows most transactions share,
// and taking them last and in order is what keeps concurrent actions from
// deadlocking (see the package comment).

// pickRandomID picks a random row of table as the SQLite store does: a
// random id between the smallest and largest, then the first row at or
// after it, wrapping around to the first row. Here it is one statement, so
// one round trip to the server instead of two or three: the random
// fraction comes from Go, min and max from the index's edges. table is one
// of our own constants.
func pickRandomID(ctx context.Context, q querier, table string) (int64, error) {
	var id pgtype.Int8
	err := q.QueryRow(ctx, `SELECT coalesce(
			(SELECT id FROM `+table+` WHERE id >= (SELECT min(id) + floor($1::float8 * (max(id) - min(id) + 1))::bigint FROM `+table+`)
				ORDER BY id LIMIT 1),
			(SELECT min(id) FROM `+table+`))`, rand.Float64()).Scan(&id)
	if err != nil {
		return 0, err
	}
	if !id.Valid {
		return 0, loremnews.Errorf(loremnews.ENOTFOUND, "There are no %s to pick from.", table)
	}
	return id.Int64, nil
}

// touchUsers sets last_seen_at on touched and, if uncount is not 0, takes
// one off uncount's posts_count: one statement per row, in id order.
func (db *DB) touchUsers(ctx context.Context, tx pgx.Tx, touched, uncount int64) error {
	now := db.now()
	if uncount == 0 || uncount == touched {
		delta := 0
		if uncount != 0 {
			delta = 1
		}
		_, err := tx.Exec(ctx, `UPDATE users SET last_seen_at = $2, posts_count = posts_count - $3 WHERE id = $1`, touched, now, delta)
		return err
	}
	first, second := touched, uncount
	if second < first {
		first, second = second, first
	}
	for _, id := range []int64{first, second} {
		var err error
		if id == touched {
			_, err = tx.Exec(ctx, `UPDATE users SET last_seen_at = $2 WHERE id = $1`, id, now)
		} else {
			_, err = tx.Exec(ctx, `UPDATE users SET posts_count = posts_count - 1 WHERE id = $1`, id)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// TouchRandomUser updates a random user's last_seen_at and returns its id.
func (db *DB) TouchRandomUser(ctx context.Context) (int64, error) {
	var id int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) (err error) {
		if id, err = pickRandomID(ctx, tx, "users"); err != nil {
			return err
		}
		return db.touchUsers(ctx, tx, id, 0)
	})
	if err != nil {
		return 0, fmt.Errorf("touch random user: %w", err)
	}
	return id, nil
}

// CreatePostByRandomUser creates a post by a random user, touching them.
func (db *DB) CreatePostByRandomUser(ctx context.Context, in loremnews.PostInput) (*loremnews.Post, error) {
	var p *loremnews.Post
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		userID, err := pickRandomID(ctx, tx, "users")
		if err != nil {
			return err
		}
		if p, err = db.insertPostRow(ctx, tx, userID, in); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE users SET posts_count = posts_count + 1, last_seen_at = $2 WHERE id = $1`, userID, p.CreatedAt)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create post by random user: %w", err)
	}
	return p, nil
}

// CreateCommentOnRandomPost has a random user comment on a random post.
func (db *DB) CreateCommentOnRandomPost(ctx context.Context, in loremnews.CommentInput) (*loremnews.Comment, error) {
	var c *loremnews.Comment
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		userID, err := pickRandomID(ctx, tx, "users")
		if err != nil {
			return err
		}
		postID, err := pickRandomID(ctx, tx, "posts")
		if err != nil {
			return err
		}
		c, err = db.insertComment(ctx, tx, postID, userID, in)
		if loremnews.ErrorCode(err) == loremnews.ENOTFOUND {
			return errRetry // the post was deleted since we picked it
		} else if err != nil {
			return err
		}
		return db.touchUsers(ctx, tx, userID, 0)
	})
	if err != nil {
		return nil, fmt.Errorf("create comment on random post: %w", err)
	}
	return c, nil
}

// DeleteRandomPost deletes a random post, touching a random user.
func (db *DB) DeleteRandomPost(ctx context.Context) error {
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		userID, err := pickRandomID(ctx, tx, "users")
		if err != nil {
			return err
		}
		id, err := pickRandomID(ctx, tx, "posts")
		if err != nil {
			return err
		}
		authorID, err := deletePostRow(ctx, tx, id)
		if loremnews.ErrorCode(err) == loremnews.ENOTFOUND {
			return errRetry
		} else if err != nil {
			return err
		}
		return db.touchUsers(ctx, tx, userID, authorID)
	})
	if err != nil {
		return fmt.Errorf("delete random post: %w", err)
	}
	return nil
}

// DeleteRandomComment deletes a random comment, touching a random user.
func (db *DB) DeleteRandomComment(ctx context.Context) (int64, error) {
	var postID int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		userID, err := pickRandomID(ctx, tx, "users")
		if err != nil {
			return err
		}
		id, err := pickRandomID(ctx, tx, "comments")
		if err != nil {
			return err
		}
		postID, err = deleteComment(ctx, tx, id)
		if loremnews.ErrorCode(err) == loremnews.ENOTFOUND {
			return errRetry // deleted by a concurrent transaction since we picked it
		} else if err != nil {
			return err
		}
		return db.touchUsers(ctx, tx, userID, 0)
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
		var lo, hi pgtype.Int8
		err := q.QueryRow(ctx, `SELECT (SELECT min(id) FROM posts), (SELECT max(id) FROM posts)`).Scan(&lo, &hi)
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
	var name pgtype.Text
	err := db.read(ctx, func(q querier) error {
		return q.QueryRow(ctx, `SELECT coalesce(
			(SELECT screen_name FROM users WHERE id >= (SELECT min(id) + floor($1::float8 * (max(id) - min(id) + 1))::bigint FROM users)
				ORDER BY id LIMIT 1),
			(SELECT screen_name FROM users ORDER BY id LIMIT 1))`, rand.Float64()).Scan(&name)
	})
	if err != nil {
		return "", fmt.Errorf("point read: %w", err)
	}
	if !name.Valid {
		return "", loremnews.Errorf(loremnews.ENOTFOUND, "There are no users to pick from.")
	}
	return name.String, nil
}
