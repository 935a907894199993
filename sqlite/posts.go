package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
)

// postColumns is the select list scanned by scanPost. Listings select only
// postSummaryColumns: no description (only the post page shows it) and one
// time, not three (a listing has up to 100 rows).
const (
	postColumns        = `p.id, p.user_id, p.title, p.description, p.published_at, p.comments_count, p.created_at, p.updated_at`
	postSummaryColumns = `p.id, p.user_id, p.title, p.comments_count, p.created_at`
)

func scanPost(s scanner, extra ...any) (*loremnews.Post, error) {
	var p loremnews.Post
	dest := append([]any{&p.ID, &p.UserID, &p.Title, &p.Description, nanotime.Into(&p.PublishedAt), &p.CommentsCount,
		nanotime.Into(&p.CreatedAt), nanotime.Into(&p.UpdatedAt)}, extra...)
	if err := s.Scan(dest...); err != nil {
		return nil, err
	}
	return &p, nil
}

// The listings' statements (ListingPlans checks their query plans).
const (
	postsListingSQL = `SELECT ` + postSummaryColumns + ` FROM posts p `
	frontPageTail   = `WHERE p.id < ? ORDER BY p.id DESC LIMIT ?`
	fromIDTail      = `WHERE p.id >= ? ORDER BY p.id LIMIT ?`
	userPostsSQL    = `SELECT ` + postSummaryColumns + ` FROM posts p
		WHERE p.user_id = ? AND p.id < ? ORDER BY p.id DESC LIMIT ?`
	// The posts' titles come from names, not a post's page each.
	userCommentsSQL = `SELECT c.id, c.post_id, c.body, c.created_at
		FROM comments c
		WHERE c.user_id = ? AND c.id < ? ORDER BY c.id DESC LIMIT ?`
	userCommentCountSQL = `SELECT count(*) FROM comments WHERE user_id = ?`
	postCommentsSQL     = `SELECT c.id, c.user_id, c.body, c.created_at
		FROM comments c
		WHERE c.post_id = ? AND c.id < ? ORDER BY c.id DESC LIMIT ?`
)

// queryPosts lists post summaries (id, author, title, comment count,
// creation time) from index_posts_listing, with their authors' screen
// names from nm; tail is the WHERE/ORDER/LIMIT part, which takes an id
// and the limit (frontPageTail, fromIDTail).
func queryPosts(ctx context.Context, q Querier, nm *names, tail string, id int64, limit int) ([]*loremnews.Post, error) {
	rows, err := q.Query(ctx, postsListingSQL+tail, id, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type postAndAuthor struct {
		post   loremnews.Post
		author loremnews.User
	}
	var (
		postID, userID, created int64
		title                   string
		count                   int
	)
	read, err := readListing(rows, limit, []any{&postID, &userID, &title, &count, &created}, func() postAndAuthor {
		return postAndAuthor{
			post:   loremnews.Post{ID: postID, UserID: userID, Title: title, CommentsCount: count, CreatedAt: nanotime.Time(created)},
			author: loremnews.User{ID: userID},
		}
	})
	if err != nil || len(read) == 0 {
		return nil, err
	}
	posts := make([]*loremnews.Post, len(read))
	authors := make([]*loremnews.User, len(read))
	for i := range read {
		posts[i], authors[i] = &read[i].post, &read[i].author
		posts[i].Author = authors[i]
	}
	return posts, nm.fill(ctx, q, authors, nil)
}

// readListing reads a listing's rows into one slice of values: each row
// scanned into dest, then made a value by row. Its callers point at the
// values once the slice has stopped growing, so a listing costs a few
// allocations, not a struct or two a row. The rows are closed once read,
// before their callers' next statement (the names). expect, the most rows
// the caller expects (its LIMIT, or fewer where it knows better), sizes the
// slice; more rows only make it grow.
func readListing[T any](rows Rows, expect int, dest []any, row func() T) ([]T, error) {
	read := make([]T, 0, rowsHint(expect))
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		read = append(read, row())
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return read, nil
}

// rowsHint is the capacity to read a listing of at most limit rows into:
// limit itself, unless it is no real bound.
func rowsHint(limit int) int { return max(0, min(limit, 500)) }

// findPost reads a post with its author's screen name (from nm; nil in a
// write transaction).
func findPost(ctx context.Context, q Querier, nm *names, id int64) (*loremnews.Post, error) {
	p, err := readPost(ctx, q, id)
	if err != nil {
		return nil, err
	}
	return p, nm.fill(ctx, q, []*loremnews.User{p.Author}, nil)
}

// readPost reads a post, its Author holding only the id.
func readPost(ctx context.Context, q Querier, id int64) (*loremnews.Post, error) {
	p, err := scanPost(q.QueryRow(ctx, `SELECT `+postColumns+` FROM posts p WHERE p.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, loremnews.Errorf(loremnews.ENOTFOUND, "Post not found.")
	} else if err != nil {
		return nil, err
	}
	p.Author = &loremnews.User{ID: p.UserID}
	return p, nil
}

// CreatePost stores a new post by userID and counts it in the author's posts_count.
func (db *DB) CreatePost(ctx context.Context, userID int64, in loremnews.PostInput) (*loremnews.Post, error) {
	var p *loremnews.Post
	err := db.write(ctx, func(ctx context.Context, tx Execer) (err error) {
		p, err = db.insertPost(ctx, tx, userID, in)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create post: %w", err)
	}
	return p, nil
}

func (db *DB) insertPost(ctx context.Context, tx Execer, userID int64, in loremnews.PostInput) (*loremnews.Post, error) {
	now := db.now()
	// title_key's unique index refuses a taken title in another case or
	// spacing (loremnews.TitleKey) as it refuses the title.
	res, err := tx.Exec(ctx, `INSERT INTO posts (user_id, title, title_key, description, published_at, created_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
		userID, in.Title, loremnews.TitleKey(in.Title), in.Description,
		nanotime.Value(now), nanotime.Value(now), nanotime.Value(now))
	if isUniqueViolation(err) {
		return nil, loremnews.ErrTitleTaken
	} else if isForeignKeyViolation(err) {
		return nil, loremnews.Errorf(loremnews.ENOTFOUND, "User not found.")
	} else if err != nil {
		return nil, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `UPDATE users SET posts_count = posts_count + 1 WHERE id = ?`, userID); err != nil {
		return nil, err
	}
	return &loremnews.Post{ID: id, UserID: userID, Title: in.Title, Description: in.Description,
		PublishedAt: now, CreatedAt: now, UpdatedAt: now}, nil
}

// FindPostByID returns the post with its author, or ENOTFOUND.
func (db *DB) FindPostByID(ctx context.Context, id int64) (*loremnews.Post, error) {
	var p *loremnews.Post
	err := db.read(ctx, func(ctx context.Context, q Querier) (err error) {
		p, err = findPost(ctx, q, db.names, id)
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
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		// An unchanged title keeps its key (a duplicate stored before the
		// keys existed keeps its " DUPLICATE <id>" one and may still be
		// edited); a new one gets its own, which must not be another
		// post's.
		res, err := tx.Exec(ctx, `UPDATE posts SET title = ?1, title_key = CASE WHEN title = ?1 THEN title_key ELSE ?2 END,
			description = ?3, updated_at = ?4 WHERE id = ?5`,
			in.Title, loremnews.TitleKey(in.Title), in.Description, nanotime.Value(db.now()), id)
		if isUniqueViolation(err) {
			return loremnews.ErrTitleTaken
		} else if err != nil {
			return err
		}
		if err := mustAffect(res, "Post"); err != nil {
			return err
		}
		p, err = findPost(ctx, tx, nil, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update post %d: %w", id, err)
	}
	return p, nil
}

// DeletePost removes a post; its comments go by cascade.
func (db *DB) DeletePost(ctx context.Context, id int64) error {
	err := db.write(ctx, func(ctx context.Context, tx Execer) error { return deletePost(ctx, tx, id) })
	if err != nil {
		return fmt.Errorf("delete post %d: %w", id, err)
	}
	return nil
}

// deletePost removes the post and uncounts it from its author's posts_count.
func deletePost(ctx context.Context, tx Execer, id int64) error {
	var userID int64
	err := tx.QueryRow(ctx, `DELETE FROM posts WHERE id = ? RETURNING user_id`, id).Scan(&userID)
	if errors.Is(err, sql.ErrNoRows) {
		return loremnews.Errorf(loremnews.ENOTFOUND, "Post not found.")
	} else if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE users SET posts_count = posts_count - 1 WHERE id = ?`, userID)
	return err
}

// PostsBefore lists the newest posts with id < beforeID: a range of the
// listing index, however deep the page, never an OFFSET scan. Ids grow with
// time (the seed inserts in date order), so "newest" is the id order.
func (db *DB) PostsBefore(ctx context.Context, beforeID int64, limit int) ([]*loremnews.Post, error) {
	var posts []*loremnews.Post
	err := db.read(ctx, func(ctx context.Context, q Querier) (err error) {
		posts, err = queryPosts(ctx, q, db.names, frontPageTail, beforeID, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("posts before %d: %w", beforeID, err)
	}
	return posts, nil
}

// PostPage loads a post, its author, and its newest comments (a page,
// loremnews.PostCommentsPageSize), newest first.
func (db *DB) PostPage(ctx context.Context, id int64) (*loremnews.Post, []*loremnews.Comment, error) {
	var (
		p        *loremnews.Post
		comments []*loremnews.Comment
	)
	err := db.read(ctx, func(ctx context.Context, q Querier) (err error) {
		p, comments, err = postPage(ctx, q, db.names, id)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("post page %d: %w", id, err)
	}
	return p, comments, nil
}

// PostComments loads a post and at most limit of its comments with
// id < beforeID, newest first: the next page of its comments.
func (db *DB) PostComments(ctx context.Context, postID, beforeID int64, limit int) (*loremnews.Post, []*loremnews.Comment, error) {
	var (
		p        *loremnews.Post
		comments []*loremnews.Comment
	)
	err := db.read(ctx, func(ctx context.Context, q Querier) (err error) {
		p, comments, err = postComments(ctx, q, db.names, postID, beforeID, limit)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("comments of post %d before %d: %w", postID, beforeID, err)
	}
	return p, comments, nil
}

// postPage reads a post with its author and its first page of comments;
// see PostPage.
func postPage(ctx context.Context, q Querier, nm *names, id int64) (*loremnews.Post, []*loremnews.Comment, error) {
	return postComments(ctx, q, nm, id, math.MaxInt64, loremnews.PostCommentsPageSize)
}

// postComments reads a post with its author and a page of its comments;
// see PostComments.
func postComments(ctx context.Context, q Querier, nm *names, id, beforeID int64, limit int) (*loremnews.Post, []*loremnews.Comment, error) {
	p, err := readPost(ctx, q, id)
	if loremnews.ErrorCode(err) == loremnews.ENOTFOUND {
		return nil, nil, wasDeleted(ctx, q, "posts", id, err)
	} else if err != nil {
		return nil, nil, err
	}
	comments, err := queryPostComments(ctx, q, p, beforeID, limit)
	if err != nil {
		return nil, nil, err
	}
	authors := make([]*loremnews.User, 0, len(comments)+1)
	authors = append(authors, p.Author)
	for _, c := range comments {
		authors = append(authors, c.Author)
	}
	return p, comments, nm.fill(ctx, q, authors, nil)
}

// wasDeleted tells a deleted row from one that never existed: ids come from
// AUTOINCREMENT, so an absent id no larger than the table's highest issued
// id (sqlite_sequence) was deleted. It returns EGONE or notFound.
func wasDeleted(ctx context.Context, q Querier, table string, id int64, notFound error) error {
	var seq sql.NullInt64
	err := q.QueryRow(ctx, `SELECT seq FROM sqlite_sequence WHERE name = ?`, table).Scan(&seq)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if seq.Valid && id <= seq.Int64 {
		return loremnews.Errorf(loremnews.EGONE, "This has been deleted.")
	}
	return notFound
}

// queryPostComments lists at most limit of a post's comments with
// id < beforeID, newest first, their authors holding only their ids: a
// range of index_comments_on_post_id, read no further than the page, and
// nothing else. SQLite reads a negative LIMIT as no
// limit at all, so one is made 0.
func queryPostComments(ctx context.Context, q Querier, p *loremnews.Post, beforeID int64, limit int) ([]*loremnews.Comment, error) {
	rows, err := q.Query(ctx, postCommentsSQL, p.ID, beforeID, max(limit, 0))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type commentAndAuthor struct {
		comment loremnews.Comment
		author  loremnews.User
	}
	var (
		id, userID, created int64
		body                string
	)
	// The post's counter, read in this snapshot, bounds the page: a post
	// with few comments (or a new one, with none) needs no room for a
	// whole page of them.
	read, err := readListing(rows, min(limit, max(p.CommentsCount, 0)), []any{&id, &userID, &body, &created}, func() commentAndAuthor {
		return commentAndAuthor{
			comment: loremnews.Comment{ID: id, PostID: p.ID, UserID: userID, Body: body, CreatedAt: nanotime.Time(created), Post: p},
			author:  loremnews.User{ID: userID},
		}
	})
	if err != nil || len(read) == 0 {
		return nil, err
	}
	comments := make([]*loremnews.Comment, len(read))
	for i := range read {
		comments[i] = &read[i].comment
		comments[i].Author = &read[i].author
	}
	return comments, nil
}
