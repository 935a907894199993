package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"

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
	// title_key's unique constraint refuses a look-alike of a taken title
	// (a double space, another case, a Cyrillic е) as the title's does.
	err := tx.QueryRow(ctx, `INSERT INTO posts (user_id, title, title_key, description, published_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $5, $5) RETURNING id`, userID, in.Title, loremnews.TitleKey(in.Title), in.Description,
		nanotime.Value(now)).Scan(&p.ID)
	if err != nil {
		return nil, uniqueError(err)
	}
	return p, nil
}

// FindPostByID returns the post with its author, or ENOTFOUND.
func (db *DB) FindPostByID(ctx context.Context, id int64) (*loremnews.Post, error) {
	var p *loremnews.Post
	err := db.readEach(ctx, func(q querier) (err error) {
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
		// An unchanged title keeps its key (see UpdateProfile); a new one
		// gets its own, which must not be another post's.
		tag, err := tx.Exec(ctx, `UPDATE posts SET title = $1, title_key = CASE WHEN title = $1 THEN title_key ELSE $5 END,
			description = $2, updated_at = $3 WHERE id = $4`,
			in.Title, in.Description, nanotime.Value(db.now()), id, loremnews.TitleKey(in.Title))
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
	err := db.readEach(ctx, func(q querier) (err error) {
		posts, err = queryPosts(ctx, q, `WHERE p.id < $1 ORDER BY p.id DESC LIMIT $2`, beforeID, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("posts before %d: %w", beforeID, err)
	}
	return posts, nil
}

// PostPage loads a post, its author, and its newest comments (a page,
// loremnews.PostCommentsPageSize), newest first, from one snapshot.
func (db *DB) PostPage(ctx context.Context, id int64) (*loremnews.Post, []*loremnews.Comment, error) {
	var (
		p        *loremnews.Post
		comments []*loremnews.Comment
	)
	err := db.read(ctx, func(q querier) (err error) {
		p, comments, err = postPage(ctx, q, id)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("post page %d: %w", id, err)
	}
	return p, comments, nil
}

// PostComments loads a post and at most limit of its comments with
// id < beforeID, newest first, from one snapshot: the next page of its
// comments.
func (db *DB) PostComments(ctx context.Context, postID, beforeID int64, limit int) (*loremnews.Post, []*loremnews.Comment, error) {
	var (
		p        *loremnews.Post
		comments []*loremnews.Comment
	)
	err := db.read(ctx, func(q querier) (err error) {
		p, comments, err = postComments(ctx, q, postID, beforeID, limit)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("comments of post %d before %d: %w", postID, beforeID, err)
	}
	return p, comments, nil
}

// postPage reads a post with its author and its first page of comments;
// see PostPage.
func postPage(ctx context.Context, q querier, id int64) (*loremnews.Post, []*loremnews.Comment, error) {
	return postComments(ctx, q, id, math.MaxInt64, loremnews.PostCommentsPageSize)
}

// postComments reads a post with its author and a page of its comments;
// see PostComments.
func postComments(ctx context.Context, q querier, id, beforeID int64, limit int) (*loremnews.Post, []*loremnews.Comment, error) {
	p, err := findPost(ctx, q, id)
	if loremnews.ErrorCode(err) == loremnews.ENOTFOUND {
		return nil, nil, wasDeleted(ctx, q, "posts", id, err)
	} else if err != nil {
		return nil, nil, err
	}
	comments, err := queryPostComments(ctx, q, p, beforeID, limit)
	return p, comments, err
}

// queryPostComments lists at most limit of a post's comments with
// id < beforeID, newest first, with their authors: a range of
// index_comments_on_post_id, read no further than the page. Every row is
// on post p, so it does not join posts again. PostgreSQL refuses a
// negative LIMIT, so one is made 0.
func queryPostComments(ctx context.Context, q querier, p *loremnews.Post, beforeID int64, limit int) ([]*loremnews.Comment, error) {
	rows, err := q.Query(ctx, `SELECT c.id, c.user_id, c.body, c.created_at, u.screen_name
		FROM comments c JOIN users u ON u.id = c.user_id
		WHERE c.post_id = $1 AND c.id < $2 ORDER BY c.id DESC LIMIT $3`, p.ID, beforeID, max(limit, 0))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*loremnews.Comment, error) {
		c := &loremnews.Comment{PostID: p.ID, Post: p, Author: &loremnews.User{}}
		err := r.Scan(&c.ID, &c.UserID, &c.Body, nanotime.Into(&c.CreatedAt), &c.Author.ScreenName)
		c.Author.ID = c.UserID
		return c, err
	})
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
