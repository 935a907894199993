// Package loremnews holds the domain of Lorem News — a Hacker-News-style site of
// users, posts and comments — as plain types, their validation rules and the
// store interface that the database packages (sqlite/ and postgres/)
// implement. It imports nothing of HTTP or SQL, so every other package can
// depend on it.
package loremnews

import (
	"context"
	"iter"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// User is a member of the site. PostsCount is a counter cache kept equal to
// the number of the user's posts by the store, in the same transaction as the
// rows it counts, so pages never need a COUNT query.
type User struct {
	ID             int64
	ScreenName     string
	PasswordDigest string
	About          string
	LastSeenAt     time.Time
	PostsCount     int
	CreatedAt      time.Time
	UpdatedAt      time.Time

	// CommentsCount is the number of the user's comments, filled in only by
	// UserPage, which counts them in the snapshot it lists them from. It is
	// counted, not cached: a cached count would add a write on every other
	// user's row each time a post's comments go with the post.
	CommentsCount int
}

// Post is a story submitted by a user. CommentsCount is a counter cache, like
// User.PostsCount. Author (its ID and ScreenName only) is filled in by
// queries that join the users table, so listing pages are one query rather
// than one per row.
type Post struct {
	ID            int64
	UserID        int64
	Title         string
	Description   string
	PublishedAt   time.Time
	CommentsCount int
	CreatedAt     time.Time
	UpdatedAt     time.Time

	Author *User
}

// Comment is a reply to a post. Author and Post are filled in by queries that
// join them (a post page needs the authors, a user page the post titles).
type Comment struct {
	ID        int64
	PostID    int64
	UserID    int64
	Body      string
	CreatedAt time.Time
	UpdatedAt time.Time

	Author *User
	Post   *Post
}

// Session is one signed-in browser. The browser holds a random token whose
// SHA-256 digest is stored here; deleting the row signs that browser out.
type Session struct {
	ID          int64
	UserID      int64
	TokenDigest []byte
	UserAgent   string
	IPAddress   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Validation limits. The minimum title and body lengths are also CHECK
// constraints in both stores' schemas; maximums keep one request from
// storing megabytes in a text column.
const (
	MinTitleLen       = 5
	MaxTitleLen       = 200
	MaxDescriptionLen = 20_000
	MinBodyLen        = 5
	MaxBodyLen        = 10_000
	MinScreenNameLen  = 2
	MaxScreenNameLen  = 40
	MaxAboutLen       = 2_000
	MinPasswordLen    = 8
	MaxPasswordLen    = 72 // bcrypt ignores bytes beyond 72; refuse rather than truncate silently
)

// PostInput is what a user may set on a post.
type PostInput struct {
	Title       string
	Description string
}

// Normalize trims surrounding space, so "   " counts as empty, and puts
// the title in Unicode's NFKC form: titles must be unique, and characters
// that look alike (full-width "Ｈｅｌｌｏ", the ligature "ﬁ", "①") are
// stored as the one spelling they look like, so the database's unique
// index compares what readers see.
func (in *PostInput) Normalize() {
	in.Title = strings.TrimSpace(norm.NFKC.String(in.Title))
	in.Description = strings.TrimSpace(in.Description)
}

// Validate reports the first rule the input breaks as an EINVALID error.
func (in PostInput) Validate() error {
	if err := ValidateTitle(in.Title); err != nil {
		return err
	}
	return ValidateDescription(in.Description)
}

// ValidateTitle checks a post's title alone, so a form can report it
// beside the title field along with any other field's problem.
func ValidateTitle(title string) error { return validText("Title", title, MinTitleLen, MaxTitleLen) }

// ValidateDescription checks a post's description alone.
func ValidateDescription(d string) error {
	if !utf8.ValidString(d) {
		return Errorf(EINVALID, "Description is not valid UTF-8 text.")
	}
	if hasControl(d, true) {
		return Errorf(EINVALID, "Description contains control characters.")
	}
	if utf8.RuneCountInString(d) > MaxDescriptionLen {
		return Errorf(EINVALID, "Description is too long (maximum is %d characters).", MaxDescriptionLen)
	}
	return nil
}

// CommentInput is what a user may set on a comment.
type CommentInput struct {
	Body string
}

// Normalize trims surrounding space.
func (in *CommentInput) Normalize() { in.Body = strings.TrimSpace(in.Body) }

// Validate reports the first rule the input breaks as an EINVALID error.
func (in CommentInput) Validate() error {
	return validText("Comment", in.Body, MinBodyLen, MaxBodyLen)
}

// SignUpInput is the sign-up form.
type SignUpInput struct {
	ScreenName string
	Password   string
}

// Normalize trims the screen name; passwords are taken as typed.
func (in *SignUpInput) Normalize() { in.ScreenName = strings.TrimSpace(in.ScreenName) }

// Validate reports the first rule the input breaks as an EINVALID error.
func (in SignUpInput) Validate() error {
	if err := ValidateScreenName(in.ScreenName); err != nil {
		return err
	}
	return ValidatePassword(in.Password)
}

// ProfileInput is what a user may change on their own account. An empty
// Password leaves the password unchanged.
type ProfileInput struct {
	ScreenName string
	About      string
	Password   string
}

// Normalize trims the text fields.
func (in *ProfileInput) Normalize() {
	in.ScreenName = strings.TrimSpace(in.ScreenName)
	in.About = strings.TrimSpace(in.About)
}

// Validate reports the first rule the input breaks as an EINVALID error.
func (in ProfileInput) Validate() error {
	if err := ValidateScreenName(in.ScreenName); err != nil {
		return err
	}
	if !utf8.ValidString(in.About) {
		return Errorf(EINVALID, "About is not valid UTF-8 text.")
	}
	if hasControl(in.About, true) {
		return Errorf(EINVALID, "About contains control characters.")
	}
	if utf8.RuneCountInString(in.About) > MaxAboutLen {
		return Errorf(EINVALID, "About is too long (maximum is %d characters).", MaxAboutLen)
	}
	if in.Password != "" {
		return ValidatePassword(in.Password)
	}
	return nil
}

// ValidateScreenName allows letters, digits, '_', '-' and '.', so a screen
// name is always safe in a URL, a log line and a page title.
func ValidateScreenName(name string) error {
	if err := validText("Screen name", name, MinScreenNameLen, MaxScreenNameLen); err != nil {
		return err
	}
	for _, r := range name {
		if !(r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return Errorf(EINVALID, "Screen name may only contain letters, digits, '_', '-' and '.'.")
		}
	}
	return nil
}

// ValidatePassword enforces the length rules bcrypt needs.
func ValidatePassword(pw string) error {
	if len(pw) < MinPasswordLen {
		return Errorf(EINVALID, "Password is too short (minimum is %d characters).", MinPasswordLen)
	}
	if len(pw) > MaxPasswordLen {
		return Errorf(EINVALID, "Password is too long (maximum is %d bytes).", MaxPasswordLen)
	}
	return nil
}

func validText(field, s string, minLen, maxLen int) error {
	if !utf8.ValidString(s) {
		return Errorf(EINVALID, "%s is not valid UTF-8 text.", field)
	}
	if hasControl(s, field == "Comment") {
		return Errorf(EINVALID, "%s contains control characters.", field)
	}
	if field != "Comment" && hasInvisible(s) {
		return Errorf(EINVALID, "%s contains invisible or text-direction characters.", field)
	}
	if field != "Comment" && stacksMarks(s) {
		return Errorf(EINVALID, "%s stacks too many accents or marks on one character (at most %d).", field, MaxCombiningMarks)
	}
	n := utf8.RuneCountInString(s)
	switch {
	case n == 0:
		return Errorf(EINVALID, "%s can't be blank.", field)
	case n < minLen:
		return Errorf(EINVALID, "%s is too short (minimum is %d characters).", field, minLen)
	case n > maxLen:
		return Errorf(EINVALID, "%s is too long (maximum is %d characters).", field, maxLen)
	}
	return nil
}

// Store is everything the site's pages need from a database. The sqlite and
// postgres packages implement it; handlers see only this interface (and,
// on the load-test endpoints, BenchmarkStore), so no SQL, no transaction
// and no choice of connection pool ever appears in a handler.
type Store interface {
	UserStore
	PostStore
	CommentStore
	SessionStore

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
	// PostPage loads a post with its author and its comments (newest first)
	// with their authors. A post that existed but was deleted is EGONE; an
	// id never used is ENOTFOUND.
	PostPage(ctx context.Context, id int64) (*Post, []*Comment, error)
}

// CommentStore reads and writes comments.
type CommentStore interface {
	CreateComment(ctx context.Context, postID, userID int64, in CommentInput) (*Comment, error)
	FindCommentByID(ctx context.Context, id int64) (*Comment, error)
	UpdateComment(ctx context.Context, id int64, in CommentInput) (*Comment, error)
	DeleteComment(ctx context.Context, id int64) error
}

// SessionLimits bound how long the server accepts a session, whatever the
// browser's cookie says: Idle since its last recorded activity, Lifetime
// since sign-in. Zero means no limit.
type SessionLimits struct {
	Idle     time.Duration
	Lifetime time.Duration
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
	// DeleteExpiredSessions deletes every session past limits and says how
	// many it deleted.
	DeleteExpiredSessions(ctx context.Context, limits SessionLimits) (int64, error)
}

// BenchmarkStore runs the actions of the load-test endpoints
// (POST /benchmarking/{action}), one call each. It is not part of Store: the
// web layer gets one only when benchmarking is switched on.
//
// Every action but PointRead first updates a random user's last_seen_at and
// waits for that write to commit, so that every benchmarking request
// writes. The write actions pick their random rows and write inside one
// transaction, as ordinary "find, then create/delete" application code does.
//
// "Random row" means: a random id between the smallest and largest id, then
// the first row at or after it, wrapping around to the first row; so a gap
// left by a deleted row never turns into a not-found error.
type BenchmarkStore interface {
	// CreatePost creates a post by the touched user.
	CreatePost(ctx context.Context, in PostInput) (*Post, error)
	// CreateComment has the touched user comment on a random post.
	CreateComment(ctx context.Context, in CommentInput) (*Comment, error)
	// DeletePost deletes a random post and its comments.
	DeletePost(ctx context.Context) error
	// DeleteComment deletes a random comment and returns the post it was on.
	DeleteComment(ctx context.Context) (postID int64, err error)
	// ShowPost reads a random post's page (as Store.PostPage).
	ShowPost(ctx context.Context) (*Post, []*Comment, error)
	// ListPosts reads up to limit posts in id order from a random id on,
	// and returns that id.
	ListPosts(ctx context.Context, limit int) (fromID int64, posts []*Post, err error)
	// ShowUser reads the touched user's page (as Store.UserPage).
	ShowUser(ctx context.Context, limit int) (*User, []*Post, []*Comment, error)
	// PointRead reads one random user's screen name by id: one indexed
	// read, no write and no touch, to show what the database costs when
	// nothing writes.
	PointRead(ctx context.Context) (screenName string, err error)
}

// hasControl reports whether s holds control characters: NUL (which SQLite's
// length() and many tools treat as the end of the text) and the other C0
// and C1 controls. Multi-line fields may hold newlines and tabs.
func hasControl(s string, multiline bool) bool {
	for _, r := range s {
		if multiline && (r == '\n' || r == '\r' || r == '\t') {
			continue
		}
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return true
		}
	}
	return false
}

// hasInvisible reports whether s holds characters that change how the
// text around them reads without being seen, or are not seen at all:
// Unicode's format characters (Cf: bidirectional overrides, embeddings,
// isolates and marks, which can make "gpj.exe" show as "exe.jpg";
// zero-width spaces and joiners; invisible operators such as U+2062; tag
// characters), the other default-ignorable code points (the Hangul
// fillers such as U+3164, variation selectors), and the line and
// paragraph separators U+2028 and U+2029. With them two titles or names
// that differ look alike. One-line fields — titles, screen names —
// refuse them; comments and descriptions keep them, as right-to-left
// text and emoji sequences need them.
func hasInvisible(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Zl, unicode.Zp) {
			return true
		}
	}
	return false
}

// MaxCombiningMarks is how many combining marks (accents, vowel signs,
// points) one character of a one-line field may carry. Vietnamese stacks
// two, pointed Hebrew three; "Zalgo" text stacks dozens, drawing over the
// lines around it and hiding what the text says.
const MaxCombiningMarks = 4

// stacksMarks reports whether s has a run of more than MaxCombiningMarks
// combining marks.
func stacksMarks(s string) bool {
	run := 0
	for _, r := range s {
		if !unicode.Is(unicode.M, r) {
			run = 0
			continue
		}
		if run++; run > MaxCombiningMarks {
			return true
		}
	}
	return false
}

// Dataset is every row of a database: what `seed` generates and `copy`
// moves between databases. Ids are kept as they are.
type Dataset struct {
	Users    []*User
	Posts    []*Post
	Comments []*Comment
	Sessions []*Session
}

// TrueCounts counts ds's rows for its counter caches: the posts of each
// user and the comments of each post, by id.
func (ds *Dataset) TrueCounts() (postsByUser, commentsByPost map[int64]int) {
	postsByUser, commentsByPost = map[int64]int{}, map[int64]int{}
	for _, p := range ds.Posts {
		postsByUser[p.UserID]++
	}
	for _, c := range ds.Comments {
		commentsByPost[c.PostID]++
	}
	return postsByUser, commentsByPost
}

// Stream yields ds's rows one at a time, in the order of its slices.
func (ds *Dataset) Stream() DatasetStream {
	return DatasetStream{
		Users:    slices.Values(ds.Users),
		Posts:    slices.Values(ds.Posts),
		Comments: slices.Values(ds.Comments),
		Sessions: slices.Values(ds.Sessions),
	}
}

// DatasetStream is a data set read one row at a time, so a store can load
// any number of rows in memory that does not grow with them. A store reads
// every user, then every post, then every comment, then every session (a
// row's parents are always written before it), each sequence once; a nil
// sequence has no rows. A store keeps no row after asking for the next.
type DatasetStream struct {
	Users    iter.Seq[*User]
	Posts    iter.Seq[*Post]
	Comments iter.Seq[*Comment]
	Sessions iter.Seq[*Session]
}

// Consistency is what Database.CheckConsistency found.
type Consistency struct {
	Integrity          string // the engine's own check: "ok" when sound
	ForeignKeyErrors   int    // rows referencing a missing parent
	WrongPostsCounts   int    // users whose posts_count differs from their posts
	WrongCommentCounts int    // posts whose comments_count differs from their comments
	Users, Posts       int
	Comments, Sessions int
}

// OK reports whether every check passed.
func (c Consistency) OK() bool {
	return c.Integrity == "ok" && c.ForeignKeyErrors == 0 && c.WrongPostsCounts == 0 && c.WrongCommentCounts == 0
}

// Database is a Store that commands and tests can also fill, export, check
// and close: the SQLite and PostgreSQL implementations both provide it.
type Database interface {
	Store
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
	// Benchmark returns the actions of the load-test endpoints on this
	// database.
	Benchmark() BenchmarkStore
	// Describe says which engine and setup serve the site, for the
	// start-up line and logs: "profile enhanced" (SQLite), "PostgreSQL".
	Describe() string
	// DatabaseStats reports the database's own counters and gauges, for
	// /metrics and for tests that watch writers wait.
	DatabaseStats() DatabaseStats
	Close() error
}

// DatabaseStats is what a database reports of its own work: counters since
// it opened and gauges now. A part that an engine does not have is nil.
type DatabaseStats struct {
	// Setup names the connection setup: the SQLite profile, or "postgres".
	Setup string
	// Lock counts waits for and failures on SQLite's write lock; nil on
	// PostgreSQL, whose writers lock rows instead.
	Lock *LockStats
	// WriterQueue is the queue writes wait in for their turn; nil where
	// writes do not queue (PostgreSQL).
	WriterQueue *WriterQueueStats
	// Restarts counts write transactions started over; nil where none is
	// (SQLite: one writer at a time, nothing to start over).
	Restarts *RestartStats
	// Pools are the connection pools: SQLite's read and write pools (or
	// its one shared pool), PostgreSQL's one.
	Pools []PoolStats
}

// LockStats counts what SQLite's write lock cost.
type LockStats struct {
	BusyRetries int64 // BEGIN IMMEDIATE attempts that found the lock held and were retried
	BusyErrors  int64 // SQLITE_BUSY/LOCKED errors returned to requests
}

// WriterQueueStats describes the queue writes wait in for their turn.
type WriterQueueStats struct {
	Depth     int   // writers waiting now
	MaxDepth  int   // most writers ever waiting at once
	Turns     int64 // turns taken
	Abandoned int64 // writers that left before their turn
	Commits   int64 // transactions committed for them (the touches waiting at one moment share one)
}

// RestartStats counts write transactions started over.
type RestartStats struct {
	Retries   int64 // all restarts: a random pick deleted meanwhile, a serialization failure, a deadlock
	Deadlocks int64 // those the server aborted as deadlocked
}

// PoolStats describes one connection pool.
type PoolStats struct {
	Name     string // "read", "write", "shared" or "postgres"
	Open     int    // connections open now
	InUse    int    // connections in use now
	Waits    int64  // times a caller waited for a free connection
	WaitTime time.Duration
}

// Cutoffs turns the limits into the two instants a live session must be
// newer than at now: its last activity and its sign-in. A zero limit gives
// the zero time, which every session is newer than.
func (l SessionLimits) Cutoffs(now time.Time) (activeAfter, createdAfter time.Time) {
	if l.Idle > 0 {
		activeAfter = now.Add(-l.Idle)
	}
	if l.Lifetime > 0 {
		createdAfter = now.Add(-l.Lifetime)
	}
	return activeAfter, createdAfter
}
