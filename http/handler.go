// Package http serves Lorem News: server-rendered pages and forms, the
// benchmarking endpoints and the health check. Handlers parse input, call
// the loremnews.Store, and choose a response; they know nothing of SQL.
package http

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzhttp"
	"github.com/loremnews/loremnews"
	"golang.org/x/crypto/bcrypt"
)

// Config holds the web layer's settings.
type Config struct {
	// Benchmark, if set, turns on POST /benchmarking/{action}, run by it.
	// The actions create and delete data at random, so they are off (404)
	// unless asked for.
	Benchmark loremnews.BenchmarkStore
	// SecureCookies marks cookies Secure; set it when served over HTTPS.
	SecureCookies bool
	// BcryptCost for new passwords, and for stored ones made at another
	// cost when their owner next signs in; 0 means bcrypt.DefaultCost.
	BcryptCost int
	// MaxBodyBytes caps request bodies; 0 means 1 MiB.
	MaxBodyBytes int64
	// Logger receives errors and, at debug level, every request.
	Logger *slog.Logger
	// Observer, if set, is told about every answered request.
	Observer RequestObserver
	// Sign-in limits, each over SignInWindow (default 15 min); past one,
	// attempts get 429 with Retry-After. SignInFailures is the wrong
	// passwords one address may try on one account (default 5);
	// SignInFailuresPerIP the failed sign-ins from one address, any
	// account (default 20); SignInFailuresPerAccount the failed sign-ins on
	// one account from browsers that have not signed in to it before
	// (default 20): a browser holding the account's device cookie is not
	// held back by others' failures. SignInFailuresPerDevice is the wrong
	// passwords a device cookie may try (default 5, sign-ins and current
	// passwords together): past it, that browser is a stranger again, held
	// to the account's limit, so a stolen cookie buys no more than that
	// many guesses. Addresses are IPv4 addresses or IPv6
	// /64s. Every limit (here and below) is counted in the database,
	// shared by every process serving it (all workers of serve --workers
	// N) and kept across restarts and reloads.
	SignInFailures           int
	SignInFailuresPerIP      int
	SignInFailuresPerAccount int
	SignInFailuresPerDevice  int
	SignInWindow             time.Duration
	// PasswordChecksPerAccount and PasswordChecksPerIP bound the password
	// checks (bcrypt, tens of milliseconds of CPU each) per SignInWindow,
	// whatever their outcome: sign-ins, right or wrong, and current
	// passwords (defaults: 30 for one account from browsers it has not
	// signed in with, 100 from one address). Failures have their own,
	// tighter limits above; these stop correct or unknown-name sign-ins
	// from costing the server unbounded CPU.
	PasswordChecksPerAccount int
	PasswordChecksPerIP      int
	// SignUpsPerIP is how many accounts one address may create per
	// SignUpWindow (defaults: 10 per hour).
	SignUpsPerIP int
	SignUpWindow time.Duration
	// PostsPerAccount and CommentsPerAccount are how many posts and
	// comments one account may create per ContentWindow (defaults: 10 and
	// 60 an hour), so one account cannot flood the site; past that it gets
	// 429 with the minutes to wait. The benchmarking endpoints have no
	// account and are not limited.
	PostsPerAccount    int
	CommentsPerAccount int
	// EditsPerAccount is how many times one account may save an edit of
	// its posts, its comments or its profile per ContentWindow (default
	// 30), all counted together.
	EditsPerAccount int
	ContentWindow   time.Duration
	// MaxSessionsPerAccount is how many browsers may be signed in to one
	// account at once (default 50); a sign-in past it signs out the
	// browser that signed in longest ago.
	MaxSessionsPerAccount int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For is
	// believed; from any other peer the header is ignored. A request from
	// one never reaches the loopback-only routes.
	TrustedProxies []netip.Prefix
	// AllowedHosts are the names (host names or IP addresses, without a
	// port) the site is served as; a request with any other Host gets 400
	// (see allowHosts). Empty means LoopbackHosts.
	AllowedHosts []string
	// SessionIdle and SessionLifetime bound a session on the server:
	// unused for SessionIdle, or older than SessionLifetime, it is signed
	// out (defaults: 14 and 30 days).
	SessionIdle     time.Duration
	SessionLifetime time.Duration
	// SecretKey signs CSRF tokens and device cookies. Every process
	// serving one site needs the same key; empty means a random key per
	// process, so a restart makes open forms ask for a reload and
	// forgets which browsers signed in before.
	SecretKey []byte
	// MaxInFlight caps the requests being worked on at once (others wait
	// their turn, first come first served), from their body read to their
	// response's first byte; 0 means no cap.
	MaxInFlight int
	// Gzip compresses HTML, CSS and text responses for clients that accept
	// it (klauspost/compress's gzhttp). Off by default: see docs/load.md,
	// "Compression", for its cost on the benchmark and why.
	Gzip bool
}

// Handler is the whole site as one http.Handler.
type Handler struct {
	store  loremnews.Store
	cfg    Config
	log    *slog.Logger
	mux    *http.ServeMux
	root   http.Handler
	now    func() time.Time
	origin *http.CrossOriginProtection

	// sign-in attempts (see Config), and sign-ups by address; the
	// account* limits are kept in the database, the addr* ones in memory
	// (see NewHandler)
	accountAddrFailures limiter
	addrFailures        limiter
	accountFailures     limiter
	deviceFailures      limiter // wrong passwords from one device cookie
	accountChecks       limiter // password checks, whatever the outcome
	addrChecks          limiter
	addrSignUps         limiter
	// posts and comments created, and post edits saved, by account
	accountPosts    limiter
	accountComments limiter
	accountEdits    limiter

	// dummyDigest is compared against when a screen name does not exist,
	// at the configured cost, so both answers take as long; dummyTook is
	// how long the last such check took (nanoseconds), which the check of
	// a digest made at a lower cost is made to last (checkDigest).
	dummyDigest   []byte
	dummyTook     atomic.Int64
	sessionLimits loremnews.SessionLimits
	csrfKey       []byte
	deviceKey     []byte

	slots chan struct{} // MaxInFlight tokens
}

// NewHandler builds the routes. The pages are compiled Go (views.templ), so
// a broken template fails the build, not a request.
func NewHandler(store loremnews.Store, cfg Config) (*Handler, error) {
	if store == nil {
		return nil, errors.New("http: nil store")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	key := cfg.SecretKey
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key) // never fails
	} else if len(key) < 32 {
		return nil, errors.New("http: the secret key must be at least 32 bytes")
	}
	dummy, err := bcrypt.GenerateFromPassword([]byte("not a real password, only for timing"), cfg.BcryptCost)
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	h := &Handler{
		store:  store,
		cfg:    cfg,
		log:    cfg.Logger,
		mux:    http.NewServeMux(),
		now:    time.Now,
		origin: http.NewCrossOriginProtection(),

		// Every limit is kept in the database: every process serving it
		// shares them (with --workers N, an address gets its documented
		// allowance, not N times it), and a restart, a reload or a deploy
		// does not reset them, so no one gets a fresh allowance of
		// guesses at a password, of accounts, or of posts, by waiting for
		// one. A key the database refused is refused in memory until its
		// window ends (dbLimiter), so a flood costs no write past the
		// limit; the rows of an address's counts go when their window ends,
		// and each is paid for with a password check or a sign-up.
		accountAddrFailures: newDBLimiter(store, "sign-in failures per account and address", cfg.SignInFailures, cfg.SignInWindow, cfg.Logger),
		addrFailures:        newDBLimiter(store, "failed sign-ins per address", cfg.SignInFailuresPerIP, cfg.SignInWindow, cfg.Logger),
		accountFailures:     newDBLimiter(store, "sign-in failures per account", cfg.SignInFailuresPerAccount, cfg.SignInWindow, cfg.Logger),
		deviceFailures:      newDBLimiter(store, "wrong passwords per device cookie", cfg.SignInFailuresPerDevice, cfg.SignInWindow, cfg.Logger),
		accountChecks:       newDBLimiter(store, "password checks per account", cfg.PasswordChecksPerAccount, cfg.SignInWindow, cfg.Logger),
		addrChecks:          newDBLimiter(store, "password checks per address", cfg.PasswordChecksPerIP, cfg.SignInWindow, cfg.Logger),
		addrSignUps:         newDBLimiter(store, "sign-ups per address", cfg.SignUpsPerIP, cfg.SignUpWindow, cfg.Logger),
		accountPosts:        newDBLimiter(store, "posts per account", cfg.PostsPerAccount, cfg.ContentWindow, cfg.Logger),
		accountComments:     newDBLimiter(store, "comments per account", cfg.CommentsPerAccount, cfg.ContentWindow, cfg.Logger),
		accountEdits:        newDBLimiter(store, "post edits per account", cfg.EditsPerAccount, cfg.ContentWindow, cfg.Logger),

		dummyDigest:   dummy,
		sessionLimits: loremnews.SessionLimits{Idle: cfg.SessionIdle, Lifetime: cfg.SessionLifetime},
		csrfKey:       subkey(key, "csrf"),
		deviceKey:     subkey(key, "device"),
	}
	h.checkDummy("") // times one check, for checkDigest
	if cfg.MaxInFlight > 0 {
		h.slots = make(chan struct{}, cfg.MaxInFlight)
	}
	h.routes()
	inner := h.securityHeaders(h.limitBody(h.mux))
	if cfg.Gzip {
		// Inside admit and instrument: compressing is part of the
		// request's work, and of its measured time.
		if inner, err = gzipped(inner); err != nil {
			return nil, err
		}
	}
	h.root = h.recoverPanics(h.instrument(h.allowHosts(h.admit(inner))))
	return h, nil
}

// gzipped compresses next's pages, style sheets and plain text. Each
// response carries 1–32 bytes of padding derived from its content, so its
// compressed size does not reveal how well an attacker's text compresses
// against the page's secrets (BREACH): the CSRF token sits in every
// signed-in page's forms.
func gzipped(next http.Handler) (http.Handler, error) {
	gz, err := gzhttp.NewWrapper(
		gzhttp.ContentTypes([]string{"text/html", "text/css", "text/plain"}),
		gzhttp.SuffixETag("-gzip"),
		gzhttp.RandomJitter(32, 0, false),
	)
	if err != nil {
		return nil, fmt.Errorf("http: gzip: %w", err)
	}
	return gz(next), nil
}

// withDefaults returns cfg with each unset limit at its default, or an
// error naming a setting out of range.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.BcryptCost == 0 {
		cfg.BcryptCost = bcrypt.DefaultCost
	}
	if cfg.BcryptCost < bcrypt.MinCost || cfg.BcryptCost > bcrypt.MaxCost {
		return cfg, errors.New("http: bcrypt cost must be between 4 and 31")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.AllowedHosts) == 0 {
		cfg.AllowedHosts = LoopbackHosts
	}
	orDefault(&cfg.MaxBodyBytes, 1<<20)
	orDefault(&cfg.SignInFailures, 5)
	orDefault(&cfg.SignInFailuresPerIP, 20)
	orDefault(&cfg.SignInFailuresPerAccount, 20)
	orDefault(&cfg.SignInFailuresPerDevice, 5)
	orDefault(&cfg.PasswordChecksPerAccount, 30)
	orDefault(&cfg.PasswordChecksPerIP, 100)
	orDefault(&cfg.SignInWindow, 15*time.Minute)
	orDefault(&cfg.SignUpsPerIP, 10)
	orDefault(&cfg.SignUpWindow, time.Hour)
	orDefault(&cfg.PostsPerAccount, 10)
	orDefault(&cfg.CommentsPerAccount, 60)
	orDefault(&cfg.EditsPerAccount, 30)
	orDefault(&cfg.ContentWindow, time.Hour)
	orDefault(&cfg.MaxSessionsPerAccount, 50)
	orDefault(&cfg.SessionIdle, 14*24*time.Hour)
	orDefault(&cfg.SessionLifetime, 30*24*time.Hour)
	return cfg, nil
}

// orDefault sets *v to d if it is zero or less.
func orDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// subkey derives a key for one use from the secret key, so a value signed
// for one purpose is never valid for another.
func subkey(key []byte, purpose string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// SessionLimits are the limits the handler signs sessions out by; serve
// purges the rows past them.
func (h *Handler) SessionLimits() loremnews.SessionLimits { return h.sessionLimits }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.root.ServeHTTP(w, r) }
