// Package bench runs the experiment: for each setup, a freshly seeded
// database and its own server process, then the original method — three
// runs of one benchmarking action at one concurrency, without reseeding —
// and optionally a concurrency sweep; then reports in Markdown, HTML with
// charts, and JSON.
package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/loremnews/loremnews/load"
)

// Setup is one configuration under test: a binary, and the SQLite setup
// it serves with (or PostgreSQL), with the serve flags of its own.
type Setup struct {
	Name   string `json:"name"`
	Binary string `json:"binary"`
	// SQLiteSetup is serve's --setup (results.json keeps its earlier
	// name, so that earlier reports render again).
	SQLiteSetup string   `json:"profile"`
	Note        string   `json:"note,omitempty"`
	ServeArgs   []string `json:"serve_args,omitempty"`
	// Postgres runs the setup on PostgreSQL (Config.PostgresURL's server)
	// instead of a SQLite file; SQLiteSetup does not apply.
	Postgres bool `json:"postgres,omitempty"`
	// Scale multiplies Config's users and posts for this setup's data set
	// (0 and 1: as configured), so one report can show how the cost grows
	// with the data.
	Scale int `json:"scale,omitempty"`
	// Workers is how many serving processes share the database (serve
	// --workers); 0 and 1: one.
	Workers int `json:"workers,omitempty"`
	// PollWriters turns off the queue across processes (the DSN's
	// _writers=poll): the writers of the processes poll for SQLite's lock.
	PollWriters bool `json:"poll_writers,omitempty"`
}

// users and posts are the size of the setup's data set.
func (s Setup) users(cfg Config) int { return cfg.Users * max(s.Scale, 1) }
func (s Setup) posts(cfg Config) int { return cfg.Posts * max(s.Scale, 1) }

// Config is the experiment.
type Config struct {
	Setups []Setup `json:"setups"`
	// PostgresURL is a superuser (or CREATEDB) URL of the PostgreSQL
	// server the Postgres setups use, each in a fresh database of its
	// own. Empty: Execute starts a throw-away cluster (pgcluster.Tuned)
	// for the experiment and stops it at the end.
	PostgresURL   string        `json:"-"`
	Action        string        `json:"action"`         // benchmarking action, e.g. "balanced"
	Concurrency   int           `json:"concurrency"`    // of the main runs
	Duration      time.Duration `json:"duration"`       // of each main run
	Runs          int           `json:"runs"`           // main runs per setup
	Sweep         []int         `json:"sweep"`          // concurrency levels; empty: no sweep
	Scenarios     []Scenario    `json:"scenarios"`      // extra single runs per setup, after the main runs
	SweepDuration time.Duration `json:"sweep_duration"` // of each sweep level
	Ceiling       bool          `json:"ceiling"`        // first measure POST /benchmarking/ceiling (no database, no template)
	// PointRead, if set, ends the experiment with the trivial read: on one
	// freshly seeded server of the default setup, POST /benchmarking/ceiling
	// and then /benchmarking/point_read at each of these concurrencies, -z each.
	PointRead  []int     `json:"point_read,omitempty"`
	Interleave bool      `json:"interleave"` // all servers up at once; run 1 of every setup, then run 2, …
	Seed       uint64    `json:"seed"`
	Users      int       `json:"users"`
	Posts      int       `json:"posts"`
	WorkDir    string    `json:"-"` // databases and server logs
	Log        io.Writer `json:"-"` // progress lines; nil for none
}

// Scenario is one extra run: an action at a concurrency, for -z.
type Scenario struct {
	Action      string `json:"action"`
	Concurrency int    `json:"concurrency"`
}

// String is "action@c".
func (s Scenario) String() string { return fmt.Sprintf("%s@%d", s.Action, s.Concurrency) }

// RunResult is one load run's result: what the load generator measured
// for one action at one concurrency.
type RunResult struct {
	Action      string `json:"action"`
	Concurrency int    `json:"concurrency"`
	load.Summary
	// Server is what the server process spent on the run; nil in results
	// written before it was measured.
	Server *ServerCost `json:"server,omitempty"`
}

// OKPerSec is the run's successful requests per second. Results written
// before successes were counted apart lack the field; for those it is
// derived from the counts.
func (r RunResult) OKPerSec() float64 {
	if r.SuccessesPerSec > 0 || r.Successes > 0 || r.Requests == 0 {
		return r.SuccessesPerSec
	}
	return r.RequestsPerSec * float64(r.Requests-r.Failures) / float64(r.Requests)
}

// ErrorRate is the share (0–1) of the run's requests that failed.
func (r RunResult) ErrorRate() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Failures) / float64(r.Requests)
}

// measured reports whether the run has latencies to show: some request
// succeeded (older results files count successes as requests minus failures).
func (r RunResult) measured() bool { return r.Successes > 0 || r.Requests > r.Failures }

// Percentile returns the run's latency at percentile p (as listed in
// load.StandardPercentiles), in seconds; NaN if no request succeeded.
func (r RunResult) Percentile(p float64) float64 {
	if !r.measured() {
		return math.NaN()
	}
	for _, pv := range r.Percentiles {
		if pv.Percentile == p {
			return pv.Seconds
		}
	}
	return math.NaN()
}

// WaitStats summarises how long writes waited for their turn and the lock
// (from the server's loremnews_write_wait_seconds histogram, over the main runs).
type WaitStats struct {
	Count float64 `json:"count"`
	Mean  float64 `json:"mean_seconds"`
	P50   float64 `json:"p50_seconds"`
	P90   float64 `json:"p90_seconds"`
	P99   float64 `json:"p99_seconds"`
	P999  float64 `json:"p999_seconds"`
}

// SetupResult is everything measured for one setup.
type SetupResult struct {
	Setup         Setup       `json:"setup"`
	SQLite        string      `json:"sqlite_version"`
	Runs          []RunResult `json:"runs"`
	Sweep         []RunResult `json:"sweep,omitempty"`
	Scenarios     []RunResult `json:"scenarios,omitempty"`
	WriteWait     WaitStats   `json:"write_wait"`
	BusyErrors    float64     `json:"busy_errors"`
	BusyRetries   float64     `json:"busy_retries"`
	QueueMaxDepth float64     `json:"writer_queue_max_depth"`
	// WriteWaitMax is the longest wait of a write, from asking to write
	// to its BEGIN, over the setup's life; TurnWaitMax the longest wait
	// for another process's turn (0 with one process).
	WriteWaitMax float64 `json:"write_wait_max,omitempty"`
	TurnWaitMax  float64 `json:"turn_wait_max,omitempty"`
	// Processes are the worker processes' shares of the main runs'
	// requests and commits, with Workers above 1.
	Processes []ProcessShare `json:"processes,omitempty"`
	ServerLog []string       `json:"server_log,omitempty"` // last warnings/errors
	Error     string         `json:"error,omitempty"`
}

// Report is the whole experiment.
type Report struct {
	Started     time.Time      `json:"started"`
	Finished    time.Time      `json:"finished"`
	CommandLine string         `json:"command_line"`
	Machine     Machine        `json:"machine"`
	Config      Config         `json:"config"`
	Ceiling     *RunResult     `json:"ceiling,omitempty"`
	Setups      []*SetupResult `json:"setups"`
	// Postgres describes the PostgreSQL server of the Postgres setups:
	// its version, settings and where it ran.
	Postgres *PostgresInfo `json:"postgres,omitempty"`
	// PointRead is the trivial read against the ceiling (Config.PointRead).
	PointRead *PointReadResult `json:"point_read,omitempty"`
}

// PointReadResult is the trivial read on one setup, beside the ceiling at
// the same concurrency.
type PointReadResult struct {
	Setup  string           `json:"setup"`
	Levels []PointReadLevel `json:"levels"`
	Error  string           `json:"error,omitempty"`
}

// PointReadLevel is one concurrency of the trivial read.
type PointReadLevel struct {
	Concurrency int       `json:"concurrency"`
	Ceiling     RunResult `json:"ceiling"`
	Read        RunResult `json:"read"`
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// Execute runs the experiment. A setup that fails (its server does not start,
// say) is reported with its error and the others still run.
func Execute(ctx context.Context, cfg Config, commandLine string) (*Report, error) {
	if len(cfg.Setups) == 0 || cfg.Runs < 1 || cfg.Concurrency < 1 || cfg.Duration <= 0 {
		return nil, fmt.Errorf("bench: need setups, runs ≥ 1, concurrency ≥ 1 and a duration")
	}
	if cfg.WorkDir == "" {
		dir, err := os.MkdirTemp("", "loremnews-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.WorkDir = dir
	}
	rep := &Report{Started: time.Now(), CommandLine: commandLine, Config: cfg}
	rep.Machine = readMachine(cfg.Setups[0].Binary)
	if needsPostgres(cfg) {
		stop, err := preparePostgres(ctx, &cfg, rep)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	if cfg.Ceiling {
		c, err := measureCeiling(ctx, cfg)
		if err != nil {
			return nil, err
		}
		rep.Ceiling = c
	}
	if cfg.Interleave {
		rep.Setups = runInterleaved(ctx, cfg)
	} else {
		for _, s := range cfg.Setups {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rep.Setups = append(rep.Setups, runSetup(ctx, cfg, s))
		}
	}
	if len(cfg.PointRead) > 0 && ctx.Err() == nil {
		rep.PointRead = runPointRead(ctx, cfg)
	}
	for _, res := range rep.Setups {
		if res.Error != "" {
			cfg.logf("%s: FAILED: %s", res.Setup.Name, res.Error)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	rep.Finished = time.Now()
	return rep, nil
}

// runInterleaved starts every setup's server (each on its own freshly
// seeded database) and then takes turns: run 1 of every setup, run 2 of
// every setup in reverse order, …, and likewise each sweep level, so that a
// drift in the machine's speed during the experiment falls on all setups
// alike instead of on whichever ran last. Scenarios follow, as in runSetup.
func runInterleaved(ctx context.Context, cfg Config) []*SetupResult {
	n := len(cfg.Setups)
	results, servers, before := make([]*SetupResult, n), make([]*server, n), make([]serverCounters, n)
	for i, s := range cfg.Setups {
		results[i] = &SetupResult{Setup: s, SQLite: sqliteVersion(s.Binary)}
		srv, err := freshServer(ctx, cfg, s, s.Name)
		if err == nil {
			if before[i], err = srv.scrapeCounters(); err != nil {
				srv.stop() // started, but unusable: stop it, or it outlives the run
				results[i].ServerLog = logTail(srv.logPath, 20)
			}
		}
		if err != nil {
			results[i].Error = err.Error()
			continue
		}
		servers[i] = srv
	}
	readIntoPageCache(cfg)
	defer func() {
		for i, srv := range servers {
			if srv == nil {
				continue
			}
			if err := srv.stop(); err != nil && results[i].Error == "" {
				results[i].Error = err.Error()
			}
			results[i].ServerLog = logTail(srv.logPath, 20)
		}
	}()
	// turn runs every setup once, in order A B C on even turns and C B A on
	// odd ones (an ABBA design), so no setup always goes first.
	turns := 0
	turn := func(c int, d time.Duration, record func(*SetupResult, RunResult), what string) {
		defer func() { turns++ }()
		for k := range servers {
			i := k
			if turns%2 == 1 {
				i = n - 1 - k
			}
			srv := servers[i]
			if srv == nil || results[i].Error != "" || ctx.Err() != nil {
				continue
			}
			r, err := srv.runLoad(ctx, cfg.Action, c, d, 0)
			if err != nil {
				results[i].Error = err.Error()
				continue
			}
			cfg.logf("%s: %s: %s", cfg.Setups[i].Name, what, r.progress())
			record(results[i], r)
		}
	}
	for run := range cfg.Runs {
		turn(cfg.Concurrency, cfg.Duration, func(res *SetupResult, r RunResult) { res.Runs = append(res.Runs, r) }, fmt.Sprintf("run %d", run+1))
	}
	for i, srv := range servers {
		if srv == nil || results[i].Error != "" {
			continue
		}
		after, err := srv.scrapeCounters()
		if err != nil {
			results[i].Error = err.Error()
			continue
		}
		results[i].setCounters(before[i], after)
	}
	for _, c := range cfg.Sweep {
		turn(c, cfg.SweepDuration, func(res *SetupResult, r RunResult) { res.Sweep = append(res.Sweep, r) }, fmt.Sprintf("sweep c=%d", c))
	}
	for i, s := range cfg.Setups {
		if results[i].Error == "" {
			runScenarios(ctx, cfg, s, results[i])
		}
	}
	return results
}

func runSetup(ctx context.Context, cfg Config, s Setup) *SetupResult {
	res := &SetupResult{Setup: s, SQLite: sqliteVersion(s.Binary)}
	if err := runMain(ctx, cfg, s, res); err != nil {
		res.Error = err.Error()
		return res
	}
	runScenarios(ctx, cfg, s, res)
	return res
}

// runScenarios runs each scenario on a freshly seeded server of its own.
func runScenarios(ctx context.Context, cfg Config, s Setup, res *SetupResult) {
	for _, sc := range cfg.Scenarios {
		err := withFreshServer(ctx, cfg, s, s.Name+"-"+sc.Action, func(srv *server) error {
			r, err := srv.runLoad(ctx, sc.Action, sc.Concurrency, cfg.Duration, scenarioCap(s.posts(cfg), sc.Action))
			if err != nil {
				return err
			}
			cfg.logf("%s: %s: %s", s.Name, sc, r.progress())
			res.Scenarios = append(res.Scenarios, r)
			return nil
		})
		if err != nil {
			res.Error = err.Error()
			return
		}
	}
}

// scenarioCap limits the destroy-only scenarios to half the rows seeded, so
// the table never runs out (a pick from an empty table is a 404 by design).
func scenarioCap(posts int, action string) int {
	switch action {
	case "post_destroy":
		return posts / 2
	case "comment_destroy":
		return posts * 5 / 2 // at least 5 comments per post
	}
	return 0
}

// runMain runs the main runs and the sweep on one freshly seeded server,
// and reads the server's write-wait histogram around the main runs.
func runMain(ctx context.Context, cfg Config, s Setup, res *SetupResult) error {
	return withFreshServer(ctx, cfg, s, s.Name, func(srv *server) error {
		defer func() { res.ServerLog = logTail(srv.logPath, 20) }()
		before, err := srv.scrapeCounters()
		if err != nil {
			return err
		}
		for i := range cfg.Runs {
			r, err := srv.runLoad(ctx, cfg.Action, cfg.Concurrency, cfg.Duration, 0)
			if err != nil {
				return err
			}
			cfg.logf("%s: run %d: %s", s.Name, i+1, r.progress())
			res.Runs = append(res.Runs, r)
		}
		after, err := srv.scrapeCounters()
		if err != nil {
			return err
		}
		res.setCounters(before, after)
		for _, c := range cfg.Sweep {
			r, err := srv.runLoad(ctx, cfg.Action, c, cfg.SweepDuration, 0)
			if err != nil {
				return err
			}
			cfg.logf("%s: sweep c=%d: %s", s.Name, c, r.progress())
			res.Sweep = append(res.Sweep, r)
		}
		return nil
	})
}

// setCounters fills in what the server's metrics say happened between the
// scrapes around the main runs.
func (res *SetupResult) setCounters(before, after serverCounters) {
	w := after.writeWait.minus(before.writeWait)
	res.WriteWait = WaitStats{Count: w.count(), Mean: finite(w.mean()), P50: finite(w.quantile(.5)), P90: finite(w.quantile(.9)),
		P99: finite(w.quantile(.99)), P999: finite(w.quantile(.999))}
	res.BusyErrors = after.busyErrors - before.busyErrors
	res.BusyRetries = after.busyRetries - before.busyRetries
	res.QueueMaxDepth = after.queueMax
	res.WriteWaitMax, res.TurnWaitMax = after.writeWaitMax, after.turnWaitMax
	res.Processes = shares(before, after)
}

// readIntoPageCache reads every setup's database file (and its WAL) once,
// after all were seeded and before the first run. A machine may page out
// the page cache that went unused for a while (this one's host does after
// about a minute), and the databases seeded first sat unused while the
// others were seeded: at 100 times the data, the setup seeded first then
// read from the disk through its runs (the performance log's 63b).
// Reading them here starts every setup with its file in memory. Only
// this process opens the files, so no server's locks on them are touched.
func readIntoPageCache(cfg Config) {
	for _, s := range cfg.Setups {
		if s.Postgres {
			continue
		}
		for _, suffix := range []string{"", "-wal"} {
			f, err := os.Open(dbPathFor(cfg.WorkDir, s) + suffix)
			if err != nil {
				continue
			}
			io.Copy(io.Discard, f)
			f.Close()
		}
	}
}

// freshServer seeds a fresh database for the setup and serves it from its
// own process; the caller stops it.
func freshServer(ctx context.Context, cfg Config, s Setup, name string) (*server, error) {
	dbPath := filepath.Join(cfg.WorkDir, name+".sqlite3")
	if s.Postgres {
		var err error
		if dbPath, err = freshPostgresDatabase(ctx, cfg.PostgresURL, name); err != nil {
			return nil, err
		}
	} else {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(dbPath + suffix)
		}
	}
	cfg.logf("%s: seeding a fresh database", name)
	if err := seedDatabase(ctx, s, dbPath, cfg); err != nil {
		return nil, err
	}
	return startServer(ctx, s, dbPath, filepath.Join(cfg.WorkDir, name+".log"))
}

// withFreshServer runs fn against a freshServer, then stops it gracefully.
func withFreshServer(ctx context.Context, cfg Config, s Setup, name string, fn func(*server) error) (err error) {
	srv, err := freshServer(ctx, cfg, s, name)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := srv.stop(); err == nil {
			err = stopErr
		}
	}()
	return fn(srv)
}

// measureCeiling loads the trivial handler of the first setup's binary, in
// the same run, with the same generator and concurrency: a yardstick that
// makes results from noisy machines comparable.
func measureCeiling(ctx context.Context, cfg Config) (*RunResult, error) {
	s := Setup{Name: ActionCeiling, Binary: cfg.Setups[0].Binary, SQLiteSetup: "split"}
	srv, err := startServer(ctx, s, dbPathFor(cfg.WorkDir, s), filepath.Join(cfg.WorkDir, "ceiling.log"))
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	r, err := srv.runLoad(ctx, ActionCeiling, cfg.Concurrency, cfg.Duration, 0)
	if err != nil {
		return nil, err
	}
	cfg.logf("ceiling: %s", r.progress())
	return &r, nil
}

// runPointRead measures the trivial read on the default SQLite setup (split,
// or the first setup if there is none): at each level, the ceiling and
// then point_read, on one freshly seeded server.
func runPointRead(ctx context.Context, cfg Config) *PointReadResult {
	s := cfg.Setups[0]
	for _, c := range cfg.Setups {
		if !c.Postgres && c.SQLiteSetup == "split" {
			s = c
			break
		}
	}
	res := &PointReadResult{Setup: s.Name}
	err := withFreshServer(ctx, cfg, s, s.Name+"-"+ActionPointRead, func(srv *server) error {
		for _, c := range cfg.PointRead {
			ceiling, err := srv.runLoad(ctx, ActionCeiling, c, cfg.Duration, 0)
			if err != nil {
				return err
			}
			read, err := srv.runLoad(ctx, ActionPointRead, c, cfg.Duration, 0)
			if err != nil {
				return err
			}
			cfg.logf("%s: point_read c=%d: %s (ceiling %.0f successful req/s)", s.Name, c, read.progress(), ceiling.OKPerSec())
			res.Levels = append(res.Levels, PointReadLevel{Concurrency: c, Ceiling: ceiling, Read: read})
		}
		return nil
	})
	if err != nil {
		res.Error = err.Error()
	}
	return res
}

func (s *server) scrapeCounters() (serverCounters, error) {
	text, err := s.scrape()
	if err != nil {
		return serverCounters{}, err
	}
	return parseCounters(text)
}

// runLoad loads the server's POST /benchmarking/ACTION at concurrency c for
// d, stopping after n requests if n > 0, and reads what the server process
// spent meanwhile (left out where /proc cannot tell: not Linux).
func (s *server) runLoad(ctx context.Context, action string, c int, d time.Duration, n int) (RunResult, error) {
	pid := s.Pid()
	cpuBefore, cpuErr := treeCPU(pid)
	res, err := load.Run(ctx, load.Config{URL: s.URL + "/benchmarking/" + action, Method: "POST", Concurrency: c, Duration: d, Requests: n})
	if err != nil {
		return RunResult{}, err
	}
	r := RunResult{Action: action, Concurrency: c, Summary: res.Summary()}
	cpuAfter, cpuAfterErr := treeCPU(pid)
	mem, memErr := treeMemory(pid)
	if cpuErr == nil && cpuAfterErr == nil && memErr == nil {
		r.Server = serverCost(cpuBefore, cpuAfter, mem, r.Successes)
	}
	return r, nil
}

// finite maps NaN (no data) to 0, which JSON can carry.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
