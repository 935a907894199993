package http

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loremnews/loremnews"
)

const (
	sessionCookie = "lorem_session"
	csrfCookie    = "lorem_csrf"
	flashCookie   = "lorem_flash"
	deviceCookie  = "lorem_device"
	csrfField     = "csrf_token"
	// touchEvery limits last-activity writes to one per session per
	// minute, which is also how precisely the idle limit is kept.
	touchEvery = time.Minute
	// deviceCookieLifetime is how long a browser that signed in is
	// remembered for the sign-in limits.
	deviceCookieLifetime = 365 * 24 * time.Hour
)

// requestState is what the middleware learns about a request.
type requestState struct {
	user    *loremnews.User
	session *loremnews.Session
	// csrf is the token this browser's forms must carry, made from
	// csrfKind and csrfBinding by csrfToken the first time a page or a
	// form's check needs it: most pages a visitor reads carry no form.
	csrf        string
	csrfKind    string
	csrfBinding []byte
	csrfKey     []byte
	flash       string
	// sessionEnded: the browser sent a session cookie the server no
	// longer accepts (expired, revoked, signed out elsewhere).
	sessionEnded bool

	flashCookieName string
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
	"post-created":    "Your post was published.",
	"post-saved":      "Your changes to the post were saved.",
	"post-deleted":    "The post was deleted.",
	"post-gone":       "That post has been deleted.",
	"comment-created": "Your comment was added.",
	"comment-saved":   "Your changes to the comment were saved.",
	"comment-deleted": "The comment was deleted.",
	"profile-saved":   "Your profile was saved.",
	"session-revoked": "That browser was signed out.",
	"account-deleted": "Your account was deleted.",
	"session-ended":   "Your session has ended. Please sign in again.",
}

func (st *requestState) takeFlash(w http.ResponseWriter) string {
	if st.flash == "" {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: st.flashCookieName, Path: "/", MaxAge: -1, Secure: strings.HasPrefix(st.flashCookieName, hostPrefix)})
	msg := flashes[st.flash]
	st.flash = ""
	return msg
}

func (h *Handler) setFlash(w http.ResponseWriter, key string) {
	h.setCookie(w, flashCookie, key, 0)
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

// csrfToken is the request's CSRF token (see requestState.csrf).
func (st *requestState) csrfToken() string {
	if st.csrf == "" && st.csrfKey != nil {
		st.csrf = csrfToken(st.csrfKey, st.csrfKind, st.csrfBinding)
	}
	return st.csrf
}

// bindCSRF binds the request's CSRF token to binding, of kind ("session"
// or "visitor"), signed with h's key; csrfToken makes it when it is needed.
func (h *Handler) bindCSRF(st *requestState, kind string, binding []byte) {
	st.csrf, st.csrfKind, st.csrfBinding, st.csrfKey = "", kind, binding, h.csrfKey
}

// csrfToken is an HMAC, under the server's key, of what the browser's
// forms are bound to: its session (so a token works only for the session
// it was issued to, and signing in issues a new one) or, for visitors, a
// random cookie.
func csrfToken(key []byte, kind string, binding []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write(binding)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// startSession signs the browser in as u. The new session has a new token,
// so the browser's CSRF token changes with it.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, u *loremnews.User) error {
	s, token := h.newSession(r, u.ID)
	// The browser is one the account has signed in with (see
	// newDeviceCookie); the session keeps which cookie, so revoking it
	// forgets the cookie too.
	device := h.newDeviceCookie(u)
	s.Device = deviceDigest(device)
	if err := h.store.CreateSession(r.Context(), s); err != nil {
		return err
	}
	h.setSessionCookie(w, token)
	h.setCookie(w, deviceCookie, device, deviceCookieLifetime)
	h.signOutOldest(r.Context(), u.ID)
	return nil
}

// signOutOldest keeps at most MaxSessionsPerAccount browsers signed in to
// the account, signing out those that signed in longest ago, so sign-ins
// in a loop cannot grow the sessions table (and the owner's list of
// browsers) without end. A failure is logged: the sign-in has happened.
func (h *Handler) signOutOldest(ctx context.Context, userID int64) {
	sessions, err := h.store.UserSessions(ctx, userID, h.sessionLimits)
	if err != nil || len(sessions) <= h.cfg.MaxSessionsPerAccount {
		if err != nil {
			h.log.Warn("list sessions to keep their number", "user", userID, "err", err)
		}
		return
	}
	slices.SortFunc(sessions, func(a, b *loremnews.Session) int { return cmp.Compare(a.ID, b.ID) }) // ids grow with time
	for _, s := range sessions[:len(sessions)-h.cfg.MaxSessionsPerAccount] {
		if err := h.store.DeleteSession(ctx, userID, s.ID); err != nil && loremnews.ErrorCode(err) != loremnews.ENOTFOUND {
			h.log.Warn("sign out the oldest session", "session", s.ID, "err", err)
		}
	}
}

// newSession is a session for this browser, not yet stored, and the token
// its cookie will carry.
func (h *Handler) newSession(r *http.Request, userID int64) (*loremnews.Session, string) {
	token := randomToken()
	return &loremnews.Session{
		UserID:      userID,
		TokenDigest: tokenDigest(token),
		UserAgent:   truncate(r.UserAgent(), 200),
		IPAddress:   h.clientAddr(r).String(),
	}, token
}

// setSessionCookie gives the browser the token of its stored session.
func (h *Handler) setSessionCookie(w http.ResponseWriter, token string) {
	h.setCookie(w, sessionCookie, token, h.sessionLimits.Lifetime)
}

// hostPrefix makes a browser accept a cookie only if it is Secure, for
// path / and without a Domain: no subdomain or plain-HTTP page can set or
// overwrite it. Used with SecureCookies.
const hostPrefix = "__Host-"

// cookieName is the name a cookie goes by: with the __Host- prefix when
// cookies are Secure.
func (h *Handler) cookieName(base string) string {
	if h.cfg.SecureCookies {
		return hostPrefix + base
	}
	return base
}

// setCookie sets one of our cookies: HttpOnly, SameSite=Lax, path /,
// Secure with SecureCookies; a session cookie when maxAge is 0.
func (h *Handler) setCookie(w http.ResponseWriter, base, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: h.cookieName(base), Value: value, Path: "/", MaxAge: int(maxAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.cfg.SecureCookies})
}

func (h *Handler) clearCookie(w http.ResponseWriter, base string) {
	http.SetCookie(w, &http.Cookie{Name: h.cookieName(base), Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: h.cfg.SecureCookies})
}

// newDeviceCookie is the value of a cookie that remembers that this
// browser signed in to u's account:
// the account's id and the time, signed with the server's key over those
// and the account's stored password digest. The id, not the screen name,
// so whoever takes the name after a rename or a deletion is not known to
// this browser; the digest, so a new password forgets every browser.
func (h *Handler) newDeviceCookie(u *loremnews.User) string {
	// A random nonce makes each browser's cookie its own, even two set for
	// one account in the same second: each has its own limit of wrong
	// passwords (deviceFailures).
	nonce := make([]byte, 9)
	rand.Read(nonce)
	id := strconv.FormatInt(u.ID, 10)
	issued := strconv.FormatInt(h.now().Unix(), 10) + "." + base64.RawURLEncoding.EncodeToString(nonce)
	return id + "." + issued + "." + h.deviceMAC(id, issued, u.PasswordDigest)
}

// deviceDigest is what the database keeps of a device cookie: its SHA-256.
func deviceDigest(value string) []byte {
	sum := sha256.Sum256([]byte(value))
	return sum[:]
}

// trustedDevice takes one attempt from the device cookie's own limit when
// the browser holds a valid one for u (knownDevice) that has attempts left,
// and says whether the browser is then known: a device past its limit is a
// stranger again. release gives the attempt back (after the right
// password, or when the request is refused for another reason); it is a
// no-op when nothing was taken.
func (h *Handler) trustedDevice(r *http.Request, u *loremnews.User) (known bool, release func(), err error) {
	release = func() {}
	if u == nil {
		return false, release, nil
	}
	if known, err := h.knownDevice(r, u); err != nil || !known {
		return false, release, err
	}
	c, _ := r.Cookie(h.cookieName(deviceCookie))
	rel, refusedBy, _, err := reserveAll(r.Context(), reservation{l: h.deviceFailures, key: keyOf("device", c.Value)})
	if err != nil {
		return false, release, err
	}
	if refusedBy != nil {
		return false, release, nil
	}
	return true, rel, nil
}

// knownDevice reports whether the browser holds a valid device cookie for
// u's account as it is now: its id, and the password it had when the
// cookie was set; and whether the session it was set with has not been
// revoked since.
func (h *Handler) knownDevice(r *http.Request, u *loremnews.User) (bool, error) {
	c, err := r.Cookie(h.cookieName(deviceCookie))
	if err != nil {
		return false, nil
	}
	// id.issued.nonce.mac; a cookie set before nonces, id.issued.mac,
	// stays good until it expires.
	id, rest, _ := strings.Cut(c.Value, ".")
	cut := strings.LastIndexByte(rest, '.')
	if cut < 0 {
		return false, nil
	}
	issued, mac := rest[:cut], rest[cut+1:]
	if id != strconv.FormatInt(u.ID, 10) || subtle.ConstantTimeCompare([]byte(mac), []byte(h.deviceMAC(id, issued, u.PasswordDigest))) != 1 {
		return false, nil
	}
	secs, _, _ := strings.Cut(issued, ".")
	sec, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || h.now().Sub(time.Unix(sec, 0)) > deviceCookieLifetime {
		return false, nil
	}
	revoked, err := h.store.DeviceRevoked(r.Context(), u.ID, deviceDigest(c.Value))
	return err == nil && !revoked, err
}

// deviceMAC signs a device cookie's account id and time of issue (with its
// nonce), bound to the account's password digest (never sent: the cookie
// holds only the HMAC).
func (h *Handler) deviceMAC(id, issued, passwordDigest string) string {
	m := hmac.New(sha256.New, h.deviceKey)
	m.Write([]byte(id + "." + issued + "."))
	m.Write([]byte(passwordDigest))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// truncate cuts s to its first n characters (what the field limits
// count), dropping bytes that are not UTF-8.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "")
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}
