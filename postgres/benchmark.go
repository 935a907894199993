package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
)

// Benchmark runs the actions of the benchmarking endpoints on a database
// (loremnews.BenchmarkStore): each write action one transaction that picks
// its random rows and then writes; each read action a touch of a random
// user, committed, then its page from one snapshot. The
// random user's last_seen_at is written last, with any other user row the
// action changes, in id order: users are the rows most transactions share,
// and taking them last and in order is what keeps concurrent actions from
// deadlocking (see the package comment).
type Benchmark struct{ db *DB }

// Benchmark returns the benchmarking actions on db.
func (db *DB) Benchmark() loremnews.BenchmarkStore { return &Benchmark{db: db} }

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
		_, err := tx.Exec(ctx, `UPDATE users SET last_seen_at = $2, posts_count = posts_count - $3 WHERE id = $1`, touched, nanotime.Value(now), delta)
		return err
	}
	first, second := touched, uncount
	if second < first {
		first, second = second, first
	}
	for _, id := range []int64{first, second} {
		var err error
		if id == touched {
			_, err = tx.Exec(ctx, `UPDATE users SET last_seen_at = $2 WHERE id = $1`, id, nanotime.Value(now))
		} else {
			_, err = tx.Exec(ctx, `UPDATE users SET posts_count = posts_count - 1 WHERE id = $1`, id)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// touch updates a random user's last_seen_at in a transaction of its own
// and returns the user's id once it has committed.
func (b *Benchmark) touch(ctx context.Context) (int64, error) {
	db := b.db
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

// CreatePost creates a post by a random user, touching them.
func (b *Benchmark) CreatePost(ctx context.Context, in loremnews.PostInput) (*loremnews.Post, error) {
	db := b.db
	var p *loremnews.Post
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		userID, err := pickRandomID(ctx, tx, "users")
		if err != nil {
			return err
		}
		if p, err = db.insertPostRow(ctx, tx, userID, in); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE users SET posts_count = posts_count + 1, last_seen_at = $2 WHERE id = $1`, userID, nanotime.Value(p.CreatedAt))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create post by random user: %w", err)
	}
	return p, nil
}

// CreateComment has a random user comment on a random post.
func (b *Benchmark) CreateComment(ctx context.Context, in loremnews.CommentInput) (*loremnews.Comment, error) {
	db := b.db
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

// DeletePost deletes a random post, touching a random user.
func (b *Benchmark) DeletePost(ctx context.Context) (int64, error) {
	db := b.db
	var id int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		userID, err := pickRandomID(ctx, tx, "users")
		if err != nil {
			return err
		}
		id, err = pickRandomID(ctx, tx, "posts")
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
		return 0, fmt.Errorf("delete random post: %w", err)
	}
	return id, nil
}

// DeleteComment deletes a random comment, touching a random user.
func (b *Benchmark) DeleteComment(ctx context.Context) (int64, int64, error) {
	db := b.db
	var id, postID int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		userID, err := pickRandomID(ctx, tx, "users")
		if err != nil {
			return err
		}
		id, err = pickRandomID(ctx, tx, "comments")
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
		return 0, 0, fmt.Errorf("delete random comment: %w", err)
	}
	return id, postID, nil
}

// ShowPost touches a random user, then reads a random post's page.
func (b *Benchmark) ShowPost(ctx context.Context) (*loremnews.Post, []*loremnews.Comment, error) {
	if _, err := b.touch(ctx); err != nil {
		return nil, nil, err
	}
	var (
		p        *loremnews.Post
		comments []*loremnews.Comment
	)
	err := b.db.read(ctx, func(q querier) error {
		id, err := pickRandomID(ctx, q, "posts")
		if err != nil {
			return err
		}
		p, comments, err = postPage(ctx, q, id)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("show random post: %w", err)
	}
	return p, comments, nil
}

// ListPosts touches a random user, then reads up to limit posts from a
// random id between the smallest and largest post id on.
func (b *Benchmark) ListPosts(ctx context.Context, limit int) (int64, []*loremnews.Post, error) {
	if _, err := b.touch(ctx); err != nil {
		return 0, nil, err
	}
	var (
		from  int64
		posts []*loremnews.Post
	)
	err := b.db.read(ctx, func(q querier) error {
		var lo, hi pgtype.Int8
		if err := q.QueryRow(ctx, `SELECT (SELECT min(id) FROM posts), (SELECT max(id) FROM posts)`).Scan(&lo, &hi); err != nil {
			return err
		}
		from = lo.Int64
		if hi.Int64 > lo.Int64 {
			from += rand.Int64N(hi.Int64 - lo.Int64 + 1)
		}
		var err error
		posts, err = queryPosts(ctx, q, `WHERE p.id >= $1 ORDER BY p.id LIMIT $2`, from, limit)
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("list posts from a random id: %w", err)
	}
	return from, posts, nil
}

// ShowUser touches a random user, then reads that user's page.
func (b *Benchmark) ShowUser(ctx context.Context, limit int) (*loremnews.User, []*loremnews.Post, []*loremnews.Comment, error) {
	id, err := b.touch(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return b.db.UserPage(ctx, id, limit)
}

// PointRead reads a random user's screen name in one statement: the id
// range from the primary key's two edges, then one seek at a random id in
// it (wrapping to the first user past a gap at the end).
func (b *Benchmark) PointRead(ctx context.Context) (string, error) {
	db := b.db
	var name pgtype.Text
	err := db.readEach(ctx, func(q querier) error {
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
