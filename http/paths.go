package http

import (
	"strconv"

	"github.com/a-h/templ"
)

// The site's paths are spelled here and nowhere else: the handlers
// redirect to sitePath, the templates link to sitePathURL and the row
// writers (fragments.go) append appendSitePath, all three the same
// function. A page of a post, user or comment is its base, its id and a
// tail: sitePath(postsBase, 7, "/edit") is /posts/7/edit. The mux's
// patterns (routes.go) are the other side of the same names.
const (
	postsBase    = "/posts/"
	usersBase    = "/users/"
	commentsBase = "/comments/"
	sessionsBase = "/sessions/"
)

// appendSitePath appends base, id and tail.
func appendSitePath(b []byte, base string, id int64, tail string) []byte {
	b = append(b, base...)
	b = strconv.AppendInt(b, id, 10)
	return append(b, tail...)
}

// sitePath is base, id and tail as a string, for a redirect or a field.
func sitePath(base string, id int64, tail string) string {
	return string(appendSitePath(make([]byte, 0, len(base)+20+len(tail)), base, id, tail))
}

// sitePathURL is sitePath for a template's href or action: our own path,
// safe as it is.
func sitePathURL(base string, id int64, tail string) templ.SafeURL {
	return templ.SafeURL(sitePath(base, id, tail))
}

// commentTail is the tail that points at a comment on its post's page:
// sitePath(postsBase, postID, commentTail(id)) is /posts/7#comment-12.
func commentTail(id int64) string { return "#comment-" + strconv.FormatInt(id, 10) }

// pageTail is the tail of a user's next page of posts or comments, or of
// a post's next page of comments (list "posts" or "comments"), after the
// row with id before.
func pageTail(list string, before int64) string {
	return "/" + list + "?before=" + strconv.FormatInt(before, 10)
}
