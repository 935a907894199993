package loremnews

import (
	"strings"
	"time"
)

// PostCommentsPageSize is how many comments a page of a post lists: its
// first page (Store.PostPage) the newest ones, then each further page
// (Store.PostComments) the next older ones. It bounds what one view of a
// post can cost, however many comments the post has: at most this many
// bodies of at most MaxBodyLen characters each are read and rendered.
const PostCommentsPageSize = 20

// Comment is a reply to a post. Author and Post (their ids and the author's
// screen name or the post's title) are filled in by the store for the pages
// that show them (a post page needs the authors, a user page the post
// titles), for a whole listing at once.
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

// CommentInput is what a user may set on a comment.
type CommentInput struct {
	Body string
}

// Normalize trims surrounding space.
func (in *CommentInput) Normalize() { in.Body = strings.TrimSpace(in.Body) }

// Validate reports the first rule the input breaks as an EINVALID error.
func (in CommentInput) Validate() error {
	return textField{name: "Comment", multiline: true, min: MinBodyLen, max: MaxBodyLen}.check(in.Body)
}
