package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
)

// Benchmark runs the actions of the benchmarking endpoints on a database
// (loremnews.BenchmarkStore). Each write action is one transaction that
// starts with its random picks, so the transaction reads and then writes,
// like ordinary application code; each read action touches a random user
// (a write transaction of its own, committed before the read) and then
// reads its page from one snapshot.
type Benchmark struct{ db *DB }

// Benchmark returns the benchmarking actions on db.
func (db *DB) Benchmark() loremnews.BenchmarkStore { return &Benchmark{db: db} }

// pickRandomID picks a random row of table: a random id between the smallest
// and largest, then the first row at or after it, wrapping around to the
// first row if rows after it were deleted meanwhile. table is one of our own
// constants, never user input.
func pickRandomID(ctx context.Context, q Querier, table string) (int64, error) {
	pick, ok := picks[table]
	if !ok {
		pick = pickSQLFor(table)
	}
	var lo, hi sql.NullInt64
	if err := q.QueryRow(ctx, pick.bounds).Scan(&lo, &hi); err != nil {
		return 0, err
	}
	if !lo.Valid {
		return 0, loremnews.Errorf(loremnews.ENOTFOUND, "There are no %s to pick from.", table)
	}
	target := lo.Int64 + rand.Int64N(hi.Int64-lo.Int64+1)
	var id int64
	err := q.QueryRow(ctx, pick.atOrAfter, target).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		err = q.QueryRow(ctx, pick.first).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, loremnews.Errorf(loremnews.ENOTFOUND, "There are no %s to pick from.", table)
		}
	}
	return id, err
}

// pickSQL is pickRandomID's statements for one table.
type pickSQL struct{ bounds, atOrAfter, first string }

// picks holds pickSQL for the tables the actions pick from, so a pick
// builds no query text (a touch runs one inside the writer's turn).
var picks = map[string]pickSQL{
	"users":    pickSQLFor("users"),
	"posts":    pickSQLFor("posts"),
	"comments": pickSQLFor("comments"),
}

func pickSQLFor(table string) pickSQL {
	return pickSQL{
		// Two subqueries, not "SELECT min(id), max(id)": SQLite answers a lone
		// min() or max() from the b-tree's edge, but scans the table for both.
		bounds:    `SELECT (SELECT min(id) FROM ` + table + `), (SELECT max(id) FROM ` + table + `)`,
		atOrAfter: `SELECT id FROM ` + table + ` WHERE id >= ? ORDER BY id LIMIT 1`,
		first:     `SELECT id FROM ` + table + ` ORDER BY id LIMIT 1`,
	}
}

// touchRandomUser picks a random user (pickRandomID) and sets its
// last_seen_at to now: a read, then a write, as an app that loads a
// record before it updates it.
func touchRandomUser(ctx context.Context, tx Execer, now time.Time) (int64, error) {
	id, err := pickRandomID(ctx, tx, "users")
	if err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `UPDATE users SET last_seen_at = ? WHERE id = ?`, nanotime.Value(now), id)
	return id, err
}

// touch updates a random user's last_seen_at in a write transaction of its
// own and returns the user's id once it has committed. On the writer
// goroutine, the touches queued at one moment share one transaction.
func (b *Benchmark) touch(ctx context.Context) (int64, error) {
	var (
		id  int64
		err error
	)
	err = b.db.coalesce(ctx, func(ctx context.Context, tx Execer) (err error) {
		id, err = touchRandomUser(ctx, tx, b.db.now())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("touch random user: %w", err)
	}
	return id, nil
}

// CreatePost touches a random user and creates a post by them.
func (b *Benchmark) CreatePost(ctx context.Context, in loremnews.PostInput) (*loremnews.Post, error) {
	var p *loremnews.Post
	err := b.db.write(ctx, func(ctx context.Context, tx Execer) error {
		userID, err := touchRandomUser(ctx, tx, b.db.now())
		if err != nil {
			return err
		}
		p, err = b.db.insertPost(ctx, tx, userID, in)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create post by random user: %w", err)
	}
	return p, nil
}

// CreateComment touches a random user and has them comment on a random post.
func (b *Benchmark) CreateComment(ctx context.Context, in loremnews.CommentInput) (*loremnews.Comment, error) {
	var c *loremnews.Comment
	err := b.db.write(ctx, func(ctx context.Context, tx Execer) error {
		userID, err := touchRandomUser(ctx, tx, b.db.now())
		if err != nil {
			return err
		}
		postID, err := pickRandomID(ctx, tx, "posts")
		if err != nil {
			return err
		}
		c, err = b.db.insertComment(ctx, tx, postID, userID, in)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create comment on random post: %w", err)
	}
	return c, nil
}

// DeletePost touches a random user and deletes a random post.
func (b *Benchmark) DeletePost(ctx context.Context) (int64, error) {
	var id int64
	err := b.db.write(ctx, func(ctx context.Context, tx Execer) (err error) {
		if _, err := touchRandomUser(ctx, tx, b.db.now()); err != nil {
			return err
		}
		if id, err = pickRandomID(ctx, tx, "posts"); err != nil {
			return err
		}
		return deletePost(ctx, tx, id)
	})
	if err != nil {
		return 0, fmt.Errorf("delete random post: %w", err)
	}
	return id, nil
}

// DeleteComment touches a random user and deletes a random comment.
func (b *Benchmark) DeleteComment(ctx context.Context) (int64, int64, error) {
	var id, postID int64
	err := b.db.write(ctx, func(ctx context.Context, tx Execer) (err error) {
		if _, err := touchRandomUser(ctx, tx, b.db.now()); err != nil {
			return err
		}
		if id, err = pickRandomID(ctx, tx, "comments"); err != nil {
			return err
		}
		postID, err = deleteComment(ctx, tx, id)
		return err
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
	read := func(ctx context.Context, q Querier) error {
		id, err := pickRandomID(ctx, q, "posts")
		if err != nil {
			return err
		}
		p, comments, err = postPage(ctx, q, b.db.names, id)
		return err
	}
	// The post is picked and its page read in one snapshot; should the page
	// still find it gone (EGONE), pick again, up to maxAttempts times.
	var err error
	for range maxAttempts {
		if err = b.db.read(ctx, read); loremnews.ErrorCode(err) != loremnews.EGONE {
			break
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("show random post: %w", err)
	}
	return p, comments, nil
}

// maxAttempts bounds how often a read action picks again after its pick
// vanished.
const maxAttempts = 10

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
	err := b.db.read(ctx, func(ctx context.Context, q Querier) error {
		var lo, hi sql.NullInt64
		if err := q.QueryRow(ctx, `SELECT (SELECT min(id) FROM posts), (SELECT max(id) FROM posts)`).Scan(&lo, &hi); err != nil {
			return err
		}
		from = lo.Int64
		if hi.Int64 > lo.Int64 {
			from += rand.Int64N(hi.Int64 - lo.Int64 + 1)
		}
		var err error
		posts, err = queryPosts(ctx, q, b.db.names, fromIDTail, from, limit)
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
	var name sql.NullString
	err := b.db.read(ctx, func(ctx context.Context, q Querier) error {
		return q.QueryRow(ctx, `SELECT coalesce(
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
