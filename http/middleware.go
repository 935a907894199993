package http

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/loremnews/loremnews"
)

// securityHeaders sets the headers every response carries: a Content
// Security Policy that allows only our own stylesheet (no inline script or
// style), no framing, no MIME sniffing, and no full URLs in Referer.
// connect-src 'self' lets audit tools that fetch from inside the page (as
// Lighthouse reads /robots.txt) do so; no script of the page can run to use it.
func (h *Handler) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		// The values are shared by every response, as Header.Set would
		// store them but for a slice of its own each time: a handler may
		// replace or add to a header (an append to a slice at its capacity
		// copies it), never write into the shared one.
		hd["Content-Security-Policy"] = headerCSP
		hd["X-Content-Type-Options"] = headerNosniff
		hd["X-Frame-Options"] = headerDeny
		hd["Referrer-Policy"] = headerSameOrigin
		if h.cfg.SecureCookies {
			// Served over HTTPS (what --secure-cookies means): browsers
			// that have seen the site once never try plain HTTP again for
			// two years. Subdomains are left to their own servers.
			hd["Strict-Transport-Security"] = headerHSTS
		}
		next.ServeHTTP(w, r)
	})
}

// The security headers' values (securityHeaders), each a slice at its
// capacity.
var (
	headerCSP        = oneValue("default-src 'none'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	headerNosniff    = oneValue("nosniff")
	headerDeny       = oneValue("DENY")
	headerSameOrigin = oneValue("same-origin")
	headerHSTS       = oneValue("max-age=63072000")
)

func oneValue(v string) []string { return []string{v}[:1:1] }

// admit lets at most MaxInFlight requests be worked on at once; the rest
// wait, in arrival order (a goroutine blocked sending on a channel is queued
// FIFO by the runtime), or leave when their client does. On a machine with
// few cores, running every request at once shares the CPU among them all,
// so a heavy page takes many times its own time to finish, and the one
// writer goroutine, which every write and touch waits for, waits behind
// them all for a core; taking turns bounds that. /up and /metrics bypass
// the queue, so probes see a busy server as alive.
//
// A slot is held only while the server works, never while it waits for a
// client: a request's body (up to MaxBodyBytes) is read before it takes
// one, and the slot is given back as the response's first byte is written
// (every page is rendered whole before that), not once a slow client has
// read it all. So clients that send or read slowly cannot fill the slots.
func (h *Handler) admit(next http.Handler) http.Handler {
	if h.slots == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/up" || r.URL.Path == "/metrics" {
			next.ServeHTTP(w, r)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = readAhead(w, r.Body, h.cfg.MaxBodyBytes)
		}
		select {
		case h.slots <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		aw := &admittedWriter{ResponseWriter: w, slots: h.slots}
		defer aw.leave()
		next.ServeHTTP(aw, r)
	})
}

// readAhead reads body whole, up to limit bytes (the limit limitBody sets
// again for the handler), and returns a body that gives what was read and
// then the error reading stopped at, if any (too large, too slow): the
// handler answers those as it would have.
func readAhead(w http.ResponseWriter, body io.ReadCloser, limit int64) io.ReadCloser {
	data, err := io.ReadAll(http.MaxBytesReader(w, body, limit))
	body.Close()
	return &readBody{data: bytes.NewReader(data), err: err}
}

// readBody is a body read ahead (readAhead). It has only Read, so a
// reader of it (io.Copy too) meets its error after the data.
type readBody struct {
	data *bytes.Reader
	err  error // what the read stopped at, after the data
}

func (b *readBody) Read(p []byte) (int, error) {
	n, err := b.data.Read(p)
	if err == io.EOF && b.err != nil {
		err = b.err
	}
	return n, err
}

func (b *readBody) Close() error { return nil }

// admittedWriter gives its request's slot back at the response's first
// byte (or header), or when the handler returns without writing.
type admittedWriter struct {
	http.ResponseWriter
	slots chan struct{}
	left  bool
}

func (w *admittedWriter) leave() {
	if !w.left {
		w.left = true
		<-w.slots
	}
}

func (w *admittedWriter) WriteHeader(code int) {
	if code >= 200 { // not a 1xx: the response starts
		w.leave()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *admittedWriter) Write(p []byte) (int, error) {
	w.leave()
	return w.ResponseWriter.Write(p)
}

// Flush, as the writer it wraps does (http.ResponseController finds it
// through Unwrap too).
func (w *admittedWriter) Flush() {
	w.leave()
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap is for http.ResponseController.
func (w *admittedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// limitBody caps request bodies; reading past the cap fails, and the form
// parser's error becomes a 413.
func (h *Handler) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// errSlowBody is a request body that did not arrive within the server's
// read timeout: the client's doing, answered 408.
var errSlowBody = errors.New("request body not received in time")

// badForm turns a form parsing error into one renderError answers well: a
// body over the limit stays a *http.MaxBytesError (413), a body cut off by
// the read timeout is errSlowBody (408), anything else is a 422.
func badForm(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: %w", errSlowBody, err)
	}
	return loremnews.Errorf(loremnews.EINVALID, "The form could not be read: %s", err)
}

// statusRecorder remembers the status a handler wrote, for the request log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// RequestObserver is told about every answered request; metrics.Metrics
// implements it.
type RequestObserver interface {
	ObserveRequest(route string, status int, d time.Duration)
}

// routeLabel lets a handler name its route more precisely than its mux
// pattern (the benchmarking mixes name the action they ran).
type routeLabel struct{ name string }

type routeLabelKey struct{}

func setRouteLabel(r *http.Request, name string) {
	if l, ok := r.Context().Value(routeLabelKey{}).(*routeLabel); ok {
		l.name = name
	}
}

// instrument reports each request to the observer and, at debug level,
// logs it. With neither, it costs nothing.
func (h *Handler) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		debug := h.log.Enabled(r.Context(), slog.LevelDebug)
		if h.cfg.Observer == nil && !debug {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		label := &routeLabel{}
		r = r.WithContext(context.WithValue(r.Context(), routeLabelKey{}, label))
		next.ServeHTTP(rec, r)
		d := time.Since(start)
		if label.name == "" {
			label.name = r.Pattern // set by the mux on this request
		}
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		if h.cfg.Observer != nil {
			h.cfg.Observer.ObserveRequest(label.name, rec.status, d)
		}
		if debug {
			h.log.Debug("request", "method", r.Method, "path", r.URL.Path, "route", label.name, "status", rec.status, "duration", d,
				"client", h.clientAddr(r).String())
		}
	})
}

// recoverPanics turns a panic in a handler into a logged 500, never a
// dropped connection.
func (h *Handler) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				h.log.Error("panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
				http.Error(w, "Internal error.", http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// sameOrigin refuses requests a browser marks as cross-origin.
func (h *Handler) sameOrigin(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.origin.Check(r); err != nil {
			h.renderError(w, r, forbidden("Cross-origin requests are not allowed."))
			return
		}
		next(w, r)
	})
}

// withSession finds the signed-in user from the session cookie (a session
// past its idle limit or lifetime is not found) and works out the CSRF
// token this browser's forms must carry.
func (h *Handler) withSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := &requestState{flashCookieName: h.cookieName(flashCookie)}
		if c, err := r.Cookie(h.cookieName(sessionCookie)); err == nil && c.Value != "" {
			s, u, err := h.store.FindSessionByTokenDigest(r.Context(), tokenDigest(c.Value), h.sessionLimits)
			switch loremnews.ErrorCode(err) {
			case "":
				st.user, st.session = u, s
				if h.now().Sub(s.UpdatedAt) > touchEvery {
					if err := h.store.TouchSession(r.Context(), s); err != nil {
						h.log.Warn("touch session", "err", err)
					}
				}
			case loremnews.ENOTFOUND: // revoked, expired, or signed out elsewhere
				h.clearCookie(w, sessionCookie)
				st.sessionEnded = true
			default:
				h.renderError(w, r, err)
				return
			}
		}
		if st.session != nil {
			h.bindCSRF(st, "session", st.session.TokenDigest)
		} else {
			// A visitor's forms (sign in, sign up) are bound to a random
			// cookie of their own, so another site cannot sign a browser in
			// to the attacker's account.
			id := ""
			if c, err := r.Cookie(h.cookieName(csrfCookie)); err == nil && len(c.Value) >= 32 {
				id = c.Value
			} else {
				id = randomToken()
				h.setCookie(w, csrfCookie, id, 0)
			}
			h.bindCSRF(st, "visitor", []byte(id))
		}
		if c, err := r.Cookie(st.flashCookieName); err == nil {
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
// must be the one withSession worked out for this browser's session (or,
// for visitors, its CSRF cookie): a token from another session, or from
// before signing in, is refused.
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
		if st := state(r); st.sessionEnded && sent != "" {
			// The form was loaded in a session that has since ended: its
			// token is void, and nothing is done. Say what happened.
			h.setFlash(w, "session-ended")
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
			return
		}
		if sent == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(state(r).csrfToken())) != 1 {
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
