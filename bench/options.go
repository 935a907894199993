package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/loremnews/loremnews/bench/setups"
	"github.com/loremnews/loremnews/postgres"
)

// The experiment's lists as a person writes them on the command line
// ("naive,split", "1,5,10", "balanced@256"), turned into a Config's parts.
// Each error names the entry that is wrong and what was expected.

// talkSteps says which step of the 2024 talk each setup reproduces (its
// demo app is the public repository fractaledmind/wrocloverb-2024, a
// branch per step), for the report's list of setups.
var talkSteps = map[string]string{
	"naive":     "The talk's step 00 (branch 00-baseline): Rails 7.1+'s defaults.",
	"enhanced":  "The talk's step 01 (branch 01-add-enhanced-adapter-gem): IMMEDIATE transactions and the gem's 60 µs busy handler.",
	"immediate": "IMMEDIATE with production pragmas and SQLite's own busy handler: step 01 without the gem's handler.",
	"fair":      "A writer queue and a constant 1 ms poll for the lock: the fairness the gem's handler aims at, in Go.",
	"split":     "The talk's step 03 (branch 03-isolate-read-and-write-connections): separate read and write pools; the default.",
	"batch":     "Not in the talk: split with every write coalesced (writes queued at one moment share a commit).",
	"durable":   "Not in the talk: split with synchronous=FULL, what a power-loss-proof commit costs.",
}

// ParseSetups turns a list of SQLite setup names and "postgres" into
// setups served by binary, in the order given.
func ParseSetups(list, binary string) ([]Setup, error) {
	var out []Setup
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "postgres" {
			out = append(out, Setup{Name: name, Binary: binary, Postgres: true})
			continue
		}
		if !setups.Valid(name) {
			return nil, fmt.Errorf("unknown setup %q in --setups (want some of %s, postgres)", name, strings.Join(setups.Names(), ", "))
		}
		out = append(out, Setup{Name: name, Binary: binary, SQLiteSetup: name, Note: talkSteps[name]})
	}
	return out, nil
}

// ParseTargets turns a list of databases to compare (sqlite, postgres,
// postgres-async) into setups served by binary.
func ParseTargets(list, binary string) ([]Setup, error) {
	var out []Setup
	for _, name := range strings.Split(list, ",") {
		switch name = strings.TrimSpace(name); name {
		case "sqlite":
			out = append(out, Setup{Name: "sqlite", Binary: binary, SQLiteSetup: setups.Split,
				Note: "The default SQLite setup (split)."})
		case "postgres":
			out = append(out, Setup{Name: "postgres", Binary: binary, Postgres: true})
		case "postgres-async":
			out = append(out, Setup{Name: "postgres-async", Binary: binary, Postgres: true,
				ServeArgs: []string{"--pg-synchronous-commit", "off"},
				Note:      "PostgreSQL with synchronous_commit=off for the app: commits are not flushed before the response, the durability SQLite's synchronous=NORMAL has."})
		default:
			return nil, fmt.Errorf("unknown target %q in --targets (want sqlite, postgres, postgres-async)", name)
		}
	}
	return out, nil
}

// PlainSetup is split on binary, a build without SQLite's compile-time
// options (make build-plain), which must exist.
func PlainSetup(binary string) (Setup, error) {
	if _, err := os.Stat(binary); err != nil {
		return Setup{}, fmt.Errorf("--plain-binary: %v", err)
	}
	binary, _ = filepath.Abs(binary)
	return Setup{Name: "split-plain", Binary: binary, SQLiteSetup: setups.Split,
		Note: "The split setup on a binary built without SQLite's recommended compile-time options (make build-plain); every other setup has them, the talk's step 02 (branch 02-set-compile-time-flags)."}, nil
}

// CompareSetups is first again on each build of a list of NAME=PATH
// entries: a change's before and after in one run.
func CompareSetups(first Setup, list string) ([]Setup, error) {
	var setups []Setup
	for _, c := range strings.Split(list, ",") {
		name, path, ok := strings.Cut(strings.TrimSpace(c), "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("bad --compare entry %q: want NAME=PATH", c)
		}
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("--compare %s: %v", name, err)
		}
		path, _ = filepath.Abs(path)
		other := first
		other.Name, other.Binary = name, path
		other.Note = fmt.Sprintf("Setup %s on another build of loremnews (%s).", first.Name, filepath.Base(path))
		setups = append(setups, other)
	}
	return setups, nil
}

// WorkerSetups is each setup at each number of serving processes of a
// list ("1,4,10": each setup as it is, then served by 4 processes, then by
// 10; serve --workers), named "NAME 4 processes". With pollToo, each SQLite
// setup of several processes is run again with their writers polling for
// SQLite's lock instead of taking turns ("NAME 4 processes polling").
func WorkerSetups(list []Setup, levels string, pollToo bool) ([]Setup, error) {
	return eachLevel(list, levels, "--workers", func(s Setup, k int) []Setup {
		s.Name = fmt.Sprintf("%s %d processes", s.Name, k)
		s.Workers = k
		s.Note = strings.TrimSpace(s.Note + fmt.Sprintf(" Served by %d processes on one file (serve --workers %d).", k, k))
		if !pollToo || s.Postgres || !onSqlitedb(s.SQLiteSetup) {
			return []Setup{s}
		}
		p := s
		p.Name += " polling"
		p.PollWriters = true
		p.Note += " Their writers poll for SQLite's lock every millisecond instead of taking turns (the database's _writers=poll)."
		return []Setup{s, p}
	})
}

// onSqlitedb reports whether a setup's writes go through package
// sqlitedb's writer, the one that queues across processes; the
// database/sql baselines poll (or sleep in a busy handler) whatever the
// DSN says.
func onSqlitedb(setup string) bool {
	return setup == "" || setup == setups.Split || setup == setups.Batch || setup == setups.Durable
}

// ScaledSetups is each setup again on data sets scales times larger (the
// list "1,100": each setup as it is, then again on 100 times the users and
// posts), named "NAME ×100".
func ScaledSetups(list []Setup, scales string) ([]Setup, error) {
	return eachLevel(list, scales, "--scales", func(s Setup, k int) []Setup {
		s.Name = fmt.Sprintf("%s ×%d", s.Name, k)
		s.Scale = k
		s.Note = strings.TrimSpace(s.Note + fmt.Sprintf(" On %d times the data set.", k))
		return []Setup{s}
	})
}

// eachLevel is every setup of list at each level of a list of whole
// numbers (flag names it in an error): at 1 as it is, above 1 as at
// gives it.
func eachLevel(list []Setup, levels, flag string, at func(Setup, int) []Setup) ([]Setup, error) {
	ks, err := ParseLevels(levels, flag)
	if err != nil {
		return nil, err
	}
	var out []Setup
	for _, k := range ks {
		for _, s := range list {
			if k > 1 {
				out = append(out, at(s, k)...)
			} else {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// ParseLevels turns a list of concurrencies ("1,5,10") into numbers, each
// at least 1; empty entries are skipped. flag names the list in errors.
func ParseLevels(list, flag string) ([]int, error) {
	var levels []int
	for _, l := range strings.Split(list, ",") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad %s entry %q (want whole numbers from 1, e.g. 1,5,10)", flag, l)
		}
		levels = append(levels, n)
	}
	return levels, nil
}

// ParseScenarios turns a list of ACTION@CONCURRENCY entries into scenarios;
// each action must be one of actions, the ones the server accepts. The word
// "actions" stands for each of singles (the single actions, not the mixes)
// at concurrency c, then the balanced and write_heavy mixes at 256.
func ParseScenarios(list string, c int, actions, singles []string) ([]Scenario, error) {
	if strings.TrimSpace(list) == "actions" {
		var out []Scenario
		for _, a := range singles {
			out = append(out, Scenario{Action: a, Concurrency: c})
		}
		return append(out, Scenario{"balanced", 256}, Scenario{"write_heavy", 256}), nil
	}
	var out []Scenario
	for _, sc := range strings.Split(list, ",") {
		if sc = strings.TrimSpace(sc); sc == "" {
			continue
		}
		action, conc, ok := strings.Cut(sc, "@")
		n, err := strconv.Atoi(conc)
		if !ok || err != nil || n < 1 || action == "" {
			return nil, fmt.Errorf("bad --scenarios entry %q (want ACTION@CONCURRENCY)", sc)
		}
		if err := CheckAction(action, actions); err != nil {
			return nil, fmt.Errorf("--scenarios %s: %w", sc, err)
		}
		out = append(out, Scenario{Action: action, Concurrency: n})
	}
	return out, nil
}

// CheckAction says whether the server answers POST /benchmarking/ACTION:
// one of actions, or the ceiling.
func CheckAction(action string, actions []string) error {
	if action == ActionCeiling || slices.Contains(actions, action) {
		return nil
	}
	return fmt.Errorf("unknown benchmarking action %q (want one of %s, %s)", action, strings.Join(actions, ", "), ActionCeiling)
}

// The endpoints the experiment loads for its own measurements.
const (
	// ActionCeiling is the trivial handler (no database, no template) that
	// measures what the machine and the load generator allow.
	ActionCeiling = "ceiling"
	// ActionPointRead is the trivial read: one random user by id, as text.
	ActionPointRead = "point_read"
)

// CheckPostgresURL checks the URL of the server for the postgres setups.
func CheckPostgresURL(url string) error {
	if err := postgres.CheckURL(url); err != nil || !postgres.IsURL(url) {
		return fmt.Errorf("--postgres %q is not a postgres:// URL", url)
	}
	return nil
}
