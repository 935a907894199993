package http

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var staticFS embed.FS

// staticFile is one embedded file, served under a name that carries a
// digest of its content ("style.1a2b3c4d5e.css"): a changed file gets a new
// URL, so browsers may keep every URL for a year without asking again.
type staticFile struct {
	body        []byte
	contentType string
	etag        string
}

// staticAssets maps fingerprinted names to files, and plain names to
// their fingerprinted URL.
type staticAssets struct {
	files map[string]*staticFile
	urls  map[string]string
}

// assets is built once from the embedded folder; init fails loudly if it
// cannot be, since a missing stylesheet is a broken build.
var assets = mustLoadAssets(staticFS)

func mustLoadAssets(fsys fs.FS) *staticAssets {
	a := &staticAssets{files: map[string]*staticFile{}, urls: map[string]string{}}
	err := fs.WalkDir(fsys, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		digest := hex.EncodeToString(sum[:5])
		name := strings.TrimPrefix(p, "static/")
		ext := path.Ext(name)
		hashed := strings.TrimSuffix(name, ext) + "." + digest + ext
		ctype := mime.TypeByExtension(ext)
		if ext == ".ico" { // not in Go's built-in table; the system's may lack it
			ctype = "image/vnd.microsoft.icon"
		}
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		a.files[hashed] = &staticFile{body: body, contentType: ctype, etag: `"` + digest + `"`}
		a.urls[name] = "/static/" + hashed
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("http: embedded static files: %v", err))
	}
	return a
}

// staticURL is the fingerprinted URL of an embedded file; it panics on a
// name that is not embedded, which the page tests would catch at once.
func staticURL(name string) string {
	u, ok := assets.urls[name]
	if !ok {
		panic("http: no static file " + name)
	}
	return u
}

// serveStatic answers GET /static/{name} for fingerprinted names only. Any
// other name, the folder itself or a subfolder is 404: there are no listings.
func (h *Handler) serveStatic(w http.ResponseWriter, r *http.Request) {
	f, ok := assets.files[r.PathValue("name")]
	if !ok {
		h.renderError(w, r, notFound("No such file."))
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	serveFile(w, r, f)
}

// serveFile writes f with its type and ETag; http.ServeContent answers
// If-None-Match and Range requests.
func serveFile(w http.ResponseWriter, r *http.Request, f *staticFile) {
	w.Header().Set("Content-Type", f.contentType)
	w.Header().Set("ETag", f.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}

// favicon answers /favicon.ico, which browsers ask for on their own at a
// fixed URL, so it cannot be fingerprinted: cached for a day.
func (h *Handler) favicon(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=86400")
	serveFile(w, r, assets.files[strings.TrimPrefix(staticURL("favicon.ico"), "/static/")])
}

// robotsTxt lets crawlers read every page but the forms and the
// benchmarking endpoints, which show nothing worth indexing.
const robotsTxt = `User-agent: *
Disallow: /signin
Disallow: /signup
Disallow: /posts/new
Disallow: /benchmarking/
`

func (h *Handler) robots(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	w.Write([]byte(robotsTxt))
}
