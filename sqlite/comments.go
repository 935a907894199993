package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
)

// queryComments lists comments with their authors' screen names and their
// posts' titles (from nm; nil in a write transaction); tail is the
// WHERE/ORDER/LIMIT part. UpdatedAt is left zero: no page shows it.
func queryComments(ctx context.Context, q Querier, nm *names, tail string, args ...any) ([]*loremnews.Comment, error) {
	rows, err := q.Query(ctx, `SELECT c.id, c.post_id, c.user_id, c.body, c.created_at
		FROM comments c `+tail, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		comments []*loremnews.Comment
		authors  []*loremnews.User
		posts    []*loremnews.Post
	)
	for rows.Next() {
		var c loremnews.Comment
		if err := rows.Scan(&c.ID, &c.PostID, &c.UserID, &c.Body, nanotime.Into(&c.CreatedAt)); err != nil {
			return nil, err
		}
		c.Post = &loremnews.Post{ID: c.PostID}
		c.Author = &loremnews.User{ID: c.UserID}
		comments = append(comments, &c)
		authors = append(authors, c.Author)
		posts = append(posts, c.Post)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return comments, nm.fill(ctx, q, authors, posts)
}

// CreateComment stores a comment and counts it in the post's comments_count.
func (db *DB) CreateComment(ctx context.Context, postID, userID int64, in loremnews.CommentInput) (*loremnews.Comment, error) {
	var c *loremnews.Comment
	err := db.write(ctx, func(ctx context.Context, tx Execer) (err error) {
		c, err = db.insertComment(ctx, tx, postID, userID, in)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create comment: %w", err)
	}
	return c, nil
}

func (db *DB) insertComment(ctx context.Context, tx Execer, postID, userID int64, in loremnews.CommentInput) (*loremnews.Comment, error) {
	res, err := tx.Exec(ctx, `UPDATE posts SET comments_count = comments_count + 1 WHERE id = ?`, postID)
	if err != nil {
		return nil, err
	}
	if err := mustAffect(res, "Post"); err != nil {
		return nil, err
	}
	now := db.now()
	res, err = tx.Exec(ctx, `INSERT INTO comments (post_id, user_id, body, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5)`,
		postID, userID, in.Body, nanotime.Value(now), nanotime.Value(now))
	if isForeignKeyViolation(err) {
		return nil, loremnews.Errorf(loremnews.ENOTFOUND, "User not found.")
	} else if err != nil {
		return nil, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	return &loremnews.Comment{ID: id, PostID: postID, UserID: userID, Body: in.Body, CreatedAt: now, UpdatedAt: now}, nil
}

// FindCommentByID returns the comment (with its post's title and author's
// screen name) or ENOTFOUND.
func (db *DB) FindCommentByID(ctx context.Context, id int64) (*loremnews.Comment, error) {
	var c *loremnews.Comment
	err := db.read(ctx, func(ctx context.Context, q Querier) (err error) {
		c, err = findComment(ctx, q, db.names, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("find comment %d: %w", id, err)
	}
	return c, nil
}

func findComment(ctx context.Context, q Querier, nm *names, id int64) (*loremnews.Comment, error) {
	cs, err := queryComments(ctx, q, nm, `WHERE c.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, loremnews.Errorf(loremnews.ENOTFOUND, "Comment not found.")
	}
	return cs[0], nil
}

// UpdateComment changes a comment's body.
func (db *DB) UpdateComment(ctx context.Context, id int64, in loremnews.CommentInput) (*loremnews.Comment, error) {
	var c *loremnews.Comment
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		res, err := tx.Exec(ctx, `UPDATE comments SET body = ?, updated_at = ? WHERE id = ?`, in.Body, nanotime.Value(db.now()), id)
		if err != nil {
			return err
		}
		if err := mustAffect(res, "Comment"); err != nil {
			return err
		}
		c, err = findComment(ctx, tx, nil, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update comment %d: %w", id, err)
	}
	return c, nil
}

// DeleteComment removes a comment and uncounts it from its post.
func (db *DB) DeleteComment(ctx context.Context, id int64) error {
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		_, err := deleteComment(ctx, tx, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete comment %d: %w", id, err)
	}
	return nil
}

func deleteComment(ctx context.Context, tx Execer, id int64) (postID int64, err error) {
	err = tx.QueryRow(ctx, `DELETE FROM comments WHERE id = ? RETURNING post_id`, id).Scan(&postID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, loremnews.Errorf(loremnews.ENOTFOUND, "Comment not found.")
	} else if err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `UPDATE posts SET comments_count = comments_count - 1 WHERE id = ?`, postID)
	return postID, err
}
