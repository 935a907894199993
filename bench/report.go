package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// fmtSeconds shows a latency in the unit that reads best.
func fmtSeconds(s float64) string {
	switch {
	case math.IsNaN(s):
		return "–"
	case s >= 1:
		return fmt.Sprintf("%.2f s", s)
	case s >= 0.01:
		return fmt.Sprintf("%.1f ms", s*1000)
	case s >= 0.001:
		return fmt.Sprintf("%.2f ms", s*1000)
	default:
		return fmt.Sprintf("%.0f µs", s*1e6)
	}
}

// runColumns are the comparison table's latency columns.
var runColumns = []struct {
	title string
	value func(RunResult) float64
}{
	{"avg", func(r RunResult) float64 { return orNaN(r.measured(), r.Average) }},
	{"p50", func(r RunResult) float64 { return r.Percentile(50) }},
	{"p90", func(r RunResult) float64 { return r.Percentile(90) }},
	{"p99", func(r RunResult) float64 { return r.Percentile(99) }},
	{"p99.9", func(r RunResult) float64 { return r.Percentile(99.9) }},
	{"slowest", func(r RunResult) float64 { return orNaN(r.measured(), r.Slowest) }},
}

// orNaN is v if ok, else NaN (shown as "–"): a latency no request had.
func orNaN(ok bool, v float64) float64 {
	if !ok {
		return math.NaN()
	}
	return v
}

// meanRun averages the runs column by column: successful req/s, the
// latency columns, and failed requests.
func meanRun(runs []RunResult) (rps float64, lat []float64, nonOK float64) {
	lat = make([]float64, len(runColumns))
	if len(runs) == 0 {
		return 0, lat, 0
	}
	for _, r := range runs {
		rps += r.OKPerSec()
		nonOK += float64(r.Failures)
		for i, c := range runColumns {
			lat[i] += c.value(r)
		}
	}
	n := float64(len(runs))
	for i := range lat {
		lat[i] /= n
	}
	return rps / n, lat, nonOK / n
}

// table is a report table, rendered to both Markdown and HTML.
type table struct {
	Title string
	Note  string
	Head  []string
	Rows  []tableRow
}

type tableRow struct {
	Cells []string
	Bold  bool // a summary row
}

// Title says in one line what the report compares, and under which load.
func (r *Report) Title() string {
	c := r.Config
	names := make([]string, 0, len(r.Setups))
	for _, s := range r.Setups {
		names = append(names, s.Setup.Name)
	}
	return fmt.Sprintf("Lorem News: %s on %s, c=%d, %d × %s", strings.Join(names, " vs "), c.Action, c.Concurrency, c.Runs, c.Duration)
}

// intro is the report's opening paragraphs (plain text, no markup): what
// the run showed, then when, where and how it ran.
func (r *Report) intro() []string {
	c, m := r.Config, r.Machine
	return append(r.summary(),
		fmt.Sprintf("Run %s → %s (%s).", r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Finished.UTC().Format("15:04 MST"), r.Finished.Sub(r.Started).Round(time.Second)),
		fmt.Sprintf("Machine: %d cores (%s), %d GiB, %s, kernel %s; %s; SQLite %s. The load generator (loremnews load, inside the bench process) and the servers share these cores, so compare setups within this report, as ratios.",
			m.Cores, m.CPU, m.MemoryGiB, m.OS, m.Kernel, m.Go, m.SQLite),
		fmt.Sprintf("Method (the original talk's): for each setup a freshly seeded database (%d users, %d posts, seed %d) and its own server process, then %d runs of POST /benchmarking/%s with %d concurrent connections for %s each, without reseeding in between. Redirects are followed, so a write costs a POST and a GET, as with hey and oha.",
			c.Users, c.Posts, c.Seed, c.Runs, c.Action, c.Concurrency, c.Duration),
		"Throughput counts successful requests only (a 2xx at the end of the redirects); failed requests (error statuses such as 503, and connection errors) are counted apart, and latencies are those of successful requests.",
		order(c),
	)
}

func (r *Report) tables() []table {
	// The server's cost shows where it was measured: not in results
	// written before it was.
	cost := costColumns(r.hasServerCost())
	out := []table{r.resultsTable(cost), r.waitsTable()}
	if t, ok := r.processesTable(); ok {
		out = append(out, t)
	}
	if len(r.Config.Scenarios) > 0 {
		out = append(out, r.scenariosTable(cost))
	}
	if pr := r.PointRead; pr != nil {
		out = append(out, r.pointReadTable(pr))
	}
	out = append(out, r.sweepTables()...)
	if pg := r.Postgres; pg != nil {
		out = append(out, postgresTable(pg))
	}
	return out
}

// costColumns says whether the tables show the server's CPU per request
// and its memory.
type costColumns bool

func (cost costColumns) head(head ...string) []string {
	if cost {
		head = append(head, "server CPU/req", "server RSS")
	}
	return head
}

func (cost costColumns) cells(cpuPerOK, rss, anon float64) []string {
	if !cost {
		return nil
	}
	return []string{fmtMicros(cpuPerOK), fmtRSS(rss, anon)}
}

// resultsTable is every main run of every setup, and each setup's mean.
func (r *Report) resultsTable(cost costColumns) table {
	// "% failed" stands next to the successful req/s, so that no one takes a
	// failing setup's successful req/s for a win.
	results := table{Title: "Results", Head: cost.head("setup", "run", "successful req/s", "% failed", "% of ceiling", "failed", "avg", "p50", "p90", "p99", "p99.9", "slowest")}
	if r.Ceiling != nil {
		results.Note = fmt.Sprintf("Ceiling: the same binary's POST /benchmarking/ceiling (no database, no template), same generator and concurrency, in this run: %.0f req/s, p50 %s, p99 %s.",
			r.Ceiling.OKPerSec(), fmtSeconds(r.Ceiling.Percentile(50)), fmtSeconds(r.Ceiling.Percentile(99)))
	}
	if cost {
		results.Note = strings.TrimSpace(results.Note + " " + r.costNote())
	}
	for _, s := range r.Setups {
		if s.Error != "" && len(s.Runs) == 0 {
			results.Rows = append(results.Rows, tableRow{Cells: []string{s.Setup.Name, "–", "failed: " + s.Error}})
			continue
		}
		for i, run := range s.Runs {
			name := ""
			if i == 0 {
				name = s.Setup.Name
			}
			cells := []string{name, fmt.Sprint(i + 1), fmt.Sprintf("%.0f", run.OKPerSec()), fmtShare(run.ErrorRate()), r.ofCeiling(run.OKPerSec()), statusSummary(run)}
			for _, col := range runColumns {
				cells = append(cells, fmtSeconds(col.value(run)))
			}
			cells = append(cells, cost.cells(run.CPUPerOK(), run.RSS(), run.AnonRSS())...)
			results.Rows = append(results.Rows, tableRow{Cells: cells})
		}
		rps, lat, nonOK := meanRun(s.Runs)
		cells := []string{"", "mean", fmt.Sprintf("%.0f", rps), fmtShare(statOf(s.Setup.Name, s.Runs).failShare), r.ofCeiling(rps), fmt.Sprintf("%.0f", nonOK)}
		for _, v := range lat {
			cells = append(cells, fmtSeconds(v))
		}
		cells = append(cells, cost.cells(meanOf(s.Runs, RunResult.CPUPerOK), meanOf(s.Runs, RunResult.RSS), meanOf(s.Runs, RunResult.AnonRSS))...)
		results.Rows = append(results.Rows, tableRow{Cells: cells, Bold: true})
	}

	return results
}

// waitsTable is how long each setup's writes waited for their turn.
func (r *Report) waitsTable() table {
	c := r.Config
	waits := table{
		Title: "How long writes waited for their turn and SQLite's lock",
		Note: fmt.Sprintf("From each server's loremnews_write_wait_seconds histogram over the %d main runs: the time from asking to write until BEGIN returned "+
			"(the writer queue plus SQLite's lock; for naive and immediate this includes SQLite's busy-handler sleeps, for enhanced the sleeps of the gem's handler, counted as lock retries). "+
			"Percentiles are interpolated within buckets about 1.6× wide.", c.Runs),
		Head: []string{"setup", "writes", "mean", "p50", "p90", "p99", "p99.9", "longest", "queue max depth", "SQLITE_BUSY errors", "lock retries"},
	}
	for _, s := range r.Setups {
		w := s.WriteWait
		waits.Rows = append(waits.Rows, tableRow{Cells: []string{s.Setup.Name, fmt.Sprintf("%.0f", w.Count), fmtSeconds(w.Mean), fmtSeconds(w.P50),
			fmtSeconds(w.P90), fmtSeconds(w.P99), fmtSeconds(w.P999), fmtLongest(s.WriteWaitMax), fmt.Sprintf("%.0f", s.QueueMaxDepth), fmt.Sprintf("%.0f", s.BusyErrors), fmt.Sprintf("%.0f", s.BusyRetries)}})
	}
	if r.Postgres != nil {
		waits.Note += " For PostgreSQL the wait is for a pooled connection and BEGIN (row locks are waited for inside the transaction, and not counted here); " +
			"its lock retries column counts transactions started over (a random row deleted meanwhile, or a deadlock)."
	}
	return waits
}

// fmtLongest shows the longest write wait, "–" where the server does not
// measure it (a baseline, or results written before it was).
func fmtLongest(v float64) string {
	if v <= 0 {
		return "–"
	}
	return fmtSeconds(v)
}

// processesTable is, for the setups served by several processes, each
// process's share of the requests and of the commits, and the longest
// waits: whether the processes take turns at writing fairly.
func (r *Report) processesTable() (table, bool) {
	t := table{
		Title: "Several processes on one file: who wrote, and the longest waits",
		Note: "For each setup served by several processes (serve --workers), each process's share of the requests answered in the main runs and of the transactions committed; " +
			"a process that lost the race for SQLite's lock would commit less than its share of the requests. The longest waits are over the server's life: " +
			"of a write from asking to write until its BEGIN returned, and of a transaction for another process's turn (the queue across processes; 0 where writers poll for the lock).",
		Head: []string{"setup", "process", "share of requests", "share of commits", "commits ÷ requests", "mean write wait", "longest write wait", "longest turn wait"},
	}
	for _, s := range r.Setups {
		for i, p := range s.Processes {
			name, longest, turn := "", "", ""
			if i == 0 {
				name, longest, turn = s.Setup.Name, fmtSeconds(s.WriteWaitMax), fmtSeconds(s.TurnWaitMax)
			}
			share := func(v float64) string {
				if v < 0 {
					return "–"
				}
				return fmt.Sprintf("%.1f %%", 100*v)
			}
			ratio := "–"
			if p.Requests > 0 && p.Commits >= 0 {
				ratio = fmt.Sprintf("%.2f", p.Commits/p.Requests)
			}
			if s.WriteWaitMax == 0 {
				longest = "–" // not measured: a database/sql baseline
			}
			wait := "–"
			if p.MeanWriteWait >= 0 {
				wait = fmtSeconds(p.MeanWriteWait)
			}
			t.Rows = append(t.Rows, tableRow{Cells: []string{name, p.Worker, share(p.Requests), share(p.Commits), ratio, wait, longest, turn}})
		}
	}
	return t, len(t.Rows) > 0
}

// scenariosTable is the runs after the main ones, one per scenario.
func (r *Report) scenariosTable(cost costColumns) table {
	c := r.Config
	sc := table{Title: "Scenarios", Note: fmt.Sprintf("One run of %s each, each on a freshly seeded database and server. post_destroy and comment_destroy stop after "+
		"deleting half the seeded posts (or comments), so the table never runs out.", c.Duration),
		Head: cost.head("setup", "action", "c", "successful req/s", "% failed", "% of ceiling", "failed", "p50", "p99", "p99.9", "slowest")}
	if cost {
		sc.Note += " " + r.costNote()
	}
	for _, s := range r.Setups {
		for i, run := range s.Scenarios {
			name := ""
			if i == 0 {
				name = s.Setup.Name
			}
			sc.Rows = append(sc.Rows, tableRow{Cells: append([]string{name, run.Action, fmt.Sprint(run.Concurrency), fmt.Sprintf("%.0f", run.OKPerSec()),
				fmtShare(run.ErrorRate()), r.ofCeiling(run.OKPerSec()), statusSummary(run), fmtSeconds(run.Percentile(50)), fmtSeconds(run.Percentile(99)), fmtSeconds(run.Percentile(99.9)),
				fmtSeconds(orNaN(run.measured(), run.Slowest))}, cost.cells(run.CPUPerOK(), run.RSS(), run.AnonRSS())...)})
		}
	}
	return sc
}

// postgresTable is the PostgreSQL server's settings.
func postgresTable(pg *PostgresInfo) table {
	t := table{Title: "PostgreSQL server", Note: "The postgres setup ran on " + pg.Where + ".", Head: []string{"setting", "value"}}
	keys := make([]string, 0, len(pg.Settings))
	for k := range pg.Settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t.Rows = append(t.Rows, tableRow{Cells: []string{k, pg.Settings[k]}})
	}
	return t
}

// sweepTables are the concurrency sweep's: req/s, p99 and failures by
// level, or none if there was no sweep.
func (r *Report) sweepTables() []table {
	c := r.Config
	if len(c.Sweep) == 0 {
		return nil
	}
	var out []table
	for _, t := range []struct {
		title string
		cell  func(RunResult) string
	}{
		{"Concurrency sweep: successful requests/sec", func(r RunResult) string { return fmt.Sprintf("%.0f", r.OKPerSec()) }},
		{"Concurrency sweep: p99 latency of successful requests", func(r RunResult) string { return fmtSeconds(r.Percentile(99)) }},
		{"Concurrency sweep: failed requests (error statuses and connection errors)", func(r RunResult) string { return fmt.Sprint(r.Failures) }},
	} {
		tb := table{Title: t.title, Head: []string{"setup"},
			Note: fmt.Sprintf("%s per level, on the same database, after the main runs.", c.SweepDuration)}
		for _, lvl := range c.Sweep {
			tb.Head = append(tb.Head, fmt.Sprintf("c=%d", lvl))
		}
		for _, s := range r.Setups {
			cells := []string{s.Setup.Name}
			for i := range c.Sweep {
				if i < len(s.Sweep) {
					cells = append(cells, t.cell(s.Sweep[i]))
				} else {
					cells = append(cells, "–")
				}
			}
			tb.Rows = append(tb.Rows, tableRow{Cells: cells})
		}
		out = append(out, tb)
	}
	return out
}

// costNote explains the server cost columns.
func (r *Report) costNote() string {
	note := "Server CPU/req: the server process's user and system CPU time during the run (from /proc/PID/stat) divided by its successful requests (so the CPU failed requests took counts too); " +
		"server RSS: its resident memory at the end of the run (VmRSS; the peak since start, VmHWM, is in results.json), and in parentheses the part that is its own (RssAnon): the rest is pages of files it maps, such as the database read through sqlitedb's memory map, which are the kernel's page cache. The load generator's CPU is not included."
	if r.Postgres != nil {
		note += " For PostgreSQL setups only the loremnews server process is measured: the PostgreSQL server's own CPU and memory are not included."
	}
	return note
}

// hasServerCost reports whether any run of the main runs or the scenarios
// measured the server's cost.
func (r *Report) hasServerCost() bool {
	for _, s := range r.Setups {
		for _, run := range append(slices.Clone(s.Runs), s.Scenarios...) {
			if run.Server != nil {
				return true
			}
		}
	}
	return false
}

// meanOf averages value over the runs that have it; NaN if none has.
func meanOf(runs []RunResult, value func(RunResult) float64) float64 {
	sum, n := 0.0, 0
	for _, r := range runs {
		if v := value(r); !math.IsNaN(v) {
			sum, n = sum+v, n+1
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// ofCeiling shows rps as a percentage of the ceiling, if measured.
func (r *Report) ofCeiling(rps float64) string {
	if r.Ceiling == nil || r.Ceiling.OKPerSec() == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f %%", 100*rps/r.Ceiling.OKPerSec())
}

// fieldReport is the published trivial-read benchmark the point_read table
// stands beside: successful req/s by concurrency.
var fieldReport = map[int]float64{1: 14602.535, 5: 21027.704, 10: 21186.662}

// pointReadTable shows the trivial read against the ceiling at the same
// concurrency, beside the field report's figures.
func (r *Report) pointReadTable(pr *PointReadResult) table {
	t := table{
		Title: "The trivial read: point_read against the ceiling",
		Note: fmt.Sprintf("POST /benchmarking/point_read reads one random user by id and answers \"Hello NAME!\" as text/plain: one indexed read, no write. "+
			"Measured on one freshly seeded %s server, %s per level, right after the ceiling at the same concurrency. "+
			"Beside it, a field report that ran the same request shape (a random row by id from 500, text/plain; a single-threaded Crystal server "+
			"on crystal-sqlite3, measured with plow for 10 s on another machine; Luis Lavena, \"Testing Crystal SQLite3 PRAGMAs usage and some HTTP benchmarks\", "+
			"2023-02-11, https://luislavena.info/til/testing-crystal-sqlite3-pragmas-and-some-http-benchmarks/). Compare the shares, not the absolute numbers.",
			pr.Setup, r.Config.Duration),
		Head: []string{"c", "ceiling req/s", "point_read successful req/s", "% of ceiling", "failed", "p50", "p99", "field report req/s"},
	}
	if pr.Error != "" {
		t.Note += " Error: " + pr.Error
	}
	for _, l := range pr.Levels {
		pct := "–"
		if c := l.Ceiling.OKPerSec(); c > 0 {
			pct = fmt.Sprintf("%.1f %%", 100*l.Read.OKPerSec()/c)
		}
		field := "–"
		if v, ok := fieldReport[l.Concurrency]; ok {
			field = fmt.Sprintf("%.0f", v)
		}
		t.Rows = append(t.Rows, tableRow{Cells: []string{fmt.Sprint(l.Concurrency), fmt.Sprintf("%.0f", l.Ceiling.OKPerSec()), fmt.Sprintf("%.0f", l.Read.OKPerSec()),
			pct, statusSummary(l.Read), fmtSeconds(l.Read.Percentile(50)), fmtSeconds(l.Read.Percentile(99)), field}})
	}
	return t
}

// setupLines describes each setup (plain text).
func (r *Report) setupLines() []string {
	var out []string
	for _, s := range r.Setups {
		bin := "loremnews"
		if s.Setup.Binary != "" {
			bin = filepath.Base(s.Setup.Binary)
		}
		args := strings.Join(append([]string{"serve", setupFlag(s.Setup.Binary), s.Setup.SQLiteSetup}, s.Setup.ServeArgs...), " ")
		line := fmt.Sprintf("%s: %s %s; SQLite %s.", s.Setup.Name, bin, args, s.SQLite)
		if s.Setup.Postgres {
			args = strings.Join(append([]string{"serve", "--db", "postgres://…"}, s.Setup.ServeArgs...), " ")
			line = fmt.Sprintf("%s: %s %s (a fresh database on the PostgreSQL server below, seeded by the same binary).", s.Setup.Name, bin, args)
		}
		if s.Setup.Note != "" {
			line += " " + s.Setup.Note
		}
		if s.Error != "" {
			line += " Error: " + s.Error
		}
		out = append(out, scrubPaths(line))
	}
	return out
}

func order(c Config) string {
	if c.Interleave {
		return "Order: interleaved. All servers were up at once, their databases read into the page cache once all were seeded, and took turns: run 1 of every setup, then run 2 in reverse order, and so on (sweep levels likewise), so a drift in the machine's speed falls on every setup alike."
	}
	return "Order: one setup after another (all its runs, then the next setup's); a drift in the machine's speed during the experiment falls on the later setups. Use --interleave to take turns."
}

// WriteMarkdown writes the report as Markdown. Its charts are the SVG files
// WriteCharts writes beside it, embedded by name.
func (r *Report) WriteMarkdown(w io.Writer) error {
	charts, err := r.charts()
	if err != nil {
		return err
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# %s\n\n", r.Title())
	for _, para := range r.intro() {
		p("%s\n\n", para)
	}
	p("Command:\n\n```\n%s\n```\n", scrubPaths(r.CommandLine))
	for _, t := range r.tables() {
		p("\n## %s\n\n", t.Title)
		if t.Note != "" {
			p("%s\n\n", t.Note)
		}
		p("| %s |\n|%s\n", strings.Join(t.Head, " | "), strings.Repeat("---|", len(t.Head)))
		for _, row := range t.Rows {
			cells := slices.Clone(row.Cells)
			for i := range cells {
				cells[i] = strings.ReplaceAll(cells[i], "|", "/")
				if row.Bold && cells[i] != "" {
					cells[i] = "**" + cells[i] + "**"
				}
			}
			for len(cells) < len(t.Head) {
				cells = append(cells, "")
			}
			p("| %s |\n", strings.Join(cells, " | "))
		}
	}
	if len(charts) > 0 {
		p("\n## Charts\n")
		for _, c := range charts {
			p("\n### %s\n\n![%s](%s)\n", c.Title, c.Title, c.File)
			if c.Note != "" {
				p("\n%s\n", c.Note)
			}
		}
	}
	p("\n## Setups\n\n")
	for i, line := range r.setupLines() {
		p("- %s\n", line)
		if logs := r.Setups[i].ServerLog; len(logs) > 0 {
			p("  - last server warnings:\n\n    ```\n")
			for _, l := range collapseLog(logs) {
				p("    %s\n", scrubPaths(truncateLine(l, 240)))
			}
			p("    ```\n")
		}
	}
	return nil
}

// absPath matches an absolute file path under one of the usual roots of a
// machine's files, where a word starts; a URL's path (/benchmarking/…,
// /posts/12) does not start with one of them.
var absPath = regexp.MustCompile(`(^|[\s=("'\x60])/(?:tmp|home|work|root|Users|var|opt|usr|private|mnt|srv|run|nix)/(?:[\w.+@-]+/)*([\w.+@-]+)`)

// scrubPaths replaces absolute file paths by their last component: a
// report shows which binary or file, not where it sat on one machine.
func scrubPaths(s string) string { return absPath.ReplaceAllString(s, "$1$2") }

// statusSummary shows the non-2xx count with its codes, e.g. "12 (503×12)".
func statusSummary(r RunResult) string {
	if r.Failures == 0 {
		return "0"
	}
	var parts []string
	for code, n := range r.StatusCodes {
		if !strings.HasPrefix(code, "2") {
			parts = append(parts, fmt.Sprintf("%s×%d", code, n))
		}
	}
	for kind, n := range r.Errors {
		parts = append(parts, fmt.Sprintf("%s×%d", kind, n))
	}
	slices.Sort(parts)
	return fmt.Sprintf("%d (%s)", r.Failures, strings.Join(parts, ", "))
}

// collapseLog prints each distinct log line once, in the order first seen,
// with the number of times it came when more than once ("20× level=WARN
// …"). Lines differ only by their time, which is left out of the
// comparison and of a repeated line.
func collapseLog(lines []string) []string {
	var order []string
	count := map[string]int{}
	for _, l := range lines {
		key := l
		if rest, ok := strings.CutPrefix(l, "time="); ok {
			if _, after, ok := strings.Cut(rest, " "); ok {
				key = after
			}
		}
		if count[key] == 0 {
			order = append(order, key)
		}
		count[key]++
	}
	out := make([]string, 0, len(order))
	for _, key := range order {
		if n := count[key]; n > 1 {
			out = append(out, fmt.Sprintf("%d× %s", n, key))
			continue
		}
		out = append(out, key)
	}
	return out
}

func truncateLine(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// trimmed is r as results.json keeps it, the same report to render and
// no more. No table or chart reads a run's linear histogram, and only the
// main runs are drawn as latency distributions and second by second: the
// sweep's levels, the scenarios, the ceiling and the point reads keep
// their figures without their log histogram and timeline.
func (r *Report) trimmed() *Report {
	slim := func(run RunResult, drawn bool) RunResult {
		run.Histogram = nil
		if !drawn {
			run.LogHistogram, run.Timeline = nil, nil
		}
		return run
	}
	slimAll := func(runs []RunResult, drawn bool) []RunResult {
		if runs == nil {
			return nil
		}
		out := make([]RunResult, len(runs))
		for i, run := range runs {
			out[i] = slim(run, drawn)
		}
		return out
	}
	t := *r
	if r.Ceiling != nil {
		c := slim(*r.Ceiling, false)
		t.Ceiling = &c
	}
	t.Setups = make([]*SetupResult, len(r.Setups))
	for i, s := range r.Setups {
		c := *s
		c.Runs, c.Sweep, c.Scenarios = slimAll(s.Runs, true), slimAll(s.Sweep, false), slimAll(s.Scenarios, false)
		t.Setups[i] = &c
	}
	if r.PointRead != nil {
		pr := *r.PointRead
		pr.Levels = make([]PointReadLevel, len(r.PointRead.Levels))
		for i, l := range r.PointRead.Levels {
			pr.Levels[i] = PointReadLevel{Concurrency: l.Concurrency, Ceiling: slim(l.Ceiling, false), Read: slim(l.Read, false)}
		}
		t.PointRead = &pr
	}
	return &t
}

// ReadReport reads the raw results a run wrote (results.json), so the
// Markdown and HTML can be rendered again without rerunning.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return &r, nil
}

// WriteJSON writes the raw results, absolute paths reduced to file names,
// kept to what the report and its charts read (see trimmed): they are
// committed with every make bench, and nothing else reads them.
func (r *Report) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(r.trimmed(), "", "  ")
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, scrubPaths(string(b))+"\n")
	return err
}
