package http

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/loremnews/loremnews"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageFiles are the pages; each is parsed together with layout.html.
var pageFiles = []string{"index", "post", "post_form", "comment_form", "auth", "user", "user_form", "error"}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, name := range pageFiles {
		t, err := template.New(name).Funcs(templateFuncs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("http: parse template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

var templateFuncs = template.FuncMap{
	"ago":        ago,
	"iso":        func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"paragraphs": paragraphs,
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	},
	// byline pairs an author with whether they are the reader, for the
	// "author" template, which writes "you" for the reader's own things.
	"byline": func(p pageData, u *loremnews.User) bylineData {
		return bylineData{User: u, You: u != nil && p.base().CurrentUser != nil && p.base().CurrentUser.ID == u.ID}
	},
}

type bylineData struct {
	User *loremnews.User
	You  bool
}

// ago says how long ago t was, the way people say it: "3 hours ago".
func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return unitsAgo(int(d/time.Minute), "minute")
	case d < 24*time.Hour:
		return unitsAgo(int(d/time.Hour), "hour")
	case d < 30*24*time.Hour:
		return unitsAgo(int(d/(24*time.Hour)), "day")
	case d < 365*24*time.Hour:
		return unitsAgo(int(d/(30*24*time.Hour)), "month")
	default:
		return unitsAgo(int(d/(365*24*time.Hour)), "year")
	}
}

func unitsAgo(n int, unit string) string {
	if n == 1 {
		return "1 " + unit + " ago"
	}
	return fmt.Sprintf("%d %ss ago", n, unit)
}

// paragraphs splits text on blank lines; single newlines stay within a paragraph.
func paragraphs(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var out []string
	for _, p := range strings.Split(s, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// pageData is implemented by every page's data struct through the embedded base.
type pageData interface{ base() *basePage }

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

// render executes a page into a buffer first, so a template error never
// sends half a page, then writes it with status.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, page string, data pageData) {
	st := state(r)
	b := data.base()
	b.CurrentUser, b.CSRFToken = st.user, st.csrf
	if b.Flash == "" {
		b.Flash = st.takeFlash(w)
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if err := h.pages[page].ExecuteTemplate(buf, "layout", data); err != nil {
		h.log.Error("render", "page", page, "err", err)
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", fmt.Sprint(buf.Len()))
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
