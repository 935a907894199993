package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
)

var errCommentNotFound = loremnews.Errorf(loremnews.ENOTFOUND, "Comment not found.")

// CreateComment stores a comment and counts it in the post's comments_count.
func (db *DB) CreateComment(ctx context.Context, postID, userID int64, in loremnews.CommentInput) (*loremnews.Comment, error) {
	var c *loremnews.Comment
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) (err error) {
		c, err = db.insertComment(ctx, tx, postID, userID, in)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create comment: %w", err)
	}
	return c, nil
}

// insertComment counts the comment on its post first (locking the post, so
// it cannot be deleted under us), then inserts it.
func (db *DB) insertComment(ctx context.Context, tx pgx.Tx, postID, userID int64, in loremnews.CommentInput) (*loremnews.Comment, error) {
	tag, err := tx.Exec(ctx, `UPDATE posts SET comments_count = comments_count + 1 WHERE id = $1`, postID)
	if err != nil {
		return nil, err
	}
	if err := mustAffect(tag, "Post"); err != nil {
		return nil, err
	}
	now := db.now()
	c := &loremnews.Comment{PostID: postID, UserID: userID, Body: in.Body, CreatedAt: now, UpdatedAt: now}
	err = tx.QueryRow(ctx, `INSERT INTO comments (post_id, user_id, body, created_at, updated_at) VALUES ($1, $2, $3, $4, $4) RETURNING id`,
		postID, userID, in.Body, nanotime.Value(now)).Scan(&c.ID)
	if err != nil {
		return nil, uniqueError(err)
	}
	return c, nil
}

// FindCommentByID returns the comment (with its post's title and author's
// screen name) or ENOTFOUND.
func (db *DB) FindCommentByID(ctx context.Context, id int64) (*loremnews.Comment, error) {
	var c *loremnews.Comment
	err := db.readEach(ctx, func(q querier) (err error) {
		c, err = findComment(ctx, q, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("find comment %d: %w", id, err)
	}
	return c, nil
}

func findComment(ctx context.Context, q querier, id int64) (*loremnews.Comment, error) {
	var (
		c      loremnews.Comment
		title  string
		author string
	)
	err := q.QueryRow(ctx, `SELECT c.id, c.post_id, c.user_id, c.body, c.created_at, p.title, u.screen_name
		FROM comments c
		JOIN posts p ON p.id = c.post_id
		JOIN users u ON u.id = c.user_id WHERE c.id = $1`, id).Scan(&c.ID, &c.PostID, &c.UserID, &c.Body, nanotime.Into(&c.CreatedAt), &title, &author)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errCommentNotFound
	} else if err != nil {
		return nil, err
	}
	c.Post = &loremnews.Post{ID: c.PostID, Title: title}
	c.Author = &loremnews.User{ID: c.UserID, ScreenName: author}
	return &c, nil
}

// UpdateComment changes a comment's body.
func (db *DB) UpdateComment(ctx context.Context, id int64, in loremnews.CommentInput) (*loremnews.Comment, error) {
	var c *loremnews.Comment
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE comments SET body = $1, updated_at = $2 WHERE id = $3`, in.Body, nanotime.Value(db.now()), id)
		if err != nil {
			return err
		}
		if err := mustAffect(tag, "Comment"); err != nil {
			return err
		}
		c, err = findComment(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update comment %d: %w", id, err)
	}
	return c, nil
}

// DeleteComment removes a comment and uncounts it from its post.
func (db *DB) DeleteComment(ctx context.Context, id int64) error {
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := deleteComment(ctx, tx, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete comment %d: %w", id, err)
	}
	return nil
}

// deleteComment locks the comment's post (uncounting the comment), then
// deletes the comment: post before comment, the order a post's deletion
// takes them in. A comment that went meanwhile (a concurrent deletion, seen
// only after waiting for the post) is not found.
func deleteComment(ctx context.Context, tx pgx.Tx, id int64) (postID int64, err error) {
	err = tx.QueryRow(ctx, `SELECT post_id FROM comments WHERE id = $1`, id).Scan(&postID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errCommentNotFound
	} else if err != nil {
		return 0, err
	}
	tag, err := tx.Exec(ctx, `UPDATE posts SET comments_count = comments_count - 1 WHERE id = $1`, postID)
	if err != nil {
		return 0, err
	}
	if tag.RowsAffected() == 1 {
		tag, err = tx.Exec(ctx, `DELETE FROM comments WHERE id = $1`, id)
		if err != nil {
			return 0, err
		}
	}
	if tag.RowsAffected() == 0 {
		// The post or the comment was deleted while we waited for the lock.
		return 0, errCommentNotFound
	}
	return postID, nil
}
