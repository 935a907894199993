package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/loremnews/loremnews/bench"
	"github.com/loremnews/loremnews/postgres"
	"github.com/loremnews/loremnews/sqlite"
)

// talkSteps says which step of the 2024 talk each profile reproduces (its
// demo app is the public repository fractaledmind/wrocloverb-2024, a
// branch per step), for the report's list of setups.
var talkSteps = map[string]string{
	"naive":     "The talk's step 00 (branch 00-baseline): Rails 7.1+'s defaults.",
	"enhanced":  "The talk's step 01 (branch 01-add-enhanced-adapter-gem): IMMEDIATE transactions and the gem's 60 µs busy handler.",
	"immediate": "IMMEDIATE with production pragmas and SQLite's own busy handler: step 01 without the gem's handler.",
	"fair":      "A writer queue and a constant 1 ms poll for the lock: the fairness the gem's handler aims at, in Go.",
	"split":     "The talk's step 03 (branch 03-isolate-read-and-write-connections): separate read and write pools; the default.",
	"batch":     "Not in the talk: split with group commit.",
	"durable":   "Not in the talk: split with synchronous=FULL, what a power-loss-proof commit costs.",
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		cfg         bench.Config
		setups      string
		targets     string
		compare     string
		binary      string
		plainBinary string
		sweep       bool
		levels      string
		scenarios   string
		pointRead   string
		quick       bool
		out         string
		keepWork    bool
		render      string
		fs          = newFlagSet("bench", "loremnews bench [--setups LIST] [--plain-binary PATH] [--sweep] [--quick] [--out DIR]",
			"Run the experiment: for each setup a freshly seeded database and its own server process (this binary's\n"+
				"serve), then --runs runs of POST /benchmarking/ACTION at -c connections for -z each, without reseeding;\n"+
				"optionally a concurrency sweep. Writes report.md, report.html (with charts) and results.json to --out.", stdout)
	)
	fs.StringVar(&setups, "setups", strings.Join(sqlite.ProfileNames(), ","), "setups to compare, in order: SQLite profiles, and postgres")
	fs.twin("setups", "LOREM_BENCH_SETUPS")
	fs.StringVar(&targets, "targets", "", "compare databases instead of setups: sqlite (the default SQLite setup), postgres, postgres-async (synchronous_commit=off); e.g. sqlite,postgres (overrides --setups)")
	fs.twin("targets", "LOREM_BENCH_TARGETS")
	fs.StringVar(&cfg.PostgresURL, "postgres", "", "PostgreSQL server for the postgres setup: a URL whose role may create databases (default: start a throw-away cluster, tuned, for the run)")
	fs.twin("postgres", "LOREM_BENCH_POSTGRES")
	fs.StringVar(&binary, "binary", "", "the loremnews binary to serve with (default: this one)")
	fs.StringVar(&plainBinary, "plain-binary", "", "also run split on this binary built WITHOUT SQLite's compile-time options (make build-plain)")
	fs.twin("plain-binary", "LOREM_BENCH_PLAIN_BINARY")
	fs.StringVar(&compare, "compare", "", "also run the first setup on other builds, NAME=PATH[,NAME=PATH…] (e.g. before=bin/loremnews-old): a change's before and after in one run, with --interleave")
	fs.twin("compare", "LOREM_BENCH_COMPARE")
	fs.StringVar(&cfg.Action, "action", "balanced", "benchmarking action to load")
	fs.IntVar(&cfg.Concurrency, "c", 20, "concurrent connections in the main runs")
	fs.DurationVar(&cfg.Duration, "z", 10*time.Second, "duration of each main run")
	fs.IntVar(&cfg.Runs, "runs", 3, "main runs per setup")
	fs.BoolVar(&sweep, "sweep", false, "after the main runs, sweep the concurrency levels")
	fs.StringVar(&levels, "sweep-levels", "1,2,4,8,16,32,64,128,256", "concurrency levels of the sweep")
	fs.DurationVar(&cfg.SweepDuration, "sweep-duration", 5*time.Second, "duration of each sweep level")
	fs.StringVar(&scenarios, "scenarios", "", "extra runs after the main ones, e.g. balanced@256,post_create@20 (ACTION@CONCURRENCY, -z each); \"actions\" = the seven single actions at -c plus balanced and write_heavy at 256")
	fs.StringVar(&pointRead, "point-read", "", "at the end, the trivial read on split (or the first setup): the ceiling and then POST /benchmarking/point_read at these concurrencies, -z each, e.g. 1,5,10")
	fs.BoolVar(&cfg.Interleave, "interleave", false, "start every setup's server at once and take turns run by run, so machine drift falls on all setups alike")
	fs.BoolVar(&cfg.Ceiling, "ceiling", true, "first measure the ceiling: the same binary's trivial handler, same load")
	fs.BoolVar(&quick, "quick", false, "a one-minute version: 3 runs of 3 s per setup, no sweep")
	fs.StringVar(&out, "out", "", "directory for the reports (default benchmarks/DATE-ACTION)")
	fs.BoolVar(&keepWork, "keep-work", false, "keep the databases and server logs (their folder is printed)")
	fs.StringVar(&render, "render", "", "run nothing: render DIR/results.json again into DIR/report.md and report.html")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the data set")
	fs.IntVar(&cfg.Users, "users", 100, "users in the data set")
	fs.IntVar(&cfg.Posts, "posts", 1000, "posts in the data set")
	if err := fs.parse(args); err != nil {
		return err
	}
	if render != "" {
		rep, err := bench.ReadReport(filepath.Join(render, "results.json"))
		if err != nil {
			return err
		}
		return writeReports(render, rep, false, stdout)
	}
	if quick {
		cfg.Runs, cfg.Duration, sweep = 3, 3*time.Second, false
	}
	if binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		binary = exe
	}
	if targets != "" {
		for _, name := range strings.Split(targets, ",") {
			switch name = strings.TrimSpace(name); name {
			case "sqlite":
				cfg.Setups = append(cfg.Setups, bench.Setup{Name: "sqlite", Binary: binary, Profile: string(sqlite.ProfileSplit),
					Note: "The default SQLite setup (profile split)."})
			case "postgres":
				cfg.Setups = append(cfg.Setups, bench.Setup{Name: "postgres", Binary: binary, Postgres: true})
			case "postgres-async":
				cfg.Setups = append(cfg.Setups, bench.Setup{Name: "postgres-async", Binary: binary, Postgres: true,
					ServeArgs: []string{"--pg-synchronous-commit", "off"},
					Note:      "PostgreSQL with synchronous_commit=off for the app: commits are not flushed before the response, the durability SQLite's synchronous=NORMAL has."})
			default:
				return &usageError{msg: fmt.Sprintf("unknown target %q in --targets (want sqlite, postgres, postgres-async)", name), cmd: fs.Name()}
			}
		}
	} else {
		for _, name := range strings.Split(setups, ",") {
			name = strings.TrimSpace(name)
			if name == "postgres" {
				cfg.Setups = append(cfg.Setups, bench.Setup{Name: name, Binary: binary, Postgres: true})
				continue
			}
			if !sqlite.ValidProfile(name) {
				return &usageError{msg: fmt.Sprintf("unknown setup %q in --setups (want some of %s, postgres)", name, strings.Join(sqlite.ProfileNames(), ", ")), cmd: fs.Name()}
			}
			cfg.Setups = append(cfg.Setups, bench.Setup{Name: name, Binary: binary, Profile: name, Note: talkSteps[name]})
		}
	}
	if cfg.PostgresURL != "" {
		if err := postgres.CheckURL(cfg.PostgresURL); err != nil || !postgres.IsURL(cfg.PostgresURL) {
			return &usageError{msg: fmt.Sprintf("--postgres %q is not a postgres:// URL", cfg.PostgresURL), cmd: fs.Name()}
		}
	}
	if plainBinary != "" {
		if _, err := os.Stat(plainBinary); err != nil {
			return &usageError{msg: fmt.Sprintf("--plain-binary: %v", err), cmd: fs.Name()}
		}
		plainBinary, _ = filepath.Abs(plainBinary)
		cfg.Setups = append(cfg.Setups, bench.Setup{Name: "split-plain", Binary: plainBinary, Profile: string(sqlite.ProfileSplit),
			Note: "The split profile on a binary built without SQLite's recommended compile-time options (make build-plain); every other setup has them, the talk's step 02 (branch 02-set-compile-time-flags)."})
	}
	if compare != "" {
		for _, c := range strings.Split(compare, ",") {
			name, path, ok := strings.Cut(strings.TrimSpace(c), "=")
			if !ok || name == "" || path == "" {
				return &usageError{msg: fmt.Sprintf("bad --compare entry %q: want NAME=PATH", c), cmd: fs.Name()}
			}
			if _, err := os.Stat(path); err != nil {
				return &usageError{msg: fmt.Sprintf("--compare %s: %v", name, err), cmd: fs.Name()}
			}
			path, _ = filepath.Abs(path)
			// The first setup again, on the other build.
			other := cfg.Setups[0]
			other.Name, other.Binary = name, path
			other.Note = fmt.Sprintf("Setup %s on another build of loremnews (%s).", cfg.Setups[0].Name, filepath.Base(path))
			cfg.Setups = append(cfg.Setups, other)
		}
	}
	if sweep {
		for _, l := range strings.Split(levels, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(l))
			if err != nil || n < 1 {
				return &usageError{msg: fmt.Sprintf("bad --sweep-levels entry %q", l), cmd: fs.Name()}
			}
			cfg.Sweep = append(cfg.Sweep, n)
		}
	}
	for _, l := range strings.Split(pointRead, ",") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return &usageError{msg: fmt.Sprintf("bad --point-read entry %q (want concurrencies, e.g. 1,5,10)", l), cmd: fs.Name()}
		}
		cfg.PointRead = append(cfg.PointRead, n)
	}
	if scenarios == "actions" {
		scenarios = fmt.Sprintf("post_create@%[1]d,comment_create@%[1]d,post_destroy@%[1]d,comment_destroy@%[1]d,post_show@%[1]d,posts_index@%[1]d,user_show@%[1]d,balanced@256,write_heavy@256", cfg.Concurrency)
	}
	for _, sc := range strings.Split(scenarios, ",") {
		if sc = strings.TrimSpace(sc); sc == "" {
			continue
		}
		action, c, ok := strings.Cut(sc, "@")
		n, err := strconv.Atoi(c)
		if !ok || err != nil || n < 1 || action == "" {
			return &usageError{msg: fmt.Sprintf("bad --scenarios entry %q (want ACTION@CONCURRENCY)", sc), cmd: fs.Name()}
		}
		cfg.Scenarios = append(cfg.Scenarios, bench.Scenario{Action: action, Concurrency: n})
	}
	if cfg.Runs < 1 || cfg.Concurrency < 1 || cfg.Duration <= 0 || cfg.Users < 1 || cfg.Posts < 1 {
		return &usageError{msg: "--runs, -c, -z, --users and --posts must be positive", cmd: fs.Name()}
	}
	if out == "" {
		out = freshReportDir(filepath.Join("benchmarks", time.Now().UTC().Format("2006-01-02")+"-"+cfg.Action))
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if keepWork {
		dir, err := os.MkdirTemp("", "loremnews-bench-")
		if err != nil {
			return err
		}
		cfg.WorkDir = dir
		fmt.Fprintf(stderr, "bench: databases and server logs in %s\n", dir)
	}
	cfg.Log = stderr

	rep, err := bench.Execute(ctx, cfg, "loremnews bench "+strings.Join(quoteArgs(args), " "))
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
