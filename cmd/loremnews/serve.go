package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/loremnews/loremnews"
	lnhttp "github.com/loremnews/loremnews/http"
	"github.com/loremnews/loremnews/metrics"
	"golang.org/x/crypto/bcrypt"
)

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		d                dbFlags
		s                seedFlags
		addr             string
		benchmarking     bool
		allowRemoteBench bool
		seedIfEmpty      bool
		secureCookies    bool
		bcryptCost       int
		logLevel         string
		withMetrics      bool
		metricsAddr      string
		withPprof        bool
		trustedProxies   string
		sessionIdle      time.Duration
		sessionLifetime  time.Duration
		secretKey        string
		gcPercent        int
		maxInFlight      int
		gzip             bool
		shutdownTimeout  time.Duration
		fs               = newFlagSet("serve", "loremnews serve [--addr HOST:PORT] [--db PATH|postgres://…] [--profile NAME] [--benchmarking] [--seed-if-empty]",
			"Serve Lorem News. The database is created and migrated on start.", stdout)
	)
	d.register(fs)
	s.register(fs)
	fs.StringVar(&addr, "addr", "127.0.0.1:3000", "`HOST:PORT` address to listen on (port 0 picks a free port)")
	fs.twin("addr", "LOREM_ADDR")
	fs.BoolVar(&benchmarking, "benchmarking", false, "enable POST /benchmarking/{action} (creates and deletes data at random: never on a real site)")
	fs.twin("benchmarking", "LOREM_BENCHMARKING")
	fs.BoolVar(&allowRemoteBench, "allow-remote-benchmarking", false, "allow --benchmarking on an address other than loopback")
	fs.twin("allow-remote-benchmarking", "LOREM_ALLOW_REMOTE_BENCHMARKING")
	fs.BoolVar(&seedIfEmpty, "seed-if-empty", false, "load the demo data set (see seed --help) when the database has no users")
	fs.twin("seed-if-empty", "LOREM_SEED_IF_EMPTY")
	fs.BoolVar(&secureCookies, "secure-cookies", false, "mark cookies Secure (set when served over HTTPS, e.g. behind a TLS proxy)")
	fs.twin("secure-cookies", "LOREM_SECURE_COOKIES")
	fs.IntVar(&bcryptCost, "bcrypt-cost", bcrypt.DefaultCost, "bcrypt cost for new passwords (4–31)")
	fs.twin("bcrypt-cost", "LOREM_BCRYPT_COST")
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug (every request), info, warn, error")
	fs.twin("log-level", "LOREM_LOG_LEVEL")
	fs.BoolVar(&withMetrics, "metrics", true, "serve Prometheus metrics (request latency by route, writer waits, pool use) at GET /metrics,\n      to this machine only: loopback clients that came without a proxy (see --metrics-addr)")
	fs.twin("metrics", "LOREM_METRICS")
	fs.StringVar(&metricsAddr, "metrics-addr", "", "serve /metrics on this address instead, alone (e.g. 127.0.0.1:9100, or a private interface for a scraper elsewhere)")
	fs.twin("metrics-addr", "LOREM_METRICS_ADDR")
	fs.StringVar(&trustedProxies, "trusted-proxies", "", "reverse proxies whose X-Forwarded-For is believed, as CIDR prefixes or addresses (127.0.0.1,10.0.0.0/8);\n      from other peers the header is ignored. Sign-in limits count by the client address this gives")
	fs.twin("trusted-proxies", "LOREM_TRUSTED_PROXIES")
	fs.DurationVar(&sessionIdle, "session-idle", 14*24*time.Hour, "a session unused this long is signed out on the server")
	fs.twin("session-idle", "LOREM_SESSION_IDLE")
	fs.DurationVar(&sessionLifetime, "session-lifetime", 30*24*time.Hour, "a session is signed out this long after sign-in, however active")
	fs.twin("session-lifetime", "LOREM_SESSION_LIFETIME")
	fs.StringVar(&secretKey, "secret-key", "", "key (32+ characters) that signs CSRF tokens and device cookies; every process of one site needs the same.\n      Empty: random per process, so a restart makes open forms ask for a reload. Prefer the environment variable")
	fs.twin("secret-key", "LOREM_SECRET_KEY")
	fs.BoolVar(&withPprof, "pprof", false, "serve Go's profiler at /debug/pprof/ (loopback addresses only)")
	fs.twin("pprof", "LOREM_PPROF")
	fs.IntVar(&gcPercent, "gc-percent", 400, "Go GC target (GOGC): heap growth between collections, in %; the server's live heap is small, so collecting 4× less often buys CPU for requests")
	fs.twin("gc-percent", "LOREM_GC_PERCENT")
	fs.IntVar(&maxInFlight, "max-in-flight", 0, "requests worked on at once, the rest wait their turn (0: no limit)")
	fs.twin("max-in-flight", "LOREM_MAX_IN_FLIGHT")
	fs.BoolVar(&gzip, "gzip", false, "gzip HTML, CSS and text for clients that accept it (off: leave it to a reverse proxy; see README, Compression)")
	fs.twin("gzip", "LOREM_GZIP")
	fs.DurationVar(&shutdownTimeout, "shutdown-timeout", 10*time.Second, "on SIGTERM/SIGINT, how long requests in flight may take to finish")
	fs.twin("shutdown-timeout", "LOREM_SHUTDOWN_TIMEOUT")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := d.validate(fs); err != nil {
		return err
	}
	if err := s.validate(fs); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		return &usageError{msg: fmt.Sprintf("invalid --log-level %q (want debug, info, warn or error)", logLevel), cmd: fs.Name()}
	}
	if bcryptCost < bcrypt.MinCost || bcryptCost > bcrypt.MaxCost {
		return &usageError{msg: fmt.Sprintf("--bcrypt-cost must be between %d and %d", bcrypt.MinCost, bcrypt.MaxCost), cmd: fs.Name()}
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return &usageError{msg: fmt.Sprintf("invalid --addr %q: %v", addr, err), cmd: fs.Name()}
	}
	if benchmarking && !allowRemoteBench && !isLoopback(host) {
		return &usageError{msg: fmt.Sprintf("--benchmarking on %s would let anyone who can reach it delete data; bind to 127.0.0.1 or add --allow-remote-benchmarking", addr), cmd: fs.Name()}
	}
	if withPprof && !isLoopback(host) {
		return &usageError{msg: "--pprof is only allowed on a loopback --addr", cmd: fs.Name()}
	}
	proxies, err := lnhttp.ParseTrustedProxies(trustedProxies)
	if err != nil {
		return &usageError{msg: fmt.Sprintf("invalid --trusted-proxies: %v", err), cmd: fs.Name()}
	}
	if sessionIdle <= 0 || sessionLifetime <= 0 {
		return &usageError{msg: "--session-idle and --session-lifetime must be positive", cmd: fs.Name()}
	}
	if secretKey != "" && len(secretKey) < 32 {
		return &usageError{msg: "--secret-key must be at least 32 characters (e.g. openssl rand -hex 32)", cmd: fs.Name()}
	}
	if metricsAddr != "" {
		if !withMetrics {
			return &usageError{msg: "--metrics-addr needs --metrics", cmd: fs.Name()}
		}
		if _, _, err := net.SplitHostPort(metricsAddr); err != nil {
			return &usageError{msg: fmt.Sprintf("invalid --metrics-addr %q: %v", metricsAddr, err), cmd: fs.Name()}
		}
	}
	if gcPercent < -1 || gcPercent == 0 {
		return &usageError{msg: "--gc-percent must be positive (or -1 to turn the collector off)", cmd: fs.Name()}
	}
	debug.SetGCPercent(gcPercent)
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	var m *metrics.Metrics
	if withMetrics {
		m = metrics.New()
		d.onWriteWait = m.ObserveWriteWait
	}
	db, err := d.open(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err := db.Close(); err != nil {
			log.Error("close database", "err", err)
		}
	}()
	if seedIfEmpty {
		empty, err := db.Empty(ctx)
		if err != nil {
			return err
		}
		if empty {
			if err := s.load(ctx, db, stdout, terminalOnly(stderr)); err != nil {
				return err
			}
		}
	}

	cfg := lnhttp.Config{
		Benchmarking:    benchmarking,
		SecureCookies:   secureCookies,
		BcryptCost:      bcryptCost,
		Logger:          log,
		MaxInFlight:     maxInFlight,
		TrustedProxies:  proxies,
		SessionIdle:     sessionIdle,
		SessionLifetime: sessionLifetime,
		SecretKey:       []byte(secretKey),
		Gzip:            gzip,
	}
	if m != nil {
		m.Watch(db)
		cfg.Observer = m
		if metricsAddr == "" {
			cfg.Metrics = m.Handler()
		}
	}
	if withPprof {
		cfg.Profiler = pprofHandler()
	}
	handler, err := lnhttp.NewHandler(db, cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := lnhttp.NewServer(handler)
	var metricsSrv *lnhttp.Server
	if metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		mln, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen on --metrics-addr %s: %w", metricsAddr, err)
		}
		metricsSrv = lnhttp.NewServer(mux)
		go func() {
			if err := metricsSrv.Serve(mln); err != nil {
				log.Error("metrics server", "err", err)
			}
		}()
		fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", mln.Addr())
	}
	if len(secretKey) == 0 {
		log.Info("no --secret-key: CSRF tokens and device cookies are signed with a random key for this process only")
	}
	purgeCtx, stopPurge := context.WithCancel(ctx)
	defer stopPurge()
	go purgeExpiredSessions(purgeCtx, db, handler.SessionLimits(), log)
	if benchmarking {
		log.Warn("benchmarking endpoints are ON: POST /benchmarking/{action} creates and deletes data at random without signing in")
	}
	fmt.Fprintf(stdout, "Lorem News listening on http://%s (%s, database %s)\n", ln.Addr(), db.Describe(), db.Name())

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests in flight", "timeout", shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if metricsSrv != nil {
		defer metricsSrv.Shutdown(sctx)
	}
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return <-serveErr
}

// sessionPurgeEvery is how often serve deletes expired session rows. They
// already sign no one in; purging keeps the table from growing forever.
const sessionPurgeEvery = time.Hour

// purgeExpiredSessions deletes the sessions past limits now and then every
// sessionPurgeEvery, until ctx ends.
func purgeExpiredSessions(ctx context.Context, db loremnews.SessionStore, limits loremnews.SessionLimits, log *slog.Logger) {
	t := time.NewTicker(sessionPurgeEvery)
	defer t.Stop()
	for {
		n, err := db.DeleteExpiredSessions(ctx, limits)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("purge expired sessions", "err", err)
		case n > 0:
			log.Info("purged expired sessions", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
