package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/internal/nanotime"
)

// userColumns is the select list scanned by scanUser, prefixed by alias.
const userColumns = `u.id, u.screen_name, u.password_digest, u.about, u.last_seen_at, u.posts_count, u.created_at, u.updated_at`

func scanUser(row pgx.Row, extra ...any) (*loremnews.User, error) {
	var u loremnews.User
	dest := append([]any{&u.ID, &u.ScreenName, &u.PasswordDigest, &u.About, nanotime.Into(&u.LastSeenAt), &u.PostsCount, nanotime.Into(&u.CreatedAt), nanotime.Into(&u.UpdatedAt)}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	return &u, nil
}

// CreateUser stores a new user.
func (db *DB) CreateUser(ctx context.Context, screenName, passwordDigest string) (*loremnews.User, error) {
	var u *loremnews.User
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) (err error) {
		now := db.now()
		keys := loremnews.ScreenNameKeys(screenName)
		if err := refuseLookAlike(ctx, tx, screenName, keys, 0); err != nil {
			return err
		}
		u, err = scanUser(tx.QueryRow(ctx, `INSERT INTO users AS u (screen_name, screen_name_key, screen_name_small_key, screen_name_capitals_key,
			password_digest, created_at, updated_at, last_seen_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6, $6) RETURNING `+userColumns,
			screenName, keys.Shown, keys.Small, keys.Capitals, passwordDigest, nanotime.Value(now)))
		return uniqueError(err)
	})
	if err != nil {
		return nil, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// refuseLookAlike returns an EINVALID error naming the user (other than
// except) whose screen name reads as name (loremnews.NameKeys), if any:
// one of name's keys is that user's key as shown, or name's key as shown
// is one of that user's keys; or the names differ only in case. That is
// no unique constraint, so the check and the write that follows it hold
// a transaction-level advisory lock: two name changes never pass the
// check together (each waits for the other's commit, then sees its row).
func refuseLookAlike(ctx context.Context, tx pgx.Tx, name string, keys loremnews.NameKeys, except int64) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, screenNameLock); err != nil {
		return err
	}
	var other string
	err := tx.QueryRow(ctx, `SELECT screen_name FROM users
		WHERE id <> $5 AND (lower(screen_name) = lower($4) OR screen_name_key IN ($1, $2, $3)
			OR screen_name_small_key = $1 OR screen_name_capitals_key = $1)
		LIMIT 1`, keys.Shown, keys.Small, keys.Capitals, name, except).Scan(&other)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	return loremnews.ScreenNameTaken(name, other)
}

// screenNameLock is the advisory lock key of refuseLookAlike ("LN names").
const screenNameLock = 0x4c4e4e616d6573

// FindUserByID returns the user or an ENOTFOUND error.
func (db *DB) FindUserByID(ctx context.Context, id int64) (*loremnews.User, error) {
	var u *loremnews.User
	err := db.readEach(ctx, func(q querier) (err error) {
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
	err := db.readEach(ctx, func(q querier) (err error) {
		u, err = scanUser(q.QueryRow(ctx, `SELECT `+userColumns+` FROM users u WHERE lower(u.screen_name) = lower($1)`, screenName))
		if errors.Is(err, pgx.ErrNoRows) {
			return errUserNotFound
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("find user by screen name: %w", err)
	}
	return u, nil
}

func findUser(ctx context.Context, q querier, id int64) (*loremnews.User, error) {
	u, err := scanUser(q.QueryRow(ctx, `SELECT `+userColumns+` FROM users u WHERE u.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errUserNotFound
	}
	return u, err
}

// UpdateProfile saves the screen name and about text and, with a new
// password digest, replaces every session of the user by c.NewSession, in
// one transaction: a taken screen name leaves the password and the
// sessions as they were.
func (db *DB) UpdateProfile(ctx context.Context, id int64, c loremnews.ProfileChange) (*loremnews.User, error) {
	var u *loremnews.User
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) (err error) {
		now := db.now()
		// Only a new name is checked: a look-alike stored before the
		// check existed may keep its name and still edit the rest.
		var current string
		err = tx.QueryRow(ctx, `SELECT screen_name FROM users WHERE id = $1`, id).Scan(&current)
		if errors.Is(err, pgx.ErrNoRows) {
			return errUserNotFound
		} else if err != nil {
			return err
		}
		keys := loremnews.ScreenNameKeys(c.ScreenName)
		if c.ScreenName != current {
			if err := refuseLookAlike(ctx, tx, c.ScreenName, keys, id); err != nil {
				return err
			}
		}
		u, err = scanUser(tx.QueryRow(ctx, `UPDATE users AS u SET screen_name = $1, screen_name_key = $6,
			screen_name_small_key = $7, screen_name_capitals_key = $8, about = $2,
			password_digest = CASE WHEN $3 = '' THEN password_digest ELSE $3 END, updated_at = $4
			WHERE id = $5 RETURNING `+userColumns, c.ScreenName, c.About, c.PasswordDigest, nanotime.Value(now), id,
			keys.Shown, keys.Small, keys.Capitals))
		if errors.Is(err, pgx.ErrNoRows) {
			return errUserNotFound
		} else if err != nil {
			return uniqueError(err)
		}
		if c.PasswordDigest == "" {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1`, id); err != nil {
			return err
		}
		if c.NewSession != nil {
			c.NewSession.UserID = id
			if err := insertSession(ctx, tx, c.NewSession, now); err != nil {
				return err
			}
			u.LastSeenAt = now
		}
		return nil
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
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE users SET password_digest = $1 WHERE id = $2 AND password_digest = $3`, newDigest, id, oldDigest)
		done = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("rehash password of user %d: %w", id, err)
	}
	return done, nil
}

// DeleteUser removes the user; foreign keys cascade to their sessions,
// posts and comments. The comment counters of other users' posts they
// commented on are fixed first, in the same transaction. (This locks several
// posts at once, the one exception to the lock order; a deadlock with
// another user's deletion is retried by write.)
func (db *DB) DeleteUser(ctx context.Context, id int64) error {
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE posts SET comments_count = comments_count - n.count
			FROM (SELECT post_id, count(*) AS count FROM comments WHERE user_id = $1 GROUP BY post_id ORDER BY post_id) n
			WHERE posts.id = n.post_id AND posts.user_id <> $1`, id); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM users WHERE id = $1`, id)
		if err != nil {
			return err
		}
		return mustAffect(tag, "User")
	})
	if err != nil {
		return fmt.Errorf("delete user %d: %w", id, err)
	}
	return nil
}

// UserPage loads a user with their newest posts and comments and counts
// their comments. Like every read here it runs its statements on the pool,
// each seeing the latest commit, not one snapshot.
func (db *DB) UserPage(ctx context.Context, id int64, limit int) (*loremnews.User, []*loremnews.Post, []*loremnews.Comment, error) {
	var (
		u        *loremnews.User
		posts    []*loremnews.Post
		comments []*loremnews.Comment
	)
	err := db.read(ctx, func(q querier) (err error) {
		if u, err = findUser(ctx, q, id); err != nil {
			return err
		}
		author := &loremnews.User{ID: u.ID, ScreenName: u.ScreenName}
		if posts, err = queryUserPosts(ctx, q, author, math.MaxInt64, limit); err != nil {
			return err
		}
		if comments, err = queryUserComments(ctx, q, author, math.MaxInt64, limit); err != nil {
			return err
		}
		return q.QueryRow(ctx, `SELECT count(*) FROM comments WHERE user_id = $1`, id).Scan(&u.CommentsCount)
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("user page %d: %w", id, err)
	}
	return u, posts, comments, nil
}

// UserPosts lists the user's posts with id < beforeID, newest first.
func (db *DB) UserPosts(ctx context.Context, userID, beforeID int64, limit int) ([]*loremnews.Post, error) {
	var posts []*loremnews.Post
	err := db.read(ctx, func(q querier) error {
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
	err := db.read(ctx, func(q querier) error {
		author, err := findAuthor(ctx, q, userID)
		if err != nil {
			return err
		}
		comments, err = queryUserComments(ctx, q, author, beforeID, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("comments of user %d before %d: %w", userID, beforeID, err)
	}
	return comments, nil
}

// findAuthor is the id and screen name of a user, or ENOTFOUND.
func findAuthor(ctx context.Context, q querier, id int64) (*loremnews.User, error) {
	u := &loremnews.User{ID: id}
	err := q.QueryRow(ctx, `SELECT screen_name FROM users WHERE id = $1`, id).Scan(&u.ScreenName)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errUserNotFound
	}
	return u, err
}

func queryUserPosts(ctx context.Context, q querier, author *loremnews.User, beforeID int64, limit int) ([]*loremnews.Post, error) {
	rows, err := q.Query(ctx, `SELECT p.id, p.user_id, p.title, p.comments_count, p.created_at
		FROM posts p WHERE p.user_id = $1 AND p.id < $2 ORDER BY p.id DESC LIMIT $3`, author.ID, beforeID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*loremnews.Post, error) {
		p := &loremnews.Post{Author: author}
		return p, r.Scan(&p.ID, &p.UserID, &p.Title, &p.CommentsCount, nanotime.Into(&p.CreatedAt))
	})
}

func queryUserComments(ctx context.Context, q querier, author *loremnews.User, beforeID int64, limit int) ([]*loremnews.Comment, error) {
	rows, err := q.Query(ctx, `SELECT c.id, c.post_id, c.body, c.created_at, p.title
		FROM comments c JOIN posts p ON p.id = c.post_id
		WHERE c.user_id = $1 AND c.id < $2 ORDER BY c.id DESC LIMIT $3`, author.ID, beforeID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*loremnews.Comment, error) {
		c := &loremnews.Comment{UserID: author.ID, Author: author, Post: &loremnews.Post{}}
		err := r.Scan(&c.ID, &c.PostID, &c.Body, nanotime.Into(&c.CreatedAt), &c.Post.Title)
		c.Post.ID = c.PostID
		return c, err
	})
}
