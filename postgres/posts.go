package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
)

const (
	postColumns   = `p.id, p.user_id, p.title, p.description, p.published_at, p.comments_count, p.created_at, p.updated_at`
	authorColumns = `u.id, u.screen_name`
)

var errPostNotFound = loremnews.Errorf(loremnews.ENOTFOUND, "Post not found.")

func scanPostWithAuthor(row pgx.Row) (*loremnews.Post, error) {
	var p loremnews.Post
	var u loremnews.User
	if err := row.Scan(&p.ID, &p.UserID, &p.Title, &p.Description, nanotime.Into(&p.PublishedAt), &p.CommentsCount, nanotime.Into(&p.CreatedAt), nanotime.Into(&p.UpdatedAt),
		&u.ID, &u.ScreenName); err != nil {
		return nil, err
	}
	p.Author = &u
	return &p, nil
}

func findPost(ctx context.Context, q querier, id int64) (*loremnews.Post, error) {
	p, err := scanPostWithAuthor(q.QueryRow(ctx, `SELECT `+postColumns+`, `+authorColumns+`
		FROM posts p JOIN users u ON u.id = p.user_id WHERE p.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errPostNotFound
	}
	return p, err
}

// queryPosts lists post summaries with their authors; tail is the
// WHERE/ORDER/LIMIT part.
func queryPosts(ctx context.Context, q querier, tail string, args ...any) ([]*loremnews.Post, error) {
	rows, err := q.Query(ctx, `SELECT p.id, p.user_id, p.title, p.comments_count, p.created_at, `+authorColumns+`
		FROM posts p JOIN users u ON u.id = p.user_id `+tail, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*loremnews.Post, error) {
		p := &loremnews.Post{Author: &loremnews.User{}}
		return p, r.Scan(&p.ID, &p.UserID, &p.Title, &p.CommentsCount, nanotime.Into(&p.CreatedAt), &p.Author.ID, &p.Author.ScreenName)
	})
}

// CreatePost stores a new post by userID and counts it in the author's posts_count.
func (db *DB) CreatePost(ctx context.Context, userID int64, in loremnews.PostInput) (*loremnews.Post, error) {
	var p *loremnews.Post
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) (err error) {
		p, err = db.insertPost(ctx, tx, userID, in)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create post: %w", err)
	}
	return p, nil
}

// insertPost inserts the post, then counts it on its author's row (users
// are locked last).
func (db *DB) insertPost(ctx context.Context, tx pgx.Tx, userID int64, in loremnews.PostInput) (*loremnews.Post, error) {
	p, err := db.insertPostRow(ctx, tx, userID, in)
	if err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, `UPDATE users SET posts_count = posts_count + 1 WHERE id = $1`, userID)
	return p, err
}

// insertPostRow inserts the post only; the caller counts it on its author's
// row, after every other lock the transaction takes.
func (db *DB) insertPostRow(ctx context.Context, tx pgx.Tx, userID int64, in loremnews.PostInput) (*loremnews.Post, error) {
	now := db.now()
	p := &loremnews.Post{UserID: userID, Title: in.Title, Description: in.Description, PublishedAt: now, CreatedAt: now, UpdatedAt: now}
	err := tx.QueryRow(ctx, `INSERT INTO posts (user_id, title, description, published_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $4, $4) RETURNING id`, userID, in.Title, in.Description, nanotime.Value(now)).Scan(&p.ID)
	if err != nil {
		return nil, uniqueError(err)
	}
	return p, nil
}

// FindPostByID returns the post with its author, or ENOTFOUND.
func (db *DB) FindPostByID(ctx context.Context, id int64) (*loremnews.Post, error) {
	var p *loremnews.Post
	err := db.read(ctx, func(q querier) (err error) {
		p, err = findPost(ctx, q, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("find post %d: %w", id, err)
	}
	return p, nil
}

// UpdatePost changes a post's title and description.
func (db *DB) UpdatePost(ctx context.Context, id int64, in loremnews.PostInput) (*loremnews.Post, error) {
	var p *loremnews.Post
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE posts SET title = $1, description = $2, updated_at = $3 WHERE id = $4`,
			in.Title, in.Description, nanotime.Value(db.now()), id)
		if err != nil {
			return uniqueError(err)
		}
		if err := mustAffect(tag, "Post"); err != nil {
			return err
		}
		p, err = findPost(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update post %d: %w", id, err)
	}
	return p, nil
}

// DeletePost removes a post; its comments go by cascade.
func (db *DB) DeletePost(ctx context.Context, id int64) error {
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		authorID, err := deletePostRow(ctx, tx, id)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE users SET posts_count = posts_count - 1 WHERE id = $1`, authorID)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete post %d: %w", id, err)
	}
	return nil
}

// deletePostRow removes the post (locking it, then its comments by cascade)
// and returns its author, whose posts_count the caller uncounts: after the
// other users the transaction touches, in id order.
func deletePostRow(ctx context.Context, tx pgx.Tx, id int64) (authorID int64, err error) {
	err = tx.QueryRow(ctx, `DELETE FROM posts WHERE id = $1 RETURNING user_id`, id).Scan(&authorID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errPostNotFound
	}
	return authorID, err
}

// PostsBefore lists the newest posts with id < beforeID: a range of the
// primary key, however deep the page, never an OFFSET scan. Ids grow with
// time, so "newest" is the id order.
func (db *DB) PostsBefore(ctx context.Context, beforeID int64, limit int) ([]*loremnews.Post, error) {
	var posts []*loremnews.Post
	err := db.read(ctx, func(q querier) (err error) {
		posts, err = queryPosts(ctx, q, `WHERE p.id < $1 ORDER BY p.id DESC LIMIT $2`, beforeID, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("posts before %d: %w", beforeID, err)
	}
	return posts, nil
}

// PostPage loads a post, its author, and its comments newest first.
func (db *DB) PostPage(ctx context.Context, id int64) (*loremnews.Post, []*loremnews.Comment, error) {
	var (
		p        *loremnews.Post
		comments []*loremnews.Comment
	)
	err := db.readSnapshot(ctx, func(q querier) (err error) {
		p, comments, err = postPage(ctx, q, id)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("post page %d: %w", id, err)
	}
	return p, comments, nil
}

// postPage reads a post with its author and comments; see PostPage.
func postPage(ctx context.Context, q querier, id int64) (*loremnews.Post, []*loremnews.Comment, error) {
	p, err := findPost(ctx, q, id)
	if loremnews.ErrorCode(err) == loremnews.ENOTFOUND {
		return nil, nil, wasDeleted(ctx, q, "posts", id, err)
	} else if err != nil {
		return nil, nil, err
	}
	rows, err := q.Query(ctx, `SELECT c.id, c.user_id, c.body, c.created_at, u.screen_name
		FROM comments c JOIN users u ON u.id = c.user_id
		WHERE c.post_id = $1 ORDER BY c.id DESC`, p.ID)
	if err != nil {
		return nil, nil, err
	}
	comments, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*loremnews.Comment, error) {
		c := &loremnews.Comment{PostID: p.ID, Post: p, Author: &loremnews.User{}}
		err := r.Scan(&c.ID, &c.UserID, &c.Body, nanotime.Into(&c.CreatedAt), &c.Author.ScreenName)
		c.Author.ID = c.UserID
		return c, err
	})
	return p, comments, err
}

// wasDeleted tells a deleted row from one that never existed: an absent id
// no larger than the last id the table's sequence issued was deleted (or,
// unlike SQLite, its insert failed). It returns EGONE or notFound. table is
// one of our own constants.
func wasDeleted(ctx context.Context, q querier, table string, id int64, notFound error) error {
	var last pgtype.Int8
	if err := q.QueryRow(ctx, `SELECT pg_sequence_last_value(pg_get_serial_sequence($1, 'id')::regclass)`, table).Scan(&last); err != nil {
		return err
	}
	if last.Valid && id <= last.Int64 {
		return loremnews.Errorf(loremnews.EGONE, "This has been deleted.")
	}
	return notFound
}
