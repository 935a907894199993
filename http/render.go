package http

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/a-h/templ"
	"github.com/loremnews/loremnews"
)

// pageData is implemented by every page's data struct: base() through the
// embedded basePage, view() by each page.
type pageData interface {
	base() *basePage
	view() templ.Component
}

func (p *indexPage) view() templ.Component       { return indexView(p) }
func (p *postPage) view() templ.Component        { return postView(p) }
func (p *postFormPage) view() templ.Component    { return postFormView(p) }
func (p *commentFormPage) view() templ.Component { return commentFormView(p) }
func (p *authPage) view() templ.Component {
	if p.SignUp {
		return signUpView(p)
	}
	return authView(p)
}
func (p *userPage) view() templ.Component     { return userView(p) }
func (p *userFormPage) view() templ.Component { return userFormView(p) }
func (p *errorPage) view() templ.Component    { return errorView(p) }
func (p *confirmPage) view() templ.Component  { return confirmView(p) }
func (p *userListPage) view() templ.Component { return userListView(p) }

// A further page of a post's comments.
func (p *postCommentsPage) view() templ.Component { return postCommentsView(p) }

// basePage is what the layout needs on every page.
type basePage struct {
	Title string
	// Description is the page's <meta name="description">, for search
	// results and link previews; empty means the site's.
	Description string
	CurrentUser *loremnews.User
	state       *requestState // the request's, for CSRFToken
	Flash       string
	// now is the handler's clock, read once for the page: every age on it
	// ("3 hours ago") is counted from it.
	now time.Time
}

func (b *basePage) base() *basePage { return b }

// CSRFToken is the token the page's forms carry (made on first use: a
// page without a form needs none).
func (b *basePage) CSRFToken() string {
	if b.state == nil {
		return ""
	}
	return b.state.csrfToken()
}

const siteName = "Lorem News"

// fullTitle is the <title>: "Page · Lorem News", or the site's name alone.
func (b *basePage) fullTitle() string {
	if b.Title == "" {
		return siteName
	}
	return b.Title + " · " + siteName
}

func (b *basePage) description() string {
	if b.Description == "" {
		return "Lorem News: a Hacker-News-style community of posts and comments, newest first."
	}
	return b.Description
}

// excerpt is the start of s as one line of at most n characters, cut at a
// word boundary when there is one: a page's description. It is
// oneLine(s, n) (the words of s joined by single spaces), cut by
// cutAtWord when longer than n.
func excerpt(s string, n int) string {
	line, more := oneLine(s, n)
	if !more {
		return line
	}
	// n-1 characters and "…"; a word boundary counts within the last half.
	return cutAtWord(line, n-1, n-2-n/2)
}

// oneLine is the start of s as strings.Join(strings.Fields(s), " ") would
// make it, without the bytes of s that are not UTF-8, built only until it
// is longer than n characters: more reports that it was (the line then
// holds n+1 characters and may be cut further). A description is long and
// only its start is shown, so the rest is never looked at; and past 4n
// bytes of s, not even the spaces that would make it longer.
func oneLine(s string, n int) (line string, more bool) {
	if len(s) > 4*n {
		s = s[:4*n]
	}
	b := make([]byte, 0, min(len(s), 4*(n+1)))
	chars, space := 0, false
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			continue // not UTF-8: left out
		case r < utf8.RuneSelf && asciiSpace[r] || r >= utf8.RuneSelf && unicode.IsSpace(r):
			space = len(b) > 0
			continue
		}
		if space {
			b = append(b, ' ')
			chars, space = chars+1, false
		}
		if size == 1 {
			b = append(b, byte(r))
		} else {
			b = append(b, s[i-size:i]...)
		}
		if chars++; chars > n {
			return string(b), true
		}
	}
	return string(b), false
}

// asciiSpace marks the ASCII bytes unicode.IsSpace (and strings.Fields)
// take for white space.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// cutAtWord is the first n characters of s, cut back to the last space or
// line break among the final window of them if there is one (so no word
// is cut in half), without the spaces it then ends with, then "…".
func cutAtWord(s string, n, window int) string {
	cut := len(s)
	for i := range s {
		if n == 0 {
			cut = i
			break
		}
		n--
	}
	if sp := strings.LastIndexAny(s[:cut], " \n"); sp > 0 && utf8.RuneCountInString(s[sp:cut]) <= window {
		cut = sp
	}
	return strings.TrimRight(s[:cut], " \n") + "…"
}

// Owns reports whether the signed-in reader is userID.
func (b *basePage) Owns(userID int64) bool { return b.CurrentUser != nil && b.CurrentUser.ID == userID }

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// render executes a page into a buffer first, so an error never sends half
// a page, then writes it with status.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, data pageData) {
	st := state(r)
	b := data.base()
	b.CurrentUser, b.state, b.now = st.user, st, h.now()
	if b.Flash == "" {
		b.Flash = st.takeFlash(w)
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	// Rendering into memory needs no cancellation; a request whose client
	// has gone (or whose body timed out, which cancels it too) still gets
	// its page written, or dropped by net/http, rather than a 500.
	if err := layout(b, data.view()).Render(context.WithoutCancel(r.Context()), buf); err != nil {
		h.log.Error("render", "path", r.URL.Path, "err", err)
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	if _, isForm := data.(*authPage); st.user != nil || isForm {
		// A signed-in page shows the reader's own data and tokens, and a
		// form its token: no browser or proxy cache may keep either.
		w.Header().Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
