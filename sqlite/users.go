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

// userColumns is the select list scanned by scanUser, prefixed by alias.
const userColumns = `u.id, u.screen_name, u.password_digest, u.about, u.last_seen_at, u.posts_count, u.created_at, u.updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanUser(s scanner, extra ...any) (*loremnews.User, error) {
	var u loremnews.User
	dest := append([]any{&u.ID, &u.ScreenName, &u.PasswordDigest, &u.About, nanotime.Into(&u.LastSeenAt), &u.PostsCount,
		nanotime.Into(&u.CreatedAt), nanotime.Into(&u.UpdatedAt)}, extra...)
	if err := s.Scan(dest...); err != nil {
		return nil, err
	}
	return &u, nil
}

// CreateUser stores a new user.
func (db *DB) CreateUser(ctx context.Context, screenName, passwordDigest string) (*loremnews.User, error) {
	var u *loremnews.User
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		now := db.now()
		keys := loremnews.ScreenNameKeys(screenName)
		if err := refuseLookAlike(ctx, tx, screenName, keys, 0); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `INSERT INTO users (screen_name, screen_name_key, screen_name_small_key, screen_name_capitals_key,
			password_digest, created_at, updated_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			screenName, keys.Shown, keys.Small, keys.Capitals, passwordDigest, nanotime.Value(now), nanotime.Value(now), nanotime.Value(now))
		if isUniqueViolation(err) {
			return loremnews.ErrScreenNameTaken
		} else if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		u, err = findUser(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// refuseLookAlike returns an EINVALID error naming the user (other than
// except) whose screen name reads as name (loremnews.NameKeys), if any:
// one of name's keys is that user's key as shown, or name's key as shown
// is one of that user's keys; or the names differ only in case. It runs
// in the write transaction that stores name, so no other write can store
// a look-alike in between.
func refuseLookAlike(ctx context.Context, tx Execer, name string, keys loremnews.NameKeys, except int64) error {
	var other string
	err := tx.QueryRow(ctx, `SELECT screen_name FROM users
		WHERE id <> ?5 AND (screen_name = ?4 OR screen_name_key IN (?1, ?2, ?3) OR screen_name_small_key = ?1 OR screen_name_capitals_key = ?1)
		LIMIT 1`, keys.Shown, keys.Small, keys.Capitals, name, except).Scan(&other)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	return loremnews.ScreenNameTaken(name, other)
}

// FindUserByID returns the user or an ENOTFOUND error.
func (db *DB) FindUserByID(ctx context.Context, id int64) (*loremnews.User, error) {
	var u *loremnews.User
	err := db.read(ctx, func(ctx context.Context, q Querier) (err error) {
		u, err = findUser(ctx, q, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("find user %d: %w", id, err)
	}
	return u, nil
}

// FindUserByScreenName returns the user (case-insensitively) or ENOTFOUND.
func (db *DB) FindUserByScreenName(ctx context.Context, screenName string) (*loremnews.User, error) {
	var u *loremnews.User
	err := db.read(ctx, func(ctx context.Context, q Querier) (err error) {
		u, err = scanUser(q.QueryRow(ctx, `SELECT `+userColumns+` FROM users u WHERE u.screen_name = ?`, screenName))
		if errors.Is(err, sql.ErrNoRows) {
			return loremnews.Errorf(loremnews.ENOTFOUND, "User not found.")
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("find user by screen name: %w", err)
	}
	return u, nil
}

func findUser(ctx context.Context, q Querier, id int64) (*loremnews.User, error) {
	u, err := scanUser(q.QueryRow(ctx, `SELECT `+userColumns+` FROM users u WHERE u.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, loremnews.Errorf(loremnews.ENOTFOUND, "User not found.")
	}
	return u, err
}

// UpdateProfile saves the screen name and about text and, with a new
// password digest, replaces every session of the user by c.NewSession, in
// one transaction: a taken screen name leaves the password and the
// sessions as they were.
func (db *DB) UpdateProfile(ctx context.Context, id int64, c loremnews.ProfileChange) (*loremnews.User, error) {
	var u *loremnews.User
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		now := db.now()
		// Only a new name is checked: a look-alike stored before the
		// check existed may keep its name and still edit the rest.
		var current string
		err := tx.QueryRow(ctx, `SELECT screen_name FROM users WHERE id = ?`, id).Scan(&current)
		if errors.Is(err, sql.ErrNoRows) {
			return loremnews.Errorf(loremnews.ENOTFOUND, "User not found.")
		} else if err != nil {
			return err
		}
		keys := loremnews.ScreenNameKeys(c.ScreenName)
		if c.ScreenName != current {
			if err := refuseLookAlike(ctx, tx, c.ScreenName, keys, id); err != nil {
				return err
			}
		}
		res, err := tx.Exec(ctx, `UPDATE users SET screen_name = ?1, screen_name_key = ?2, screen_name_small_key = ?3,
			screen_name_capitals_key = ?4, about = ?5,
			password_digest = CASE WHEN ?6 = '' THEN password_digest ELSE ?6 END, updated_at = ?7 WHERE id = ?8`,
			c.ScreenName, keys.Shown, keys.Small, keys.Capitals, c.About, c.PasswordDigest, nanotime.Value(now), id)
		if isUniqueViolation(err) {
			return loremnews.ErrScreenNameTaken
		} else if err != nil {
			return err
		}
		if err := mustAffect(res, "User"); err != nil {
			return err
		}
		if c.PasswordDigest != "" {
			if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = ?`, id); err != nil {
				return err
			}
			if c.NewSession != nil {
				c.NewSession.UserID = id
				if err := insertSession(ctx, tx, c.NewSession, now); err != nil {
					return err
				}
			}
		}
		u, err = findUser(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("update profile of user %d: %w", id, err)
	}
	return u, nil
}

// RehashPassword replaces the password digest only if it is still
// oldDigest, in one statement, so a password changed meanwhile stays.
func (db *DB) RehashPassword(ctx context.Context, id int64, oldDigest, newDigest string) (bool, error) {
	var done bool
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		res, err := tx.Exec(ctx, `UPDATE users SET password_digest = ? WHERE id = ? AND password_digest = ?`, newDigest, id, oldDigest)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		done = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("rehash password of user %d: %w", id, err)
	}
	return done, nil
}

// DeleteUser removes the user; foreign keys cascade to their sessions, posts
// and comments. Comments they left on other users' posts are counted in
// those posts' comments_count, so those counters are fixed first, in the
// same transaction.
func (db *DB) DeleteUser(ctx context.Context, id int64) error {
	err := db.write(ctx, func(ctx context.Context, tx Execer) error {
		if _, err := tx.Exec(ctx, `UPDATE posts SET comments_count = comments_count -
				(SELECT count(*) FROM comments c WHERE c.post_id = posts.id AND c.user_id = ?1)
			WHERE user_id <> ?1 AND id IN (SELECT post_id FROM comments WHERE user_id = ?1)`, id); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `DELETE FROM users WHERE id = ?`, id)
		if err != nil {
			return err
		}
		return mustAffect(res, "User")
	})
	if err != nil {
		return fmt.Errorf("delete user %d: %w", id, err)
	}
	return nil
}

// UserPage loads a user with their newest posts and comments and counts
// their comments, all in one snapshot. Every row is the user's own, so
// neither listing joins users again for the author.
func (db *DB) UserPage(ctx context.Context, id int64, limit int) (*loremnews.User, []*loremnews.Post, []*loremnews.Comment, error) {
	var (
		u        *loremnews.User
		posts    []*loremnews.Post
		comments []*loremnews.Comment
	)
	err := db.read(ctx, func(ctx context.Context, q Querier) (err error) {
		u, posts, comments, err = userPage(ctx, q, db.names, id, limit)
		return err
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("user page %d: %w", id, err)
	}
	return u, posts, comments, nil
}

// userPage reads a user with their newest posts and comments; see UserPage.
func userPage(ctx context.Context, q Querier, nm *names, id int64, limit int) (*loremnews.User, []*loremnews.Post, []*loremnews.Comment, error) {
	u, err := findUser(ctx, q, id)
	if err != nil {
		return nil, nil, nil, err
	}
	author := &loremnews.User{ID: u.ID, ScreenName: u.ScreenName}
	posts, err := queryUserPosts(ctx, q, author, math.MaxInt64, limit)
	if err != nil {
		return nil, nil, nil, err
	}
	comments, err := queryUserComments(ctx, q, nm, author, math.MaxInt64, limit)
	if err != nil {
		return nil, nil, nil, err
	}
	// A range count of the user's entries in index_comments_on_user_id,
	// whose first pages the listing above has just read.
	err = q.QueryRow(ctx, userCommentCountSQL, id).Scan(&u.CommentsCount)
	return u, posts, comments, err
}

// UserPosts lists the user's posts with id < beforeID, newest first.
func (db *DB) UserPosts(ctx context.Context, userID, beforeID int64, limit int) ([]*loremnews.Post, error) {
	var posts []*loremnews.Post
	err := db.read(ctx, func(ctx context.Context, q Querier) error {
		author, err := findAuthor(ctx, q, userID)
		if err != nil {
			return err
		}
		posts, err = queryUserPosts(ctx, q, author, beforeID, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("posts of user %d before %d: %w", userID, beforeID, err)
	}
	return posts, nil
}

// UserComments lists the user's comments with id < beforeID, newest first.
func (db *DB) UserComments(ctx context.Context, userID, beforeID int64, limit int) ([]*loremnews.Comment, error) {
	var comments []*loremnews.Comment
	err := db.read(ctx, func(ctx context.Context, q Querier) error {
		author, err := findAuthor(ctx, q, userID)
		if err != nil {
			return err
		}
		comments, err = queryUserComments(ctx, q, db.names, author, beforeID, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("comments of user %d before %d: %w", userID, beforeID, err)
	}
	return comments, nil
}

// findAuthor is the id and screen name of a user, or ENOTFOUND.
func findAuthor(ctx context.Context, q Querier, id int64) (*loremnews.User, error) {
	u := &loremnews.User{ID: id}
	err := q.QueryRow(ctx, `SELECT screen_name FROM users WHERE id = ?`, id).Scan(&u.ScreenName)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, loremnews.Errorf(loremnews.ENOTFOUND, "User not found.")
	}
	return u, err
}

func queryUserPosts(ctx context.Context, q Querier, author *loremnews.User, beforeID int64, limit int) ([]*loremnews.Post, error) {
	rows, err := q.Query(ctx, userPostsSQL, author.ID, beforeID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		id, userID, created int64
		title               string
		count               int
	)
	read, err := readListing(rows, limit, []any{&id, &userID, &title, &count, &created}, func() loremnews.Post {
		return loremnews.Post{ID: id, UserID: userID, Title: title, CommentsCount: count, CreatedAt: nanotime.Time(created), Author: author}
	})
	if err != nil || len(read) == 0 {
		return nil, err
	}
	posts := make([]*loremnews.Post, len(read))
	for i := range read {
		posts[i] = &read[i]
	}
	return posts, nil
}

// queryUserComments lists a user's comments with their posts' titles
// (from nm).
func queryUserComments(ctx context.Context, q Querier, nm *names, author *loremnews.User, beforeID int64, limit int) ([]*loremnews.Comment, error) {
	rows, err := q.Query(ctx, userCommentsSQL, author.ID, beforeID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type commentAndPost struct {
		comment loremnews.Comment
		post    loremnews.Post
	}
	var (
		id, postID, created int64
		body                string
	)
	read, err := readListing(rows, limit, []any{&id, &postID, &body, &created}, func() commentAndPost {
		return commentAndPost{
			comment: loremnews.Comment{ID: id, PostID: postID, UserID: author.ID, Body: body, CreatedAt: nanotime.Time(created), Author: author},
			post:    loremnews.Post{ID: postID},
		}
	})
	if err != nil || len(read) == 0 {
		return nil, err
	}
	comments := make([]*loremnews.Comment, len(read))
	posts := make([]*loremnews.Post, len(read))
	for i := range read {
		comments[i], posts[i] = &read[i].comment, &read[i].post
		comments[i].Post = posts[i]
	}
	return comments, nm.fill(ctx, q, nil, posts)
}
