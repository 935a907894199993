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
		// screen_name_key's unique constraint refuses a look-alike of a
		// taken name ("Ieo5" beside "leo5") as the name's index refuses it.
		u, err = scanUser(tx.QueryRow(ctx, `INSERT INTO users AS u (screen_name, screen_name_key, password_digest, created_at, updated_at, last_seen_at)
			VALUES ($1, $2, $3, $4, $4, $4) RETURNING `+userColumns,
			screenName, loremnews.ConfusableKey(screenName), passwordDigest, nanotime.Value(now)))
		return uniqueError(err)
	})
	if err != nil {
		return nil, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// FindUserByID returns the user or an ENOTFOUND error.
func (db *DB) FindUserByID(ctx context.Context, id int64) (*loremnews.User, error) {
	var u *loremnews.User
	err := db.read(ctx, func(q querier) (err error) {
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
	err := db.read(ctx, func(q querier) (err error) {
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
		// An unchanged name keeps its key: the key of a look-alike stored
		// before migration 0005 ends in " DUPLICATE <id>", and its owner
		// may still edit the rest. A new name gets its own key.
		u, err = scanUser(tx.QueryRow(ctx, `UPDATE users AS u SET screen_name = $1,
			screen_name_key = CASE WHEN screen_name = $1 THEN screen_name_key ELSE $6 END, about = $2,
			password_digest = CASE WHEN $3 = '' THEN password_digest ELSE $3 END, updated_at = $4
			WHERE id = $5 RETURNING `+userColumns, c.ScreenName, c.About, c.PasswordDigest, nanotime.Value(now), id,
			loremnews.ConfusableKey(c.ScreenName)))
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
	err := db.readSnapshot(ctx, func(q querier) (err error) {
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
	err := db.readSnapshot(ctx, func(q querier) error {
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
	err := db.readSnapshot(ctx, func(q querier) error {
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
