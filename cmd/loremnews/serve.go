package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/loremnews/loremnews"
	lnhttp "github.com/loremnews/loremnews/http"
	"github.com/loremnews/loremnews/internal/workers"
	"github.com/loremnews/loremnews/metrics"
	"golang.org/x/crypto/bcrypt"
)

// serveCommand is a parsed `loremnews serve` command line.
type serveCommand struct {
	db           dbFlags
	seed         seedFlags
	seedIfEmpty  bool
	addr         string
	logLevel     slog.Level
	site         lnhttp.Config // the handler's settings; the logger, metrics, profiler and benchmarks are added by run
	benchmarking bool
	metrics      bool
	metricsAddr  string // where /metrics (and the profiler) are served, apart from the site
	// metricsDefault: --metrics-addr was not given, so a taken default
	// port is no reason not to start (a free one is used instead).
	metricsDefault  bool
	pprof           bool
	gcPercent       int
	shutdownTimeout time.Duration
	pidFile         string
	workers         int      // serving processes; 1: this one serves
	args            []string // as given, for the worker processes
	// fromFile is what --settings-file said when this process read it
	// (NAME=value), which its workers are given rather than the file's
	// later contents.
	fromFile map[string]string
}

// defaultMetricsPort is where /metrics listens, on 127.0.0.1, when
// --metrics-addr is not given and the site has a port of its own (with
// --addr on port 0, metrics too take a free port).
const defaultMetricsPort = "9464"

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseServeFlags(args, stdout)
	if err != nil {
		return err
	}
	return c.run(ctx, stdout, stderr)
}

// parseServeFlags reads the command line (and the flags' environment
// twins) into a serveCommand; any mistake is a usage error.
func parseServeFlags(args []string, stdout io.Writer) (serveCommand, error) {
	var (
		c  serveCommand
		in serveInput
		fs = newFlagSet("serve", "loremnews serve [--addr HOST:PORT] [--db PATH|postgres://…] [--setup NAME] [--benchmarking] [--seed-if-empty]",
			"Serve Lorem News. The database is created and migrated on start.", stdout)
	)
	c.register(fs, &in)
	if err := fs.parse(args); err != nil {
		return c, err
	}
	c.args, c.fromFile = args, fs.fromFile
	if err := c.db.validate(fs); err != nil {
		return c, err
	}
	if err := c.seed.validate(fs); err != nil {
		return c, err
	}
	usage := func(format string, args ...any) error {
		return &usageError{msg: fmt.Sprintf(format, args...), cmd: fs.Name()}
	}
	err := c.resolve(in, usage)
	return c, err
}

// serveInput are the flags serve reads further into its serveCommand.
type serveInput struct {
	allowRemoteBench bool
	logLevel         string
	trustedProxies   string
	allowedHosts     string
	secretKey        string
	secretKeyFile    string
}

// register adds serve's flags, each with its environment twin.
func (c *serveCommand) register(fs *flagSet, in *serveInput) {
	c.db.register(fs)
	c.seed.register(fs)
	fs.settingsFile("settings-file", "LOREM_SETTINGS_FILE")
	fs.StringVar(&c.addr, "addr", "127.0.0.1:3000", "`HOST:PORT` address to listen on (port 0 picks a free port)")
	fs.twin("addr", "LOREM_ADDR")
	fs.BoolVar(&c.benchmarking, "benchmarking", false, "enable POST /benchmarking/{action} (creates and deletes data at random: never on a real site)")
	fs.twin("benchmarking", "LOREM_BENCHMARKING")
	fs.BoolVar(&in.allowRemoteBench, "allow-remote-benchmarking", false, "allow --benchmarking on an address other than loopback")
	fs.twin("allow-remote-benchmarking", "LOREM_ALLOW_REMOTE_BENCHMARKING")
	fs.BoolVar(&c.seedIfEmpty, "seed-if-empty", false, "load the demo data set (see seed --help) when the database has no users")
	fs.twin("seed-if-empty", "LOREM_SEED_IF_EMPTY")
	fs.BoolVar(&c.site.SecureCookies, "secure-cookies", false, "mark cookies Secure (set when served over HTTPS, e.g. behind a TLS proxy)")
	fs.twin("secure-cookies", "LOREM_SECURE_COOKIES")
	fs.IntVar(&c.site.BcryptCost, "bcrypt-cost", bcrypt.DefaultCost, "bcrypt cost for new passwords (4–31); a password stored at another cost is stored again at this one when its owner signs in")
	fs.twin("bcrypt-cost", "LOREM_BCRYPT_COST")
	fs.StringVar(&in.logLevel, "log-level", "info", "log `LEVEL`: debug (every request), info, warn, error")
	fs.twin("log-level", "LOREM_LOG_LEVEL")
	fs.BoolVar(&c.metrics, "metrics", true, "serve Prometheus metrics (request latency by route, writer waits, pool use) at GET /metrics on --metrics-addr,\n      a listener of their own, never on the site's address")
	fs.twin("metrics", "LOREM_METRICS")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "`HOST:PORT` for /metrics and --pprof, apart from the site: to this machine only, unless you name a private interface\n      for a scraper elsewhere. Default: 127.0.0.1:"+defaultMetricsPort+" (a free port when that one is taken, or when --addr has port 0).\n      It answers only a Host naming this machine or its own address, and no request a proxy forwarded")
	fs.twin("metrics-addr", "LOREM_METRICS_ADDR")
	fs.StringVar(&c.pidFile, "pid-file", "", "write the serving process's PID to `PATH` once it is ready (after a restart on SIGHUP, the new process's)")
	fs.twin("pid-file", "LOREM_PID_FILE")
	fs.StringVar(&in.trustedProxies, "trusted-proxies", "", "reverse proxies whose X-Forwarded-For is believed, `CIDR,...` prefixes or addresses (127.0.0.1,10.0.0.0/8);\n      from other peers the header is ignored. Sign-in limits count by the client address this gives")
	fs.twin("trusted-proxies", "LOREM_TRUSTED_PROXIES")
	fs.StringVar(&in.allowedHosts, "allowed-hosts", "", "the names the site is served as, `HOST,...` (news.example,192.0.2.10); a request with another Host header gets 400,\n      so a page on a domain re-pointed at this machine (DNS rebinding) cannot use it. Default: the host of --addr,\n      plus localhost, 127.0.0.1 and [::1] when that is a loopback address; required when --addr listens on every address")
	fs.twin("allowed-hosts", "LOREM_ALLOWED_HOSTS")
	fs.DurationVar(&c.site.SessionIdle, "session-idle", 14*24*time.Hour, "a session unused this long is signed out on the server")
	fs.twin("session-idle", "LOREM_SESSION_IDLE")
	fs.DurationVar(&c.site.SessionLifetime, "session-lifetime", 30*24*time.Hour, "a session is signed out this long after sign-in, however active")
	fs.twin("session-lifetime", "LOREM_SESSION_LIFETIME")
	fs.IntVar(&c.site.PostsPerAccount, "posts-per-hour", 10, "posts one account may create in an hour; past it, 429 with the minutes to wait")
	fs.twin("posts-per-hour", "LOREM_POSTS_PER_HOUR")
	fs.IntVar(&c.site.CommentsPerAccount, "comments-per-hour", 60, "comments one account may create in an hour; past it, 429 with the minutes to wait")
	fs.twin("comments-per-hour", "LOREM_COMMENTS_PER_HOUR")
	fs.IntVar(&c.site.MaxSessionsPerAccount, "max-sessions", 50, "browsers that may be signed in to one account at once; one more sign-in signs out the oldest")
	fs.twin("max-sessions", "LOREM_MAX_SESSIONS")
	fs.StringVar(&in.secretKey, "secret-key", "", "`KEY` (32+ characters) that signs CSRF tokens and device cookies; every process of one site needs the same.\n      Empty: random per process, so a restart makes open forms ask for a reload. Give it in the environment variable or\n      --secret-key-file rather than here: a command line can be read by every user of the machine (ps, /proc/PID/cmdline)\n      and is kept in shell history, and whoever has the key can forge device cookies")
	fs.twin("secret-key", "LOREM_SECRET_KEY")
	fs.StringVar(&in.secretKeyFile, "secret-key-file", "", "read the secret key from the file at `PATH` (surrounding white space is dropped); instead of --secret-key")
	fs.twin("secret-key-file", "LOREM_SECRET_KEY_FILE")
	fs.BoolVar(&c.pprof, "pprof", false, "serve Go's profiler at /debug/pprof/ on --metrics-addr (a loopback address only)")
	fs.twin("pprof", "LOREM_PPROF")
	fs.IntVar(&c.gcPercent, "gc-percent", 400, "Go GC target (GOGC): heap growth between collections, in %; the server's live heap is small, so collecting 4× less often buys CPU for requests")
	fs.twin("gc-percent", "LOREM_GC_PERCENT")
	fs.IntVar(&c.site.MaxInFlight, "max-in-flight", 0, "`N` requests worked on at once, from their body read to their response's first byte; the rest wait their\n      turn in arrival order (0: no limit). 16 × cores shortens the tail at hundreds of clients, at some throughput\n      (docs/load.md)")
	fs.twin("max-in-flight", "LOREM_MAX_IN_FLIGHT")
	fs.BoolVar(&c.site.Gzip, "gzip", false, "gzip HTML, CSS and text for clients that accept it (off: leave it to a reverse proxy; see docs/load.md, Compression)")
	fs.twin("gzip", "LOREM_GZIP")
	fs.IntVar(&c.workers, "workers", 1, "serving `N` processes on one listening socket, each with its own connections to the database, as Puma's cluster mode\n      does (0: one per core); this process then starts them, starts one again that dies, replaces them all on SIGHUP,\n      and answers /metrics for all, each sample labelled with its worker. See docs/deploy.md, Worker processes")
	fs.twin("workers", "LOREM_WORKERS")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "on SIGTERM/SIGINT, or once a process started by SIGHUP has taken over, how long requests in flight may take to finish")
	fs.twin("shutdown-timeout", "LOREM_SHUTDOWN_TIMEOUT")
}

// resolve checks the flags against each other and turns in into c's
// settings; the error is a usage error naming the flag.
func (c *serveCommand) resolve(in serveInput, usage func(format string, args ...any) error) error {
	if err := c.logLevel.UnmarshalText([]byte(in.logLevel)); err != nil {
		return usage("invalid --log-level %q (want debug, info, warn or error)", in.logLevel)
	}
	if c.site.BcryptCost < bcrypt.MinCost || c.site.BcryptCost > bcrypt.MaxCost {
		return usage("--bcrypt-cost must be between %d and %d", bcrypt.MinCost, bcrypt.MaxCost)
	}
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return usage("invalid --addr %q: %v", c.addr, err)
	}
	if c.benchmarking && !in.allowRemoteBench && !isLoopback(host) {
		return usage("--benchmarking on %s would let anyone who can reach it delete data; bind to 127.0.0.1 or add --allow-remote-benchmarking", c.addr)
	}
	if c.site.TrustedProxies, err = lnhttp.ParseTrustedProxies(in.trustedProxies); err != nil {
		return usage("invalid --trusted-proxies: %v", err)
	}
	if c.site.AllowedHosts, err = lnhttp.ParseAllowedHosts(in.allowedHosts); err != nil {
		return usage("invalid --allowed-hosts: %v", err)
	}
	if len(c.site.AllowedHosts) == 0 {
		if c.site.AllowedHosts = defaultAllowedHosts(host); c.site.AllowedHosts == nil {
			return usage("--addr %s listens on every address: name the hosts the site is served as with --allowed-hosts (e.g. news.example,192.0.2.10)", c.addr)
		}
	}
	if c.site.PostsPerAccount <= 0 || c.site.CommentsPerAccount <= 0 || c.site.MaxSessionsPerAccount <= 0 {
		return usage("--posts-per-hour, --comments-per-hour and --max-sessions must be positive")
	}
	if c.site.SessionIdle <= 0 || c.site.SessionLifetime <= 0 {
		return usage("--session-idle and --session-lifetime must be positive")
	}
	if err := c.resolveSecretKey(in, usage); err != nil {
		return err
	}
	if err := c.resolveMetrics(usage); err != nil {
		return err
	}
	if c.gcPercent < -1 || c.gcPercent == 0 {
		return usage("--gc-percent must be positive (or -1 to turn the collector off)")
	}
	switch {
	case c.workers < 0 || c.workers > workers.Max:
		return usage("--workers must be between 0 (one per core) and %d", workers.Max)
	case c.workers == 0:
		c.workers = runtime.NumCPU()
	}
	return nil
}

// resolveSecretKey takes the secret key from --secret-key or the file
// --secret-key-file names, not both.
func (c *serveCommand) resolveSecretKey(in serveInput, usage func(format string, args ...any) error) error {
	if in.secretKeyFile != "" {
		if in.secretKey != "" {
			return usage("give the secret key once: --secret-key (or $LOREM_SECRET_KEY) or --secret-key-file, not both")
		}
		b, err := os.ReadFile(in.secretKeyFile)
		if err != nil {
			return usage("--secret-key-file: %v", err)
		}
		if in.secretKey = strings.TrimSpace(string(b)); in.secretKey == "" {
			return usage("--secret-key-file %s is empty", in.secretKeyFile)
		}
	}
	if in.secretKey != "" && len(in.secretKey) < 32 {
		return usage("--secret-key must be at least 32 characters (e.g. openssl rand -hex 32)")
	}
	c.site.SecretKey = []byte(in.secretKey)
	return nil
}

// resolveMetrics settles where /metrics is served, never on the site's
// address, and that the profiler is only on a loopback one.
func (c *serveCommand) resolveMetrics(usage func(format string, args ...any) error) error {
	if c.metricsAddr != "" && !c.metrics {
		return usage("--metrics-addr needs --metrics")
	}
	if c.metrics && c.metricsAddr == "" {
		c.metricsDefault = true
		port := defaultMetricsPort
		if _, sitePort, _ := net.SplitHostPort(c.addr); sitePort == "0" {
			port = "0"
		}
		c.metricsAddr = net.JoinHostPort("127.0.0.1", port)
	}
	if c.metrics {
		mhost, mport, err := net.SplitHostPort(c.metricsAddr)
		if err != nil {
			return usage("invalid --metrics-addr %q: %v", c.metricsAddr, err)
		}
		if c.metricsAddr == c.addr && mport != "0" {
			return usage("--metrics-addr %s is the site's --addr: metrics are never served on the site's address", c.metricsAddr)
		}
		if c.pprof && !isLoopback(mhost) {
			return usage("--pprof is only allowed on a loopback --metrics-addr")
		}
	} else if c.pprof {
		return usage("--pprof is served on --metrics-addr: it needs --metrics")
	}
	return nil
}

// run opens (and if asked seeds) the database and serves the site until ctx
// ends, then finishes the requests in flight. On SIGHUP it starts a new
// process of the same executable, which inherits the listening sockets;
// once that one serves, this one hands its clients over and exits. With
// --workers above 1 it serves through worker processes instead (see
// cluster); in a worker, it serves what its parent handed it.
func (c serveCommand) run(ctx context.Context, stdout, stderr io.Writer) error {
	debug.SetGCPercent(c.gcPercent)
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: c.logLevel}))
	if n := os.Getenv(workers.Env); n != "" {
		return c.runWorker(ctx, n, log.With("worker", n))
	}

	// Before anything slow, so a SIGHUP that comes early is not fatal.
	restart := newRestarter(c.pidFile, log)
	defer restart.stop()
	if c.workers > 1 {
		return c.runCluster(ctx, restart, log, stdout, stderr)
	}

	s, err := c.openSite(ctx, log, stdout, stderr, c.seedIfEmpty)
	if err != nil {
		return err
	}
	defer s.close()
	ln, err := c.listenSite(restart)
	if err != nil {
		return err
	}
	if s.metrics != nil {
		opsSrv, err := c.serveOps(restart, s.metrics.Handler(), log, stdout)
		if err != nil {
			ln.Close()
			return err
		}
		defer handOff(opsSrv)
	}
	c.logSettings(log)
	ready := func() error {
		if err := restart.ready(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Lorem News listening on http://%s (%s, database %s)\n", ln.Addr(), s.db.Describe(), s.db.Name())
		return nil
	}
	return c.serve(ctx, s, ln, ready, restart.replaced())
}

// site is what a serving process serves: its database, the handler on it,
// and the metrics (nil without --metrics).
type site struct {
	db      database
	handler *lnhttp.Handler
	metrics *metrics.Metrics
	log     *slog.Logger
}

// openSite opens the database and the handler on it; with seed, it loads
// the demo data set into an empty database first.
func (c serveCommand) openSite(ctx context.Context, log *slog.Logger, stdout, stderr io.Writer, seed bool) (*site, error) {
	cfg := c.site
	cfg.Logger = log
	var m *metrics.Metrics
	if c.metrics {
		m = metrics.New()
		b := currentBuild()
		m.Build(b.version, b.commit)
		c.db.onWriteWait = m.ObserveWriteWait
	}
	db, err := c.db.open(ctx)
	if err != nil {
		return nil, err
	}
	s := &site{db: db, metrics: m, log: log}
	if seed {
		if err := c.seedEmpty(ctx, db, stdout, stderr); err != nil {
			s.close()
			return nil, err
		}
	}
	if c.benchmarking {
		cfg.Benchmark = db.Benchmark()
	}
	if m != nil {
		m.Watch(db)
		cfg.Observer = m
	}
	if s.handler, err = lnhttp.NewHandler(db, cfg); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// seedEmpty loads the demo data set into db if it has no users.
func (c serveCommand) seedEmpty(ctx context.Context, db database, stdout, stderr io.Writer) error {
	empty, err := db.Empty(ctx)
	if err != nil || !empty {
		return err
	}
	return c.seed.load(ctx, db, stdout, terminalOnly(stderr))
}

// close closes the site's database, logging a failure.
func (s *site) close() {
	if err := s.db.Close(); err != nil {
		s.log.Error("close database", "err", err)
	}
}

// listenSite listens on --addr, or takes the listener of the process this
// one replaces.
func (c serveCommand) listenSite(restart *restarter) (net.Listener, error) {
	ln, err := restart.listen("site", c.addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		// The usual first mistake: a second `make run`, or another site
		// on port 3000. Say how to pick another address.
		return nil, fmt.Errorf("listen on %s: %w: another program listens there; pick another address with --addr HOST:PORT or LOREM_ADDR (make run ADDR=127.0.0.1:3001)", c.addr, err)
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", c.addr, err)
	}
	return ln, nil
}

// logSettings logs, once per server, the settings an operator should see.
func (c serveCommand) logSettings(log *slog.Logger) {
	log.Info("answering only to these Host names (--allowed-hosts)", "hosts", strings.Join(c.site.AllowedHosts, ","))
	if len(c.site.SecretKey) == 0 {
		log.Info("no --secret-key: CSRF tokens and device cookies are signed with a random key for this server only")
	}
	if c.benchmarking {
		log.Warn("benchmarking endpoints are ON: POST /benchmarking/{action} creates and deletes data at random without signing in")
	}
}

// serve serves s on ln until ctx ends or replaced is closed (a new
// process serves), then hands the clients over and finishes the requests
// in flight. ready is called once it serves.
func (c serveCommand) serve(ctx context.Context, s *site, ln net.Listener, ready func() error, replaced <-chan struct{}) error {
	srv := lnhttp.NewServer(s.handler)
	purgeCtx, stopPurge := context.WithCancel(ctx)
	defer stopPurge()
	go purgeExpiredSessions(purgeCtx, s.db, s.handler.SessionLimits(), s.log)

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	if err := ready(); err != nil {
		return err
	}
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
		s.log.Info("shutting down: finishing requests in flight", "timeout", c.shutdownTimeout)
	case <-replaced:
		s.log.Info("a new process serves: handing over the clients and finishing requests in flight", "timeout", c.shutdownTimeout)
	}
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	// Every connection is told to close after its next answer and given
	// half the timeout to do so; then the idle ones are closed and the
	// requests in flight finish. The deferred close of the database runs
	// the writes still queued.
	if err := srv.Handoff(sctx, c.shutdownTimeout/2); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return <-serveErr
}

// handOff stops a server that answers quickly (metrics), finishing what it
// is answering.
func handOff(srv *lnhttp.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Handoff(ctx, 0)
}

// serveOps serves /metrics (and with --pprof the profiler) on
// --metrics-addr, apart from the site.
func (c serveCommand) serveOps(restart *restarter, metrics http.Handler, log *slog.Logger, stdout io.Writer) (*lnhttp.Server, error) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	if c.pprof {
		mux.Handle("/debug/pprof/", pprofHandler())
	}
	ln, err := restart.listen("metrics", c.metricsAddr)
	if err != nil && c.metricsDefault && errors.Is(err, syscall.EADDRINUSE) {
		// Another program has the default port: a free one, said in the
		// log, rather than a site that does not start.
		host, _, _ := net.SplitHostPort(c.metricsAddr)
		taken := c.metricsAddr
		if ln, err = restart.listen("metrics", net.JoinHostPort(host, "0")); err == nil {
			log.Warn("the default metrics port is taken; metrics on a free port instead (set --metrics-addr to choose)", "taken", taken, "addr", ln.Addr().String())
		}
	}
	if err != nil {
		return nil, fmt.Errorf("listen on --metrics-addr %s: %w", c.metricsAddr, err)
	}
	mhost, _, _ := net.SplitHostPort(c.metricsAddr)
	srv := lnhttp.NewServer(opsOnly(mhost, mux))
	go func() {
		if err := srv.Serve(ln); err != nil {
			log.Error("metrics server", "err", err)
		}
	}()
	fmt.Fprintf(stdout, "metrics on http://%s/metrics\n", ln.Addr())
	return srv, nil
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

// defaultAllowedHosts is what --allowed-hosts is when not given: the host
// of --addr, and this machine's loopback names when that is a loopback
// address. An address that means every address (0.0.0.0, ::, or none)
// names no host: nil.
func defaultAllowedHosts(host string) []string {
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return nil
	}
	hosts := []string{strings.ToLower(host)}
	if isLoopback(host) {
		for _, name := range lnhttp.LoopbackHosts {
			if name != hosts[0] {
				hosts = append(hosts, name)
			}
		}
	}
	return hosts
}

// opsOnly answers the metrics listener's requests only when they were
// meant for it: a Host naming this machine (localhost, a loopback address)
// or the listener's own address, and no header a proxy adds. A page on a
// domain re-pointed at 127.0.0.1 (DNS rebinding) sends its own Host and
// gets 421; a request a proxy forwarded gets 403: metrics are read by a
// scraper on this machine or on the listener's own network, never
// through the site's proxy.
func opsOnly(listenHost string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip", "True-Client-Ip", "Cf-Connecting-Ip"} {
			if _, ok := r.Header[h]; ok {
				http.Error(w, "metrics are not served through a proxy", http.StatusForbidden)
				return
			}
		}
		host := r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if !isLoopback(host) && !strings.EqualFold(host, listenHost) {
			http.Error(w, "this listener serves metrics to this machine's names only", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
