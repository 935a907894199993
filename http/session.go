package http

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/loremnews/loremnews"
)

const (
	sessionCookie = "lorem_session"
	csrfCookie    = "lorem_csrf"
	flashCookie   = "lorem_flash"
	csrfField     = "csrf_token"
	// sessionTTL is how long a browser stays signed in without visiting.
	sessionTTL = 30 * 24 * time.Hour
	// touchEvery limits last-activity writes to one per session per minute.
	touchEvery = time.Minute
)

// requestState is what the middleware learns about a request.
type requestState struct {
	user    *loremnews.User
	session *loremnews.Session
	csrf    string
	flash   string
}

type stateKey struct{}

// state returns the request's state; never nil.
func state(r *http.Request) *requestState {
	if st, ok := r.Context().Value(stateKey{}).(*requestState); ok {
		return st
	}
	return &requestState{}
}

// flashes are the only messages a flash cookie can carry: the cookie holds
// a key, so a crafted cookie cannot put text on the page.
var flashes = map[string]string{
	"signed-in":       "Welcome back.",
	"signed-up":       "Welcome to Lorem News.",
	"signed-out":      "You are signed out.",
	"post-deleted":    "The post was deleted.",
	"post-gone":       "That post has been deleted.",
	"comment-deleted": "The comment was deleted.",
	"profile-saved":   "Your profile was saved.",
	"session-revoked": "That browser was signed out.",
	"account-deleted": "Your account was deleted.",
}

func (st *requestState) takeFlash(w http.ResponseWriter) string {
	if st.flash == "" {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Path: "/", MaxAge: -1})
	msg := flashes[st.flash]
	st.flash = ""
	return msg
}

func (h *Handler) setFlash(w http.ResponseWriter, key string) {
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: key, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.cfg.SecureCookies})
}

// randomToken returns 32 random bytes, base64url: unguessable.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return base64.RawURLEncoding.EncodeToString(b)
}

func tokenDigest(token string) []byte {
	d := sha256.Sum256([]byte(token))
	return d[:]
}

// withSession finds the signed-in user from the session cookie and makes
// sure the browser has a CSRF cookie.
func (h *Handler) withSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := &requestState{}
		if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
			s, u, err := h.store.FindSessionByTokenDigest(r.Context(), tokenDigest(c.Value))
			switch loremnews.ErrorCode(err) {
			case "":
				st.user, st.session = u, s
				if h.now().Sub(s.UpdatedAt) > touchEvery {
					if err := h.store.TouchSession(r.Context(), s); err != nil {
						h.log.Warn("touch session", "err", err)
					}
				}
			case loremnews.ENOTFOUND: // revoked or signed out elsewhere
				h.clearCookie(w, sessionCookie)
			default:
				h.renderError(w, r, err)
				return
			}
		}
		if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 {
			st.csrf = c.Value
		} else {
			st.csrf = randomToken()
			http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: st.csrf, Path: "/", HttpOnly: true,
				SameSite: http.SameSiteLaxMode, Secure: h.cfg.SecureCookies})
		}
		if c, err := r.Cookie(flashCookie); err == nil {
			if _, ok := flashes[c.Value]; ok {
				st.flash = c.Value
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), stateKey{}, st)))
	})
}

// page wraps a handler of a GET page.
func (h *Handler) page(next http.HandlerFunc) http.Handler { return h.withSession(next) }

// form wraps a handler of a form POST: the request must come from our own
// pages. Two checks: the browser's Sec-Fetch-Site/Origin headers must not
// say cross-origin (net/http's CrossOriginProtection), and the form's token
// must equal the browser's CSRF cookie (the double-submit pattern; the
// cookie is HttpOnly and SameSite=Lax, so another site can neither read it
// nor send it with a cross-site POST).
func (h *Handler) form(next http.HandlerFunc) http.Handler {
	return h.withSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.origin.Check(r); err != nil {
			h.renderError(w, r, forbidden("Cross-origin form submissions are not allowed."))
			return
		}
		if err := r.ParseForm(); err != nil {
			h.renderError(w, r, badForm(err))
			return
		}
		sent := r.PostForm.Get(csrfField)
		c, err := r.Cookie(csrfCookie)
		if err != nil || sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(c.Value)) != 1 {
			h.renderError(w, r, forbidden("The form's security token is missing or out of date. Go back, reload the page and try again."))
			return
		}
		next(w, r)
	}))
}

// signedIn sends visitors who are not signed in to the sign-in page, and
// back here afterwards.
func (h *Handler) signedIn(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if state(r).user == nil {
			back := r.URL.Path
			if r.Method != http.MethodGet {
				back = "/"
			}
			http.Redirect(w, r, "/signin?return_to="+url.QueryEscape(back), http.StatusSeeOther)
			return
		}
		next(w, r)
	}
}

// startSession signs the browser in as u.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, u *loremnews.User) error {
	token := randomToken()
	s := &loremnews.Session{
		UserID:      u.ID,
		TokenDigest: tokenDigest(token),
		UserAgent:   truncate(r.UserAgent(), 200),
		IPAddress:   clientIP(r),
	}
	if err := h.store.CreateSession(r.Context(), s); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", MaxAge: int(sessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.cfg.SecureCookies})
	return nil
}

func (h *Handler) clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.cfg.SecureCookies})
}

// clientIP is the peer's address. X-Forwarded-For is ignored: behind no
// proxy, anyone could forge it.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
