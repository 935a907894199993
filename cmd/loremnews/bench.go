package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/loremnews/loremnews/bench"
	"github.com/loremnews/loremnews/bench/setups"
	lnhttp "github.com/loremnews/loremnews/http"
)

// benchCommand is a parsed `loremnews bench` command line: the experiment
// and where its reports go.
type benchCommand struct {
	cfg         bench.Config
	out         string // report directory; empty: a new one under benchmarks/
	keepWork    bool   // keep the databases and server logs
	render      string // run nothing: render this directory's results.json again
	commandLine string // for the report
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseBenchFlags(args, stdout)
	if err != nil {
		return err
	}
	return c.run(ctx, stdout, stderr)
}

// parseBenchFlags reads the command line (and the flags' environment
// twins) into a benchCommand; any mistake is a usage error.
func parseBenchFlags(args []string, stdout io.Writer) (benchCommand, error) {
	var (
		c  = benchCommand{commandLine: "loremnews bench " + strings.Join(quoteArgs(args), " ")}
		in benchInput
		fs = newFlagSet("bench", "loremnews bench [--setups LIST] [--plain-binary PATH] [--sweep] [--quick] [--out DIR]",
			"Run the experiment: for each setup a freshly seeded database and its own server process (this binary's\n"+
				"serve), then --runs runs of POST /benchmarking/ACTION at -c connections for -z each, without reseeding;\n"+
				"optionally a concurrency sweep. Writes report.md, report.html (with charts) and results.json to --out.", stdout)
	)
	c.register(fs, &in)
	if err := fs.parse(args); err != nil {
		return c, err
	}
	if c.render != "" {
		return c, nil
	}
	usage := func(err error) error { return &usageError{msg: err.Error(), cmd: fs.Name()} }
	cfg := &c.cfg
	if in.quick {
		cfg.Runs, cfg.Duration, in.sweep = 3, 3*time.Second, false
	}
	var err error
	if cfg.Setups, err = in.setups(); err != nil {
		return c, err
	}
	if cfg.PostgresURL != "" {
		if err := bench.CheckPostgresURL(cfg.PostgresURL); err != nil {
			return c, usage(err)
		}
	}
	if in.sweep {
		if cfg.Sweep, err = bench.ParseLevels(in.levels, "--sweep-levels"); err != nil {
			return c, usage(err)
		}
	}
	if cfg.PointRead, err = bench.ParseLevels(in.pointRead, "--point-read"); err != nil {
		return c, usage(err)
	}
	if err := bench.CheckAction(cfg.Action, lnhttp.BenchmarkActions()); err != nil {
		return c, usage(fmt.Errorf("--action: %w", err))
	}
	if cfg.Scenarios, err = bench.ParseScenarios(in.scenarios, cfg.Concurrency, lnhttp.BenchmarkActions(), lnhttp.BenchmarkSingleActions()); err != nil {
		return c, usage(err)
	}
	if cfg.Runs < 1 || cfg.Concurrency < 1 || cfg.Duration <= 0 || cfg.Users < 1 || cfg.Posts < 1 {
		return c, usage(errors.New("--runs, -c, -z, --users and --posts must be positive"))
	}
	return c, nil
}

// benchInput are the flags bench reads further into its Config.
type benchInput struct {
	setupList, targets, compare, scales, workers string
	pollToo                                      bool
	binary, plainBinary                          string
	levels, scenarios, pointRead                 string
	sweep, quick                                 bool
}

// register adds bench's flags.
func (c *benchCommand) register(fs *flagSet, in *benchInput) {
	fs.StringVar(&in.setupList, "setups", strings.Join(setups.Names(), ","), "`NAME,...` setups to compare, in order: SQLite setups, and postgres")
	fs.twin("setups", "LOREM_BENCH_SETUPS")
	fs.StringVar(&in.targets, "targets", "", "`TARGET,...` databases to compare instead of setups: sqlite (the default SQLite setup), postgres, postgres-async (synchronous_commit=off); e.g. sqlite,postgres (overrides --setups)")
	fs.twin("targets", "LOREM_BENCH_TARGETS")
	fs.StringVar(&c.cfg.PostgresURL, "postgres", "", "PostgreSQL server for the postgres setup: a `URL` whose role may create databases (default: start a throw-away cluster, tuned, for the run)")
	fs.twin("postgres", "LOREM_BENCH_POSTGRES")
	fs.StringVar(&in.binary, "binary", "", "`PATH` of the loremnews binary to serve with (default: this one)")
	fs.StringVar(&in.plainBinary, "plain-binary", "", "also run split on the binary at `PATH`, built WITHOUT SQLite's compile-time options (make build-plain)")
	fs.twin("plain-binary", "LOREM_BENCH_PLAIN_BINARY")
	fs.StringVar(&in.compare, "compare", "", "also run the first setup on other builds, `NAME=PATH,...` (e.g. before=bin/loremnews-old): a change's before and after in one run, with --interleave")
	fs.twin("compare", "LOREM_BENCH_COMPARE")
	fs.StringVar(&in.scales, "scales", "", "`K,...` run every setup on data sets K times --users and --posts, e.g. 1,100: the cost as the data grows, in one report")
	fs.StringVar(&in.workers, "workers", "", "`N,...` run every setup served by each number of processes (serve --workers), e.g. 1,4,10: the talk's\n      deployment, several processes writing one file; the report shows each process's share of requests and commits")
	fs.twin("workers", "LOREM_BENCH_WORKERS")
	fs.BoolVar(&in.pollToo, "poll-too", false, "with --workers, also run each SQLite setup of several processes with its writers polling for SQLite's lock every\n      millisecond instead of taking turns in arrival order (the database's _writers=poll): the queue across processes, measured")
	fs.StringVar(&c.cfg.Action, "action", "balanced", "benchmarking `ACTION` to load")
	fs.IntVar(&c.cfg.Concurrency, "c", 20, "concurrent connections in the main runs")
	fs.DurationVar(&c.cfg.Duration, "z", 10*time.Second, "duration of each main run")
	fs.IntVar(&c.cfg.Runs, "runs", 3, "main runs per setup")
	fs.BoolVar(&in.sweep, "sweep", false, "after the main runs, sweep the concurrency levels")
	fs.StringVar(&in.levels, "sweep-levels", "1,2,4,8,16,32,64,128,256", "the sweep's concurrency levels `N,...`")
	fs.DurationVar(&c.cfg.SweepDuration, "sweep-duration", 5*time.Second, "duration of each sweep level")
	fs.StringVar(&in.scenarios, "scenarios", "", "extra runs after the main ones, `ACTION@C,...` (-z each), e.g. balanced@256,post_create@20; \"actions\" = the seven single actions at -c plus balanced and write_heavy at 256")
	fs.StringVar(&in.pointRead, "point-read", "", "at the end, the trivial read on split (or the first setup) at concurrencies `N,...` (e.g. 1,5,10): the ceiling and then POST /benchmarking/point_read, -z each")
	fs.BoolVar(&c.cfg.Interleave, "interleave", false, "start every setup's server at once and take turns run by run, so machine drift falls on all setups alike")
	fs.BoolVar(&c.cfg.Ceiling, "ceiling", true, "first measure the ceiling: the same binary's trivial handler, same load")
	fs.BoolVar(&in.quick, "quick", false, "a short version (about a minute of load): 3 runs of 3 s per setup, no sweep")
	fs.StringVar(&c.out, "out", "", "`DIR` for the reports (default benchmarks/DATE-ACTION)")
	fs.BoolVar(&c.keepWork, "keep-work", false, "keep the databases and server logs (their folder is printed)")
	fs.StringVar(&c.render, "render", "", "run nothing: render `DIR`/results.json again into DIR/report.md and report.html")
	fs.Uint64Var(&c.cfg.Seed, "seed", 1, "seed of the data set")
	fs.IntVar(&c.cfg.Users, "users", 100, "users in the data set")
	fs.IntVar(&c.cfg.Posts, "posts", 1000, "posts in the data set")
}

// setups are the setups to run, in order: --targets or --setups, then
// --plain-binary's, then the first on each build of --compare, all at
// each of --scales. A mistake is a usage error naming it.
func (in benchInput) setups() ([]bench.Setup, error) {
	usage := func(err error) error { return &usageError{msg: err.Error(), cmd: "bench"} }
	binary := in.binary
	if binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		binary = exe
	}
	var (
		list []bench.Setup
		err  error
	)
	if in.targets != "" {
		list, err = bench.ParseTargets(in.targets, binary)
	} else {
		list, err = bench.ParseSetups(in.setupList, binary)
	}
	if err != nil {
		return nil, usage(err)
	}
	if in.plainBinary != "" {
		plain, err := bench.PlainSetup(in.plainBinary)
		if err != nil {
			return nil, usage(err)
		}
		list = append(list, plain)
	}
	if in.compare != "" {
		others, err := bench.CompareSetups(list[0], in.compare)
		if err != nil {
			return nil, usage(err)
		}
		list = append(list, others...)
	}
	if in.scales != "" {
		if list, err = bench.ScaledSetups(list, in.scales); err != nil {
			return nil, usage(err)
		}
	}
	if in.workers != "" {
		if list, err = bench.WorkerSetups(list, in.workers, in.pollToo); err != nil {
			return nil, usage(err)
		}
	}
	return list, nil
}

// run renders the reports again, or runs the experiment and writes them.
func (c benchCommand) run(ctx context.Context, stdout, stderr io.Writer) error {
	if c.render != "" {
		rep, err := bench.ReadReport(filepath.Join(c.render, "results.json"))
		if err != nil {
			return err
		}
		return writeReports(c.render, rep, false, stdout)
	}
	out := c.out
	if out == "" {
		out = freshReportDir(filepath.Join("benchmarks", time.Now().UTC().Format("2006-01-02")+"-"+c.cfg.Action))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	cfg := c.cfg
	if c.keepWork {
		dir, err := os.MkdirTemp("", "loremnews-bench-")
		if err != nil {
			return err
		}
		cfg.WorkDir = dir
		fmt.Fprintf(stderr, "bench: databases and server logs in %s\n", dir)
	}
	cfg.Log = stderr
	rep, err := bench.Execute(ctx, cfg, c.commandLine)
	if err != nil {
		return err
	}
	return writeReports(out, rep, true, stdout)
}

// writeReports writes report.md, its SVG charts beside it, report.html, and
// results.json if asked.
func writeReports(dir string, rep *bench.Report, withJSON bool, stdout io.Writer) error {
	if err := rep.WriteCharts(dir); err != nil {
		return err
	}
	files := map[string]func(io.Writer) error{"report.md": rep.WriteMarkdown, "report.html": rep.WriteHTML}
	if withJSON {
		files["results.json"] = rep.WriteJSON
	}
	for name, write := range files {
		if err := writeFile(filepath.Join(dir, name), write); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote the reports in %s\n", dir)
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t\"'") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return out
}

// freshReportDir returns dir, or dir-2, dir-3, … if an earlier report is
// already there: a default output directory never overwrites a report.
func freshReportDir(dir string) string {
	candidate := dir
	for n := 2; ; n++ {
		if _, err := os.Stat(filepath.Join(candidate, "results.json")); os.IsNotExist(err) {
			return candidate
		}
		candidate = fmt.Sprintf("%s-%d", dir, n)
	}
}
