package http

import (
	"bytes"
	"context"
	"embed"
	"net/http"
	"strconv"
	"sync"

	"github.com/a-h/templ"
	"github.com/loremnews/loremnews"
)

//go:embed static
var staticFS embed.FS

func postURL(id int64) templ.SafeURL { return templ.SafeURL("/posts/" + strconv.FormatInt(id, 10)) }
func userURL(id int64) templ.SafeURL { return templ.SafeURL("/users/" + strconv.FormatInt(id, 10)) }
func commentURL(id int64) templ.SafeURL {
	return templ.SafeURL("/comments/" + strconv.FormatInt(id, 10))
}

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
func (p *authPage) view() templ.Component        { return authView(p) }
func (p *userPage) view() templ.Component        { return userView(p) }
func (p *userFormPage) view() templ.Component    { return userFormView(p) }
func (p *errorPage) view() templ.Component       { return errorView(p) }

// basePage is what the layout needs on every page.
type basePage struct {
	Title       string
	CurrentUser *loremnews.User
	CSRFToken   string
	Flash       string
}

func (b *basePage) base() *basePage { return b }

// Owns reports whether the signed-in reader is userID.
func (b *basePage) Owns(userID int64) bool { return b.CurrentUser != nil && b.CurrentUser.ID == userID }

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// render executes a page into a buffer first, so an error never sends half
// a page, then writes it with status.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, data pageData) {
	st := state(r)
	b := data.base()
	b.CurrentUser, b.CSRFToken = st.user, st.csrf
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

// cacheStatic lets browsers keep the stylesheet for a day.
func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		next.ServeHTTP(w, r)
	})
}
