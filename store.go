package loremnews

import (
	"context"
	"time"
)

// Store is everything the site's pages need from a database. The sqlite and
// postgres packages implement it; handlers see only this interface (and,
// on the load-test endpoints, BenchmarkStore), so no SQL, no transaction
// and no choice of connection pool ever appears in a handler.
type Store interface {
	UserStore
	PostStore
	CommentStore
	SessionStore
	LimitStore

	// Ping reports whether the database answers (used by /up).
	Ping(ctx context.Context) error
}

// UserStore reads and writes users.
type UserStore interface {
	// CreateUser stores a new user whose password is already hashed.
	// A taken screen name is an EINVALID error naming the field.
	CreateUser(ctx context.Context, screenName, passwordDigest string) (*User, error)
	FindUserByID(ctx context.Context, id int64) (*User, error)
	FindUserByScreenName(ctx context.Context, screenName string) (*User, error)
	// UpdateProfile saves a profile form in one transaction, all or
	// nothing (see ProfileChange), and returns the user as saved.
	UpdateProfile(ctx context.Context, id int64, change ProfileChange) (*User, error)
	// RehashPassword replaces the user's password digest with newDigest
	// (the same password hashed at another cost) only if it is still
	// oldDigest, and reports whether it did: a password changed meanwhile
	// is never put back. No session ends.
	RehashPassword(ctx context.Context, id int64, oldDigest, newDigest string) (bool, error)
	// DeleteUser removes the user with their sessions, posts and comments,
	// fixing the comment counters of other users' posts in the same transaction.
	DeleteUser(ctx context.Context, id int64) error
	// UserPage loads a user's own posts and comments (with post titles),
	// newest first, at most limit of each, from one snapshot, with the user's
	// CommentsCount counted in it.
	UserPage(ctx context.Context, id int64, limit int) (*User, []*Post, []*Comment, error)
	// UserPosts and UserComments page on through a user's posts and
	// comments, newest first: at most limit rows with id < beforeID (the
	// last id the previous page showed). Keyset paging: a row inserted or
	// deleted meanwhile never shifts the rows of the next page.
	UserPosts(ctx context.Context, userID, beforeID int64, limit int) ([]*Post, error)
	UserComments(ctx context.Context, userID, beforeID int64, limit int) ([]*Comment, error)
}

// ProfileChange is what UpdateProfile writes: the screen name and about
// text and, when PasswordDigest is not empty, a new password. A new
// password signs out every session of the user, in the same transaction,
// and starts NewSession (if given; its ID and times are filled in) for the
// browser that changed it, so no browser that signed in with the old
// password outlives the change and the one that changed it stays in.
type ProfileChange struct {
	ScreenName     string
	About          string
	PasswordDigest string
	NewSession     *Session
}

// PostStore reads and writes posts.
type PostStore interface {
	CreatePost(ctx context.Context, userID int64, in PostInput) (*Post, error)
	FindPostByID(ctx context.Context, id int64) (*Post, error)
	UpdatePost(ctx context.Context, id int64, in PostInput) (*Post, error)
	DeletePost(ctx context.Context, id int64) error
	// PostsBefore lists the newest posts with id < beforeID, with their
	// authors: the front page (beforeID math.MaxInt64) and its next pages,
	// keyset-paged like UserPosts.
	PostsBefore(ctx context.Context, beforeID int64, limit int) ([]*Post, error)
	// PostPage loads a post with its author and the first page of its
	// comments with their authors: the newest PostCommentsPageSize, newest
	// first. The post's CommentsCount is the total; PostComments pages on
	// through the rest. A post that existed but was deleted is EGONE; an
	// id never used is ENOTFOUND.
	PostPage(ctx context.Context, id int64) (*Post, []*Comment, error)
	// PostComments pages on through a post's comments, newest first, as
	// UserComments does through a user's: the post (as PostPage loads it,
	// EGONE or ENOTFOUND alike) and at most limit of its comments with
	// id < beforeID (the last id the previous page showed), with their
	// authors. A limit below 0 is 0.
	PostComments(ctx context.Context, postID, beforeID int64, limit int) (*Post, []*Comment, error)
}

// CommentStore reads and writes comments.
type CommentStore interface {
	CreateComment(ctx context.Context, postID, userID int64, in CommentInput) (*Comment, error)
	FindCommentByID(ctx context.Context, id int64) (*Comment, error)
	UpdateComment(ctx context.Context, id int64, in CommentInput) (*Comment, error)
	DeleteComment(ctx context.Context, id int64) error
}

// SessionStore keeps one row per signed-in browser.
type SessionStore interface {
	CreateSession(ctx context.Context, s *Session) error
	// FindSessionByTokenDigest returns the session and its user; a session
	// past its limits is ENOTFOUND, as if signed out.
	FindSessionByTokenDigest(ctx context.Context, digest []byte, limits SessionLimits) (*Session, *User, error)
	// TouchSession records activity on the session and its user.
	TouchSession(ctx context.Context, s *Session) error
	// UserSessions lists the user's sessions within limits.
	UserSessions(ctx context.Context, userID int64, limits SessionLimits) ([]*Session, error)
	// DeleteSession signs out the user's session id: one statement that
	// matches both, so no one can end another user's session by its id.
	// ENOTFOUND when the user has no such session.
	DeleteSession(ctx context.Context, userID, id int64) error
	// RevokeSession is DeleteSession that also forgets the device cookie
	// set with the session (its Device) until deviceExpires, when the
	// cookie would have expired: DeviceRevoked says so until then.
	RevokeSession(ctx context.Context, userID, id int64, deviceExpires time.Time) error
	// DeviceRevoked reports whether the device cookie whose SHA-256 is
	// device was set with a session of the user's that was revoked.
	DeviceRevoked(ctx context.Context, userID int64, device []byte) (bool, error)
	// DeleteExpiredSessions deletes every session past limits and says how
	// many it deleted.
	DeleteExpiredSessions(ctx context.Context, limits SessionLimits) (int64, error)
}

// LimitStore keeps the counters of the site's rate limits in the
// database, so every process serving one database shares them and a
// restart (or a deploy) does not hand out a fresh allowance. A counter is
// named by an opaque key (the web layer's 32-byte digests: nothing
// personal in clear) and counts attempts in a fixed window that starts at
// the key's first attempt.
type LimitStore interface {
	// ReserveAttempt takes one attempt for key, in one write transaction:
	// if the key's window has ended by now (or it has none), a new one of
	// length window starts at now with this attempt; else the count goes
	// up by one, unless it has reached limit: then nothing is taken, ok is
	// false, and retryAfter is the time from now until the window ends.
	// Concurrent calls never take more than limit attempts in a window.
	// It also deletes some of the rows whose window has ended (a bounded
	// number, so its cost stays flat).
	ReserveAttempt(ctx context.Context, key []byte, limit int, window time.Duration, now time.Time) (ok bool, retryAfter time.Duration, err error)
	// ReleaseAttempt gives back an attempt ReserveAttempt took for key
	// (never below 0); a key with no row is not an error.
	ReleaseAttempt(ctx context.Context, key []byte) error
}

// Operations are what the commands, the benchmarks and the tests do with a
// database beside serving the site: fill it, export it, check it, name it.
type Operations interface {
	// ImportDataset replaces every row with ds's (keeping ids) in one
	// transaction and sets the counter caches to the true counts.
	ImportDataset(ctx context.Context, ds *Dataset) error
	// ImportStream does what ImportDataset does, reading the rows from s
	// as it writes them, so its memory does not grow with their number.
	ImportStream(ctx context.Context, s DatasetStream) error
	// ExportDataset reads every row, in id order, from one consistent snapshot.
	ExportDataset(ctx context.Context) (*Dataset, error)
	// CheckConsistency checks the engine's integrity, foreign keys and
	// counter caches. It reads every row: for tests and operators.
	CheckConsistency(ctx context.Context) (Consistency, error)
	// Empty reports whether there are no users (a fresh database).
	Empty(ctx context.Context) (bool, error)
	// Migrations lists the applied schema migrations, oldest first.
	Migrations(ctx context.Context) ([]string, error)
	// Name says which database this is, for messages: a file path, or a
	// URL without its password.
	Name() string
	// Describe says which engine and setup serve the site, for the
	// start-up line and logs: "setup split" (SQLite), "PostgreSQL".
	Describe() string
	// Benchmark returns the actions of the load-test endpoints on this
	// database.
	Benchmark() BenchmarkStore
}

// Database is an open database: the Store the site's handlers use, the
// Operations, and Close. The SQLite and PostgreSQL implementations both
// provide it; each also exports its own counters to Prometheus.
type Database interface {
	Store
	Operations
	Close() error
}
