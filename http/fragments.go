package http

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/loremnews/loremnews"
)

// The small pieces every row of a listing repeats, and the long lists
// themselves, are written by hand so the hot loops of the pages allocate
// little. templ compiles each { expr } to fmt.Sprint(expr) followed by an
// escaping copy, and each call of a templ component to a closure and a
// context value: tens of allocations per row of the index. Written this
// way, the listings render faster with far fewer allocations; the figures
// are in benchmarks/perf/README.md (attempts 17a, 32, 34), measured with
// go test -bench Render ./http/.
//
// Every piece is one method of builder, and nothing else writes HTML here.
// A template uses a piece as a fragment (text, ago, plural, author,
// paragraphsOf, and the row lists), a one-line closure over the method.

// markup is HTML of this package's own: constants such as `<li id="post-`
// or " · ". An untyped string constant becomes a markup by itself; a
// string variable, such as a user's title or name, does not, so adding one
// as markup does not compile unless it is converted, markup(s), in plain
// sight.
type markup string

// builder builds a fragment of HTML. Its only way to take a string from
// the user is text, which escapes it as templ's { expr } does in text
// (html.EscapeString: & < > ' "); everything else it adds is markup, a
// number, one of our paths, or a date it formats itself.
type builder struct{ b []byte }

// markup adds m as it is.
func (h *builder) markup(m markup) { h.b = append(h.b, m...) }

// text adds s escaped, in runs between the characters to escape. It
// looks at s eight bytes at a time (escapeIn) and at single bytes only
// in a word that holds one to escape: comment bodies, the bulk of a
// page, rarely do.
func (h *builder) text(s string) {
	last, i := 0, 0
	for i < len(s) {
		if i+8 <= len(s) && !escapeIn(word(s, i)) {
			i += 8
			continue
		}
		for end := min(i+8, len(s)); i < end; i++ {
			if esc := escapes[s[i]]; esc != "" {
				h.b = append(h.b, s[last:i]...)
				h.b = append(h.b, esc...)
				last = i + 1
			}
		}
	}
	h.b = append(h.b, s[last:]...)
}

// escapes maps each byte that HTML text must escape to its entity.
var escapes = [256]string{'&': "&amp;", '<': "&lt;", '>': "&gt;", '\'': "&#39;", '"': "&#34;"}

// word is the eight bytes of s from i, the first the lowest (the compiler
// makes it one load, checked once).
func word(s string, i int) uint64 {
	w := s[i : i+8]
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

// escapeIn reports whether any of the eight bytes of w is one that text
// escapes. A byte of w equals c where w^(c in every byte) has a zero
// byte, and x has one exactly when (x-0x01…01) &^ x & 0x80…80 is not 0
// (the lowest zero byte sets its bit; bits above it may be set by the
// borrow, which does not change the answer).
func escapeIn(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	a, b, c, d, e := w^(ones*'&'), w^(ones*'<'), w^(ones*'>'), w^(ones*'\''), w^(ones*'"')
	return ((a-ones)&^a|(b-ones)&^b|(c-ones)&^c|(d-ones)&^d|(e-ones)&^e)&highs != 0
}

// int adds n in decimal.
func (h *builder) int(n int64) { h.b = strconv.AppendInt(h.b, n, 10) }

// path adds one of the site's paths (paths.go): our bases and tails and a
// number, nothing of the user's.
func (h *builder) path(base string, id int64, tail string) {
	h.b = appendSitePath(h.b, base, id, tail)
}

// timeAgo adds <time datetime="2026-11-23T16:00:00Z" title="23 Nov 2026
// 16:00 UTC">3 hours ago</time>: the age at now to read, the date on
// hover. now is the handler's clock, read once per page (basePage.now).
// Both dates come from one reading of the calendar (a user page shows two
// hundred).
func (h *builder) timeAgo(now, t time.Time) {
	c := calendarOf(t)
	h.markup(`<time datetime="`)
	h.b = c.appendRFC3339(h.b)
	h.markup(`" title="`)
	h.b = c.appendDate(h.b)
	h.markup(`">`)
	h.b = appendAgo(h.b, now.Sub(t))
	h.markup(`</time>`)
}

// calendar is a time in UTC and its date and clock, read once.
type calendar struct {
	u                      time.Time
	year                   int
	month                  time.Month
	day, hour, minute, sec int
}

func calendarOf(t time.Time) calendar {
	c := calendar{u: t.UTC()}
	c.year, c.month, c.day = c.u.Date()
	c.hour, c.minute, c.sec = c.u.Clock()
	return c
}

// appendDate appends the time as "23 Nov 2026 16:00 UTC": what
// u.AppendFormat(b, "2 Jan 2006 15:04 MST") writes, without reading the
// layout again for every date (a listing shows a hundred).
func (c calendar) appendDate(b []byte) []byte {
	b = strconv.AppendInt(b, int64(c.day), 10)
	b = append(b, ' ')
	b = append(b, c.month.String()[:3]...)
	b = append(b, ' ')
	year := c.year
	if year < 0 {
		b = append(b, '-')
		year = -year
	}
	if year < 1000 {
		b = append(b, "000"[:4-len(strconv.Itoa(year))]...)
	}
	b = strconv.AppendInt(b, int64(year), 10)
	b = append(b, ' ')
	b = appendTwoDigits(b, c.hour)
	b = append(b, ':')
	b = appendTwoDigits(b, c.minute)
	return append(b, " UTC"...)
}

// appendRFC3339 appends the time as u.AppendFormat(b, time.RFC3339) does,
// "2026-11-23T16:00:00Z", by hand for the years 0 to 9999.
func (c calendar) appendRFC3339(b []byte) []byte {
	if c.year < 0 || c.year > 9999 {
		return c.u.AppendFormat(b, time.RFC3339)
	}
	b = appendTwoDigits(b, c.year/100)
	b = appendTwoDigits(b, c.year%100)
	b = append(b, '-')
	b = appendTwoDigits(b, int(c.month))
	b = append(b, '-')
	b = appendTwoDigits(b, c.day)
	b = append(b, 'T')
	b = appendTwoDigits(b, c.hour)
	b = append(b, ':')
	b = appendTwoDigits(b, c.minute)
	b = append(b, ':')
	b = appendTwoDigits(b, c.sec)
	return append(b, 'Z')
}

// appendTwoDigits appends n, 0 to 99, in two digits.
func appendTwoDigits(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }

// appendAgo says how long ago d was, the way people say it: "3 hours ago".
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

// plural adds "1 comment" or "12 comments".
func (h *builder) plural(n int, one, many markup) {
	h.int(int64(n))
	h.markup(" ")
	if n == 1 {
		h.markup(one)
	} else {
		h.markup(many)
	}
}

// author adds a link to u, or "you" for the reader's own things.
func (h *builder) author(page *basePage, u *loremnews.User) {
	if page.Owns(u.ID) {
		h.markup("you")
		return
	}
	h.markup(`<a href="`)
	h.path(usersBase, u.ID, "")
	h.markup(`">`)
	h.text(u.ScreenName)
	h.markup("</a>")
}

// paragraphs adds s as paragraphs: split on blank lines, each trimmed,
// empty ones dropped; single newlines stay within a paragraph.
func (h *builder) paragraphs(s string) {
	for p := range strings.SplitSeq(strings.ReplaceAll(s, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			h.markup("<p>")
			h.text(p)
			h.markup("</p>")
		}
	}
}

// titleLink adds a post's title linking to the post.
func (h *builder) titleLink(p *loremnews.Post) {
	h.markup(`<a class="title" href="`)
	h.path(postsBase, p.ID, "")
	h.markup(`">`)
	h.text(p.Title)
	h.markup(`</a>`)
}

// fragment is a piece of a page as the templates use it: a templ
// component that runs a builder and writes what it built.
type fragment func(*builder)

// builders are reused across fragments and pages. One grown past
// maxPooledBuilder (a long post's paragraphs) is left to the collector
// rather than kept.
var builders = sync.Pool{New: func() any { return &builder{b: make([]byte, 0, 1024)} }}

const maxPooledBuilder = 64 << 10

// Render builds the fragment and writes it.
func (f fragment) Render(_ context.Context, w io.Writer) error {
	h := builders.Get().(*builder)
	h.b = h.b[:0]
	f(h)
	_, err := w.Write(h.b)
	if cap(h.b) <= maxPooledBuilder {
		builders.Put(h)
	}
	return err
}

// String is the fragment's HTML, for a handler that puts it in a field.
func (f fragment) String() string {
	var h builder
	f(&h)
	return string(h.b)
}

// The pieces as fragments, for the templates.

var (
	space  fragment = func(h *builder) { h.markup(" ") }
	middot fragment = func(h *builder) { h.markup(" · ") }
)

func text(s string) fragment { return func(h *builder) { h.text(s) } }

func ago(page *basePage, t time.Time) fragment { return func(h *builder) { h.timeAgo(page.now, t) } }

func plural(n int, one, many markup) fragment { return func(h *builder) { h.plural(n, one, many) } }

func author(page *basePage, u *loremnews.User) fragment {
	return func(h *builder) { h.author(page, u) }
}

func paragraphsOf(s string) fragment { return func(h *builder) { h.paragraphs(s) } }

// The four long lists of the site, a row per post or comment (a hundred
// on the index): each writes its rows one at a time from one builder, so
// a row costs no allocation of its own and the builder holds one row, not
// the list. The markup is what the templates wrote for these rows, byte
// for byte (TestRowLists).

// rowList is a list of items written as row builds each.
type rowList[T any] struct {
	items []T
	row   func(*builder, T)
}

func rows[T any](items []T, row func(*builder, T)) rowList[T] { return rowList[T]{items, row} }

// Render builds and writes the rows one at a time.
func (l rowList[T]) Render(_ context.Context, w io.Writer) error {
	h := builders.Get().(*builder)
	defer builders.Put(h)
	for _, item := range l.items {
		h.b = h.b[:0]
		l.row(h, item)
		if _, err := w.Write(h.b); err != nil {
			return err
		}
	}
	return nil
}

// postRows are the index's rows: title, author, age and comment count.
func postRows(page *basePage, posts []*loremnews.Post) rowList[*loremnews.Post] {
	return rows(posts, func(h *builder, p *loremnews.Post) {
		h.markup(`<li id="post-`)
		h.int(p.ID)
		h.markup(`">`)
		h.titleLink(p)
		h.markup(`<div class="meta">by `)
		h.author(page, p.Author)
		h.markup(` · `)
		h.timeAgo(page.now, p.CreatedAt)
		h.markup(` · <a href="`)
		h.path(postsBase, p.ID, "#comments")
		h.markup(`">`)
		h.plural(p.CommentsCount, "comment", "comments")
		h.markup(`</a></div></li>`)
	})
}

// userPostRows are a user's posts on their page: title, age, comment count.
func userPostRows(page *basePage, posts []*loremnews.Post) rowList[*loremnews.Post] {
	return rows(posts, func(h *builder, p *loremnews.Post) {
		h.markup(`<li>`)
		h.titleLink(p)
		h.markup(`<div class="meta">`)
		h.timeAgo(page.now, p.CreatedAt)
		h.markup(` · `)
		h.plural(p.CommentsCount, "comment", "comments")
		h.markup(`</div></li>`)
	})
}

// userCommentRows are a user's comments on their page: the post each is
// on (linked to the comment), its age, its paragraphs.
func userCommentRows(page *basePage, comments []*loremnews.Comment) rowList[*loremnews.Comment] {
	return rows(comments, func(h *builder, c *loremnews.Comment) {
		h.markup(`<li id="comment-`)
		h.int(c.ID)
		h.markup(`"><div class="meta">on <a href="`)
		h.path(postsBase, c.PostID, "#comment-") // commentTail(c.ID), without its allocation
		h.int(c.ID)
		h.markup(`">`)
		h.text(c.Post.Title)
		h.markup(`</a> · `)
		h.timeAgo(page.now, c.CreatedAt)
		h.markup(`</div><div class="body">`)
		h.paragraphs(bodyExcerpt(c.Body, userCommentExcerpt))
		h.markup(`</div></li>`)
	})
}

// bodyExcerpt is s if it has at most n characters, else its first n
// characters, cut back to the last space or line break among the final 40
// if there is one (so no word is cut in half), then "…"; its paragraphs
// stay as they were.
func bodyExcerpt(s string, n int) string {
	// A string has at least as many bytes as characters, so one of at
	// most n bytes (every seeded comment) needs no count.
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	return cutAtWord(s, n, 40)
}

// postCommentRows are a post's comments on its page: author, age, the
// reader's own edit and delete links, the paragraphs.
func postCommentRows(page *basePage, comments []*loremnews.Comment) rowList[*loremnews.Comment] {
	return rows(comments, func(h *builder, c *loremnews.Comment) {
		h.markup(`<li id="comment-`)
		h.int(c.ID)
		h.markup(`"><div class="meta">`)
		h.author(page, c.Author)
		h.markup(` · `)
		h.timeAgo(page.now, c.CreatedAt)
		if page.Owns(c.UserID) {
			// Two spaces before each link, as the template wrote them.
			h.markup(` ·  <a href="`)
			h.path(commentsBase, c.ID, "/edit")
			h.markup(`">Edit</a> ·  <a class="danger" href="`)
			h.path(commentsBase, c.ID, "/delete")
			h.markup(`">Delete</a>`)
		}
		h.markup(`</div><div class="body">`)
		h.paragraphs(c.Body)
		h.markup(`</div></li>`)
	})
}
