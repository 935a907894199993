package loremnews

import "context"

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
	// DeletePost deletes a random post and its comments, and returns the
	// post's id.
	DeletePost(ctx context.Context) (id int64, err error)
	// DeleteComment deletes a random comment and returns its id and the
	// post it was on.
	DeleteComment(ctx context.Context) (id, postID int64, err error)
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
