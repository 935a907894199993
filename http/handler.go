// Package http serves Lorem News: server-rendered pages and forms, the
// benchmarking endpoints and the health check. Handlers parse input, call
// the loremnews.Store, and choose a response; they know nothing of SQL.
package http

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/klauspost/compress/gzhttp"
	"github.com/loremnews/loremnews"
	"golang.org/x/crypto/bcrypt"
)

// Config holds the web layer's settings.
type Config struct {
	// Benchmarking turns on POST /benchmarking/{action}. They create and
	// delete data at random, so they are off (404) unless asked for.
	Benchmarking bool
	// SecureCookies marks cookies Secure; set it when served over HTTPS.
	SecureCookies bool
	// BcryptCost for new passwords; 0 means bcrypt.DefaultCost.
	BcryptCost int
	// MaxBodyBytes caps request bodies; 0 means 1 MiB.
	MaxBodyBytes int64
	// Logger receives errors and, at debug level, every request.
	Logger *slog.Logger
	// Observer, if set, is told about every answered request.
	Observer RequestObserver
	// Metrics, if set, is served at GET /metrics.
	Metrics http.Handler
	// Profiler, if set, is served at /debug/pprof/.
	Profiler http.Handler
	// SignInFailures is how many failed sign-ins an account may have, and
	// SignInFailuresPerIP how many one IP address may have, within
	// SignInWindow before further attempts get 429. Defaults: 5, 20, 15 min.
	SignInFailures      int
	SignInFailuresPerIP int
	SignInWindow        time.Duration
	// MaxInFlight caps the requests being worked on at once (others wait
	// their turn, first come first served); 0 means no cap.
	MaxInFlight int
	// Gzip compresses HTML, CSS and text responses for clients that accept
	// it (klauspost/compress's gzhttp). Off by default: see README.md,
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

	// failed sign-ins, by account and by IP address
	accountFailures *failureLimiter
	ipFailures      *failureLimiter

	slots chan struct{} // MaxInFlight tokens
}

// NewHandler builds the routes. The pages are compiled Go (views.templ), so
// a broken template fails the build, not a request.
func NewHandler(store loremnews.Store, cfg Config) (*Handler, error) {
	if store == nil {
		return nil, errors.New("http: nil store")
	}
	if cfg.BcryptCost == 0 {
		cfg.BcryptCost = bcrypt.DefaultCost
	}
	if cfg.BcryptCost < bcrypt.MinCost || cfg.BcryptCost > bcrypt.MaxCost {
		return nil, errors.New("http: bcrypt cost must be between 4 and 31")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SignInFailures <= 0 {
		cfg.SignInFailures = 5
	}
	if cfg.SignInFailuresPerIP <= 0 {
		cfg.SignInFailuresPerIP = 20
	}
	if cfg.SignInWindow <= 0 {
		cfg.SignInWindow = 15 * time.Minute
	}
	h := &Handler{
		store:  store,
		cfg:    cfg,
		log:    cfg.Logger,
		mux:    http.NewServeMux(),
		now:    time.Now,
		origin: http.NewCrossOriginProtection(),

		accountFailures: newFailureLimiter(cfg.SignInFailures, cfg.SignInWindow),
		ipFailures:      newFailureLimiter(cfg.SignInFailuresPerIP, cfg.SignInWindow),
	}
	if cfg.MaxInFlight > 0 {
		h.slots = make(chan struct{}, cfg.MaxInFlight)
	}
	h.routes()
	inner := h.securityHeaders(h.limitBody(h.mux))
	if cfg.Gzip {
		// Inside admit and instrument: compressing is part of the
		// request's work, and of its measured time. Each response carries
		// 1–32 bytes of padding derived from its content, so its
		// compressed size does not reveal how well an attacker's text
		// compresses against the page's secrets (BREACH): the CSRF token
		// sits in every signed-in page's forms.
		gz, err := gzhttp.NewWrapper(
			gzhttp.ContentTypes([]string{"text/html", "text/css", "text/plain"}),
			gzhttp.SuffixETag("-gzip"),
			gzhttp.RandomJitter(32, 0, false),
		)
		if err != nil {
			return nil, fmt.Errorf("http: gzip: %w", err)
		}
		inner = gz(inner)
	}
	h.root = h.recoverPanics(h.instrument(h.admit(inner)))
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.root.ServeHTTP(w, r) }
