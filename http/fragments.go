package http

import (
	"context"
	"io"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/loremnews/loremnews"
)

// Small components for what every row of a listing repeats, written by hand
// so the hot loops of the pages allocate little. templ compiles each
// { expr } to fmt.Sprint(expr) followed by an escaping copy, and each call
// of a templ component to a closure and a context value: tens of
// allocations per row of the index. Written this way, the listings render
// faster with far fewer allocations; the figures are in
// benchmarks/perf/README.md (attempt 17a), measured with
// go test -bench Render ./http/.
// Each type's Render escapes exactly as templ's { expr } does in text
// (html.EscapeString: & < > ' "), or writes only characters that need no
// escaping, as said beside it.

// text is a string written as HTML text, escaped.
type text string

// Render writes s escaped, in runs between the characters to escape.
func (s text) Render(_ context.Context, w io.Writer) error { return writeEscaped(w, string(s)) }

// space and middot are the separators between a row's parts.
const (
	space  = text(" ")
	middot = text(" · ")
)

// escapes maps each byte that HTML text must escape to its entity; a
// table lookup per byte is what keeps the loop over long comment bodies
// cheap.
var escapes = [256]string{'&': "&amp;", '<': "&lt;", '>': "&gt;", '\'': "&#39;", '"': "&#34;"}

func writeEscaped(w io.Writer, s string) error {
	last := 0
	for i := 0; i < len(s); i++ {
		esc := escapes[s[i]]
		if esc == "" {
			continue
		}
		if _, err := io.WriteString(w, s[last:i]); err != nil {
			return err
		}
		if _, err := io.WriteString(w, esc); err != nil {
			return err
		}
		last = i + 1
	}
	_, err := io.WriteString(w, s[last:])
	return err
}

// appendEscaped appends s escaped, as writeEscaped writes it.
func appendEscaped(b []byte, s string) []byte {
	last := 0
	for i := 0; i < len(s); i++ {
		if esc := escapes[s[i]]; esc != "" {
			b = append(b, s[last:i]...)
			b = append(b, esc...)
			last = i + 1
		}
	}
	return append(b, s[last:]...)
}

// timeAgo is <time datetime="2026-11-23T16:00:00Z" title="23 Nov 2026
// 16:00 UTC">3 hours ago</time>: the age to read, the date on hover. All
// parts are digits, ASCII letters, spaces and "-:+", so nothing in them
// needs escaping.
type timeAgo time.Time

func (t timeAgo) Render(_ context.Context, w io.Writer) error {
	var buf [128]byte
	_, err := w.Write(appendTimeAgo(buf[:0], time.Time(t)))
	return err
}

func appendTimeAgo(b []byte, t time.Time) []byte {
	u := t.UTC()
	b = append(b, `<time datetime="`...)
	b = u.AppendFormat(b, time.RFC3339)
	b = append(b, `" title="`...)
	b = appendDate(b, u)
	b = append(b, `">`...)
	b = appendAgo(b, time.Since(t))
	return append(b, `</time>`...)
}

// appendDate appends u (in UTC) as "23 Nov 2026 16:00 UTC": what
// u.AppendFormat(b, "2 Jan 2006 15:04 MST") writes, without reading the
// layout again for every date (a listing shows a hundred).
func appendDate(b []byte, u time.Time) []byte {
	year, month, day := u.Date()
	hour, minute, _ := u.Clock()
	b = strconv.AppendInt(b, int64(day), 10)
	b = append(b, ' ')
	b = append(b, month.String()[:3]...)
	b = append(b, ' ')
	if year >= 0 && year < 1000 {
		b = append(b, "000"[:4-len(strconv.Itoa(year))]...)
	}
	b = strconv.AppendInt(b, int64(year), 10)
	b = append(b, ' ', byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10))
	return append(b, " UTC"...)
}

// appendAgo says how long ago t was, the way people say it: "3 hours ago".
func appendAgo(b []byte, d time.Duration) []byte {
	var n time.Duration
	var unit string
	switch {
	case d < time.Minute:
		return append(b, "just now"...)
	case d < time.Hour:
		n, unit = d/time.Minute, "minute"
	case d < 24*time.Hour:
		n, unit = d/time.Hour, "hour"
	case d < 30*24*time.Hour:
		n, unit = d/(24*time.Hour), "day"
	case d < 365*24*time.Hour:
		n, unit = d/(30*24*time.Hour), "month"
	default:
		n, unit = d/(365*24*time.Hour), "year"
	}
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, ' ')
	b = append(b, unit...)
	if n != 1 {
		b = append(b, 's')
	}
	return append(b, " ago"...)
}

// count is "1 comment" or "12 comments": digits and the caller's fixed words.
type count struct {
	n         int
	one, many string
}

func plural(n int, one, many string) count { return count{n, one, many} }

func (c count) append(b []byte) []byte {
	b = strconv.AppendInt(b, int64(c.n), 10)
	b = append(b, ' ')
	if c.n == 1 {
		return append(b, c.one...)
	}
	return append(b, c.many...)
}

func (c count) String() string { return string(c.append(nil)) }

func (c count) Render(_ context.Context, w io.Writer) error {
	var buf [48]byte
	_, err := w.Write(c.append(buf[:0]))
	return err
}

// authorLink links to a user, or says "you" for the reader's own things.
type authorLink struct {
	b *basePage
	u *loremnews.User
}

func author(b *basePage, u *loremnews.User) authorLink { return authorLink{b, u} }

func (a authorLink) Render(_ context.Context, w io.Writer) error {
	var buf [128]byte
	_, err := w.Write(a.append(buf[:0]))
	return err
}

func (a authorLink) append(b []byte) []byte {
	if a.b.Owns(a.u.ID) {
		return append(b, "you"...)
	}
	b = append(b, `<a href="`...)
	b = appendSitePath(b, usersBase, a.u.ID, "")
	b = append(b, `">`...)
	b = appendEscaped(b, a.u.ScreenName)
	return append(b, "</a>"...)
}

// paragraphsOf writes text as paragraphs: split on blank lines, each
// trimmed, empty ones dropped; single newlines stay within a paragraph.
type paragraphsOf string

func (s paragraphsOf) Render(_ context.Context, w io.Writer) error {
	for p := range paragraphs(string(s)) {
		if _, err := io.WriteString(w, "<p>"); err != nil {
			return err
		}
		if err := writeEscaped(w, p); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "</p>"); err != nil {
			return err
		}
	}
	return nil
}

// appendParagraphs appends s as paragraphsOf writes it.
func appendParagraphs(b []byte, s string) []byte {
	for p := range paragraphs(s) {
		b = append(b, "<p>"...)
		b = appendEscaped(b, p)
		b = append(b, "</p>"...)
	}
	return b
}

// paragraphs yields the paragraphs of s: split on blank lines, each
// trimmed, empty ones dropped.
func paragraphs(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for p := range strings.SplitSeq(strings.ReplaceAll(s, "\r\n", "\n"), "\n\n") {
			if p = strings.TrimSpace(p); p != "" && !yield(p) {
				return
			}
		}
	}
}

// The four long lists of the site, a row per post or comment (a hundred
// on the index): each is one component that builds a row in a buffer it
// reuses and writes it whole, so a row costs no allocation of its own.
// The markup is what the templates wrote for these rows, byte for byte
// (TestRowLists); the gain is in the performance log (attempts 32, 34).

// writeRows writes each row as appendRow builds it, in one buffer reused
// for the whole list.
func writeRows[T any](w io.Writer, rows []T, appendRow func([]byte, T) []byte) error {
	buf := make([]byte, 0, 1024)
	for _, row := range rows {
		buf = appendRow(buf[:0], row)
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// appendTitleLink appends a post's title linking to the post.
func appendTitleLink(b []byte, p *loremnews.Post) []byte {
	b = append(b, `<a class="title" href="`...)
	b = appendSitePath(b, postsBase, p.ID, "")
	b = append(b, `">`...)
	b = appendEscaped(b, p.Title)
	return append(b, `</a>`...)
}

// postRows are the index's rows: title, author, age and comment count.
type postRows struct {
	b     *basePage
	posts []*loremnews.Post
}

func (r postRows) Render(_ context.Context, w io.Writer) error {
	return writeRows(w, r.posts, func(b []byte, p *loremnews.Post) []byte {
		b = append(b, `<li id="post-`...)
		b = strconv.AppendInt(b, p.ID, 10)
		b = append(b, `">`...)
		b = appendTitleLink(b, p)
		b = append(b, `<div class="meta">by `...)
		b = author(r.b, p.Author).append(b)
		b = append(b, ` · `...)
		b = appendTimeAgo(b, p.CreatedAt)
		b = append(b, ` · <a href="`...)
		b = appendSitePath(b, postsBase, p.ID, "#comments")
		b = append(b, `">`...)
		b = plural(p.CommentsCount, "comment", "comments").append(b)
		return append(b, `</a></div></li>`...)
	})
}

// userPostRows are a user's posts on their page: title, age, comment count.
type userPostRows []*loremnews.Post

func (r userPostRows) Render(_ context.Context, w io.Writer) error {
	return writeRows(w, r, func(b []byte, p *loremnews.Post) []byte {
		b = append(b, `<li>`...)
		b = appendTitleLink(b, p)
		b = append(b, `<div class="meta">`...)
		b = appendTimeAgo(b, p.CreatedAt)
		b = append(b, ` · `...)
		b = plural(p.CommentsCount, "comment", "comments").append(b)
		return append(b, `</div></li>`...)
	})
}

// userCommentRows are a user's comments on their page: the post each is
// on (linked to the comment), its age, its paragraphs.
type userCommentRows []*loremnews.Comment

func (r userCommentRows) Render(_ context.Context, w io.Writer) error {
	return writeRows(w, r, func(b []byte, c *loremnews.Comment) []byte {
		b = append(b, `<li id="comment-`...)
		b = strconv.AppendInt(b, c.ID, 10)
		b = append(b, `"><div class="meta">on <a href="`...)
		b = appendSitePath(b, postsBase, c.PostID, "#comment-")
		b = strconv.AppendInt(b, c.ID, 10)
		b = append(b, `">`...)
		b = appendEscaped(b, c.Post.Title)
		b = append(b, `</a> · `...)
		b = appendTimeAgo(b, c.CreatedAt)
		b = append(b, `</div><div class="body">`...)
		b = appendParagraphs(b, c.Body)
		return append(b, `</div></li>`...)
	})
}

// postCommentRows are a post's comments on its page: author, age, the
// reader's own edit and delete links, the paragraphs.
type postCommentRows struct {
	b        *basePage
	comments []*loremnews.Comment
}

func (r postCommentRows) Render(_ context.Context, w io.Writer) error {
	return writeRows(w, r.comments, func(b []byte, c *loremnews.Comment) []byte {
		b = append(b, `<li id="comment-`...)
		b = strconv.AppendInt(b, c.ID, 10)
		b = append(b, `"><div class="meta">`...)
		b = author(r.b, c.Author).append(b)
		b = append(b, ` · `...)
		b = appendTimeAgo(b, c.CreatedAt)
		if r.b.Owns(c.UserID) {
			// Two spaces before each link, as the template wrote them.
			b = append(b, ` ·  <a href="`...)
			b = appendSitePath(b, commentsBase, c.ID, "/edit")
			b = append(b, `">Edit</a> ·  <a class="danger" href="`...)
			b = appendSitePath(b, commentsBase, c.ID, "/delete")
			b = append(b, `">Delete</a>`...)
		}
		b = append(b, `</div><div class="body">`...)
		b = appendParagraphs(b, c.Body)
		return append(b, `</div></li>`...)
	})
}
