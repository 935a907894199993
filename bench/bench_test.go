package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews/load"
	"github.com/loremnews/loremnews/pgcluster/pgtest"
)

func TestHistogramQuantile(t *testing.T) {
	// 100 observations: 50 in (0, 1], 40 in (1, 2], 10 in (2, 4].
	h := histogram{bounds: []float64{1, 2, 4, math.Inf(1)}, counts: []float64{50, 90, 100, 100}, sum: 150}
	for _, tc := range []struct{ q, want float64 }{
		{0.25, 0.5}, {0.5, 1}, {0.7, 1.5}, {0.95, 3}, {1, 4},
	} {
		if got := h.quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("q%.2f = %v, want %v", tc.q, got, tc.want)
		}
	}
	if h.mean() != 1.5 || h.count() != 100 {
		t.Errorf("mean %v count %v", h.mean(), h.count())
	}
	earlier := histogram{bounds: h.bounds, counts: []float64{50, 50, 50, 50}, sum: 20}
	d := h.minus(earlier)
	if d.count() != 50 || d.quantile(0.5) != 1.625 {
		t.Errorf("diff: count %v, median %v", d.count(), d.quantile(0.5))
	}
	if !math.IsNaN((histogram{}).quantile(0.5)) {
		t.Error("empty histogram has a quantile")
	}
}

func TestParseCounters(t *testing.T) {
	text := `# HELP loremnews_write_wait_seconds x
# TYPE loremnews_write_wait_seconds histogram
loremnews_write_wait_seconds_bucket{le="0.001"} 7
loremnews_write_wait_seconds_bucket{le="0.01"} 9
loremnews_write_wait_seconds_bucket{le="+Inf"} 10
loremnews_write_wait_seconds_sum 0.5
loremnews_write_wait_seconds_count 10
# TYPE loremnews_sqlite_busy_errors_total counter
loremnews_sqlite_busy_errors_total 3
# TYPE loremnews_sqlite_writer_queue_max_depth gauge
loremnews_sqlite_writer_queue_max_depth 19
# TYPE loremnews_postgres_write_retries_total counter
loremnews_postgres_write_retries_total 4
`
	c, err := parseCounters(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		field     string
		got, want float64
	}{
		{"write waits", c.writeWait.count(), 10}, {"busy errors", c.busyErrors, 3}, {"queue max", c.queueMax, 19},
		{"write wait sum", c.writeWait.sum, 0.5}, {"busy retries", c.busyRetries, 4},
	} {
		if f.got != f.want {
			t.Errorf("%s = %v, want %v", f.field, f.got, f.want)
		}
	}
}

// A server of several processes labels each sample with its worker: the
// counters are added up, the waits' histograms merged, the longest waits
// are the largest, and each worker's requests and commits are kept apart.
func TestParseCountersOfWorkers(t *testing.T) {
	scrape := func(reqs0, reqs1, commits0, commits1 int) string {
		return fmt.Sprintf(`# TYPE loremnews_write_wait_seconds histogram
loremnews_write_wait_seconds_bucket{worker="0",le="0.001"} 7
loremnews_write_wait_seconds_bucket{worker="0",le="+Inf"} %[5]d
loremnews_write_wait_seconds_sum{worker="0"} %[6]g
loremnews_write_wait_seconds_count{worker="0"} %[5]d
loremnews_write_wait_seconds_bucket{worker="1",le="0.001"} 1
loremnews_write_wait_seconds_bucket{worker="1",le="+Inf"} 5
loremnews_write_wait_seconds_sum{worker="1"} 0.25
loremnews_write_wait_seconds_count{worker="1"} 5
# TYPE loremnews_sqlite_busy_retries_total counter
loremnews_sqlite_busy_retries_total{worker="0"} 2
loremnews_sqlite_busy_retries_total{worker="1"} 3
# TYPE loremnews_sqlite_writer_wait_max_seconds gauge
loremnews_sqlite_writer_wait_max_seconds{worker="0"} 0.02
loremnews_sqlite_writer_wait_max_seconds{worker="1"} 0.03
# TYPE loremnews_sqlite_writer_commits_total counter
loremnews_sqlite_writer_commits_total{worker="0"} %[3]d
loremnews_sqlite_writer_commits_total{worker="1"} %[4]d
# TYPE loremnews_http_request_duration_seconds histogram
loremnews_http_request_duration_seconds_bucket{code="200",route="a",worker="0",le="+Inf"} %[1]d
loremnews_http_request_duration_seconds_sum{code="200",route="a",worker="0"} 1
loremnews_http_request_duration_seconds_count{code="200",route="a",worker="0"} %[1]d
loremnews_http_request_duration_seconds_bucket{code="200",route="a",worker="1",le="+Inf"} %[2]d
loremnews_http_request_duration_seconds_sum{code="200",route="a",worker="1"} 1
loremnews_http_request_duration_seconds_count{code="200",route="a",worker="1"} %[2]d
`, reqs0, reqs1, commits0, commits1, commits0, float64(commits0)/1000)
	}
	before, err := parseCounters(scrape(10, 10, 5, 5))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseCounters(scrape(70, 50, 35, 25))
	if err != nil {
		t.Fatal(err)
	}
	if after.writeWait.count() != 40 || math.Abs(after.writeWait.sum-0.285) > 1e-9 || after.busyRetries != 5 || after.writeWaitMax != 0.03 {
		t.Errorf("counters %+v: want 40 waits summing 0.285 s, 5 retries, longest wait 0.03", after)
	}
	got := shares(before, after)
	// Worker 0's 30 new writes waited 30 ms in all; worker 1's none.
	want := []ProcessShare{{Worker: "0", Requests: 0.6, Commits: 0.6, MeanWriteWait: 0.001}, {Worker: "1", Requests: 0.4, Commits: 0.4, MeanWriteWait: -1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("shares %v, want %v", got, want)
	}
	if one, _ := parseCounters("# TYPE loremnews_sqlite_writer_commits_total counter\nloremnews_sqlite_writer_commits_total 3\n"); shares(one, one) != nil {
		t.Errorf("a server of one process has shares")
	}
}

func sampleReport() *Report {
	run := func(c int, rps float64, fails int64) RunResult {
		requests := int64(rps*10) + fails
		var timeline []load.TimelinePoint
		for sec := range 11 {
			timeline = append(timeline, load.TimelinePoint{Second: sec, Successes: int64(rps) - int64(sec*10), Failures: fails / 10, P50: 0.015, P99: 0.05 + float64(sec)/1000})
		}
		return RunResult{Action: "balanced", Concurrency: c, Summary: load.Summary{
			Requests: requests, Successes: requests - fails, SuccessesPerSec: rps, RequestsPerSec: rps + float64(fails)/10,
			Average: 0.02, Slowest: 0.09, Failures: fails,
			Percentiles:  []load.PercentileValue{{Percentile: 50, Seconds: 0.015}, {Percentile: 90, Seconds: 0.03}, {Percentile: 99, Seconds: 0.05}, {Percentile: 99.9, Seconds: 0.07}},
			StatusCodes:  map[string]int64{"200": requests - fails, "503": fails},
			LogHistogram: []load.BucketValue{{UpperSeconds: 0.01, Count: 300}, {UpperSeconds: 0.02, Count: 600}, {UpperSeconds: 0.09, Count: 100}},
			Timeline:     timeline,
		}}
	}
	ceiling := run(20, 4000, 0)
	return &Report{
		Ceiling: &ceiling,
		Started: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), Finished: time.Date(2026, 11, 22, 3, 8, 0, 0, time.UTC),
		CommandLine: "loremnews bench --sweep --plain-binary /work/checkout/bin/loremnews-plain",
		Machine:     Machine{Cores: 2, CPU: "Test CPU", Go: "go1.26", SQLite: "3.54.1"},
		Config: Config{Action: "balanced", Concurrency: 20, Duration: 10 * time.Second, Runs: 2, Sweep: []int{1, 4}, SweepDuration: time.Second, Users: 100, Posts: 1000,
			Scenarios: []Scenario{{"post_show", 20}}, PointRead: []int{1, 5}},
		Setups: []*SetupResult{
			{Setup: Setup{Name: "naive", SQLiteSetup: "naive", Binary: "/home/someone/src/loremnews/bin/loremnews"}, Runs: []RunResult{run(20, 1000, 12), run(20, 1200, 8)},
				Sweep:      []RunResult{run(1, 300, 0), run(4, 900, 3)},
				BusyErrors: 20, ServerLog: []string{"level=WARN msg=unavailable db=/tmp/loremnews-bench-123/naive.sqlite3 path=/benchmarking/balanced"}},
			{Setup: Setup{Name: "split", SQLiteSetup: "split", Binary: "/home/someone/src/loremnews/bin/loremnews"}, Runs: []RunResult{
				withCost(run(20, 800, 0), 400, 40), withCost(run(20, 900, 0), 600, 50)},
				Sweep:     []RunResult{run(1, 250, 0), run(4, 700, 0)},
				WriteWait: WaitStats{Count: 500, P99: 0.04}, Scenarios: []RunResult{func() RunResult { r := withCost(run(20, 2000, 0), 150, 38.25); r.Action = "post_show"; return r }()}},
		},
		PointRead: &PointReadResult{Setup: "naive", Levels: []PointReadLevel{
			{Concurrency: 1, Ceiling: run(1, 8000, 0), Read: run(1, 6000, 0)},
			{Concurrency: 5, Ceiling: run(5, 16000, 0), Read: run(5, 10000, 0)},
		}},
	}
}

// withCost gives a run the server's cost: CPU µs per successful request
// and resident MiB.
func withCost(r RunResult, micros, mib float64) RunResult {
	r.Server = &ServerCost{CPUSeconds: micros * float64(r.Successes) / 1e6, CPUMicrosPerOK: micros, RSSMiB: mib, PeakRSSMiB: mib + 1}
	return r
}

func TestReportFormats(t *testing.T) {
	rep := sampleReport()
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Lorem News: naive vs split on balanced, c=20, 2 × 10s",
		"| naive | 1 | 1000 | 0.12 % | 25.0 % | 12 (503×12) | 20.0 ms | 15.0 ms | 30.0 ms | 50.0 ms | 70.0 ms | 90.0 ms |",
		"Ceiling: the same binary's POST /benchmarking/ceiling",
		"|  | **mean** | **1100** | **0.09 %** | **27.5 %** | **10** |", // mean successful req/s, the share failed over all runs, mean failed (an integer)
		"| split | 500 |", "c=4", "| split | post_show | 20 | 2000 | 0 % | 50.0 % | 0 |", "Test CPU", "loremnews bench --sweep --plain-binary loremnews-plain",
		"level=WARN msg=unavailable db=naive.sqlite3 path=/benchmarking/balanced",
		"| 1 | 8000 | 6000 | 75.0 % | 0 |", "| 14603 |", "| 5 | 16000 | 10000 | 62.5 % | 0 |", "| 21028 |",
		"![Successful req/s per setup: balanced at c=20](throughput.svg)", "(latency-split.svg)", "(timeline-throughput.svg)", "(sweep-errors.svg)",
		"- naive: loremnews serve --setup naive",
		// The server's cost: per run, the mean of the runs, per scenario;
		// "–" where it was not measured (results written before it was).
		"| 90.0 ms | – | – |", "| 90.0 ms | 400 µs | 40.0 MiB |", "| 90.0 ms | 600 µs | 50.0 MiB |", "| **90.0 ms** | **500 µs** | **45.0 MiB** |",
		"| 90.0 ms | 150 µs | 38.2 MiB |", "Server CPU/req: the server process's user and system CPU time",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q\n%s", want, md.String())
		}
	}
	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	h := html.String()
	charts, err := rep.charts()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(h, "<svg"); got != len(charts) {
		t.Errorf("html: %d inlined charts, want %d", got, len(charts))
	}
	if len(charts) < 10 {
		t.Errorf("%d charts, want at least 10", len(charts))
	}
	for _, unwanted := range []string{"<?xml", "<script"} {
		if strings.Contains(h, unwanted) {
			t.Errorf("html contains %s", unwanted)
		}
	}
	if strings.Contains(strings.ReplaceAll(h, "http://www.w3.org", ""), "http://") {
		t.Errorf("html refers to another site")
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Setups) != 2 || back.Setups[0].Runs[1].SuccessesPerSec != 1200 {
		t.Fatalf("json round trip: %v", err)
	}
	c := back.Setups[1].Runs[0].Server
	if c == nil {
		t.Fatal("json round trip lost the server's cost")
	}
	if c.CPUMicrosPerOK != 400 {
		t.Errorf("json round trip: CPU µs per request = %v, want 400", c.CPUMicrosPerOK)
	}
	if c.RSSMiB != 40 {
		t.Errorf("json round trip: RSS = %v MiB, want 40", c.RSSMiB)
	}
	if got := back.Setups[0].Runs[0].Server; got != nil {
		t.Errorf("json round trip: a run without the server's cost has %+v", got)
	}
	if !strings.Contains(js.String(), `"cpu_us_per_ok": 400`) {
		t.Errorf("json lacks \"cpu_us_per_ok\": 400")
	}
	for name, out := range map[string]string{"markdown": md.String(), "html": h, "json": js.String()} {
		for _, machine := range []string{"/home/someone", "/tmp/loremnews-bench", "/work/checkout"} {
			if strings.Contains(out, machine) {
				t.Errorf("%s shows the machine path %s", name, machine)
			}
		}
	}
}

// TestReportChartFiles: every chart report.md embeds is an SVG file written
// beside it, and none shows a machine path.
func TestReportChartFiles(t *testing.T) {
	dir := t.TempDir()
	if a := os.Getenv("LOREM_TEST_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "bench-report")
		os.MkdirAll(dir, 0o755)
	}
	rep := sampleReport()
	if err := rep.WriteCharts(dir); err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "report.md"), md.Bytes(), 0o644)
	embeds := regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`).FindAllStringSubmatch(md.String(), -1)
	if len(embeds) < 10 {
		t.Fatalf("%d charts embedded", len(embeds))
	}
	for _, e := range embeds {
		file := e[1]
		if filepath.IsAbs(file) || strings.Contains(file, "/") || !strings.HasSuffix(file, ".svg") {
			t.Errorf("embedded %q: want a file name beside the report", file)
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Errorf("embedded %s: %v", file, err)
			continue
		}
		if !bytes.Contains(b, []byte("<svg")) || bytes.Contains(b, []byte("/home/")) || bytes.Contains(b, []byte("/tmp/")) {
			t.Errorf("%s is not a clean SVG", file)
		}
	}
}

// TestExecuteEndToEnd builds the real binary and runs a tiny experiment:
// two setups, each seeded and served as its own process, one short run and
// a two-level sweep.
func TestExecuteEndToEnd(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "loremnews")
	build := exec.Command("go", "build", "-o", bin, "../cmd/loremnews")
	build.Env = os.Environ()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	var log bytes.Buffer
	cfg := Config{
		Setups:        []Setup{{Name: "naive", Binary: bin, SQLiteSetup: "naive"}, {Name: "split", Binary: bin, SQLiteSetup: "split"}},
		Action:        "balanced",
		Concurrency:   4,
		Duration:      700 * time.Millisecond,
		Runs:          1,
		Sweep:         []int{1, 8},
		SweepDuration: 300 * time.Millisecond,
		Ceiling:       true,
		Scenarios:     []Scenario{{"post_show", 2}},
		Seed:          1, Users: 20, Posts: 50,
		WorkDir: dir,
		Log:     &log,
	}
	for _, interleave := range []bool{false, true} {
		cfg.Interleave = interleave
		t.Run(fmt.Sprintf("interleave=%v", interleave), func(t *testing.T) { checkExecute(t, cfg, &log) })
	}
	// A setup whose server starts but cannot be measured (its /metrics is
	// off) fails alone, and its server is stopped, not left running.
	t.Run("unmeasurable setup", func(t *testing.T) {
		cfg := cfg
		cfg.Setups = []Setup{{Name: "blind", Binary: bin, SQLiteSetup: "split", ServeArgs: []string{"--metrics=false"}}, {Name: "split", Binary: bin, SQLiteSetup: "split"}}
		cfg.Interleave, cfg.Ceiling, cfg.Sweep, cfg.Scenarios = true, false, nil, nil
		rep, err := Execute(context.Background(), cfg, "test")
		if err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		if rep.Setups[0].Error == "" || rep.Setups[1].Error != "" || len(rep.Setups[1].Runs) != 1 {
			t.Fatalf("blind: %q; split: %q, %d runs", rep.Setups[0].Error, rep.Setups[1].Error, len(rep.Setups[1].Runs))
		}
		db := dbPathFor(dir, cfg.Setups[0])
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(db)) && bytes.Contains(b, []byte("serve")) {
				t.Errorf("the blind setup's server still runs: %s", p)
			}
		}
	})
	// SQLite and PostgreSQL side by side, PostgreSQL on a throw-away
	// cluster Execute starts and stops itself.
	t.Run("targets=sqlite,postgres", func(t *testing.T) {
		pgtest.SkipIfMissing(t)
		cfg := cfg
		cfg.Setups = []Setup{{Name: "sqlite", Binary: bin, SQLiteSetup: "split"}, {Name: "postgres", Binary: bin, Postgres: true}}
		cfg.Interleave, cfg.Ceiling = true, false
		rep, err := Execute(context.Background(), cfg, "test")
		if err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		for _, s := range rep.Setups {
			if s.Error != "" || len(s.Runs) != 1 {
				t.Fatalf("%s: error %q, %d runs, want 1\n%s", s.Setup.Name, s.Error, len(s.Runs), log.String())
			}
			if s.Runs[0].Requests == 0 {
				t.Errorf("%s: no requests", s.Setup.Name)
			}
			if s.Runs[0].Failures != 0 {
				t.Errorf("%s: %d failed, want 0\n%s", s.Setup.Name, s.Runs[0].Failures, log.String())
			}
			if len(s.Sweep) != 2 {
				t.Errorf("%s: %d sweep levels, want 2", s.Setup.Name, len(s.Sweep))
			}
			if s.WriteWait.Count == 0 {
				t.Errorf("%s: no write waits scraped", s.Setup.Name)
			}
			if c := s.Runs[0].Server; c == nil || c.CPUMicrosPerOK <= 0 || c.RSSMiB <= 0 {
				t.Errorf("%s: server cost %+v", s.Setup.Name, c)
			}
		}
		if rep.Postgres == nil || !strings.HasPrefix(rep.Postgres.Settings["server_version"], "1") || rep.Postgres.Settings["synchronous_commit"] != "on" {
			t.Fatalf("PostgreSQL info %+v", rep.Postgres)
		}
		var md bytes.Buffer
		if err := rep.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"## PostgreSQL server", "| shared_buffers |", "the PostgreSQL server's own CPU and memory are not included"} {
			if !strings.Contains(md.String(), want) {
				t.Errorf("markdown lacks %q:\n%s", want, md.String())
			}
		}
	})
}

func checkExecute(t *testing.T, cfg Config, log *bytes.Buffer) {
	rep, err := Execute(context.Background(), cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Setups {
		if s.Error != "" {
			t.Fatalf("%s: %s\n%s", s.Setup.Name, s.Error, log.String())
		}
		if len(s.Runs) != 1 || len(s.Scenarios) != 1 {
			t.Fatalf("%s: %d runs and %d scenarios, want 1 and 1", s.Setup.Name, len(s.Runs), len(s.Scenarios))
		}
		if s.Runs[0].Requests == 0 {
			t.Errorf("%s: no requests", s.Setup.Name)
		}
		if len(s.Sweep) != 2 {
			t.Errorf("%s: %d sweep levels, want 2", s.Setup.Name, len(s.Sweep))
		}
		if got := s.Scenarios[0].Action; got != "post_show" {
			t.Errorf("%s: scenario %q, want post_show", s.Setup.Name, got)
		}
		if s.WriteWait.Count == 0 {
			t.Errorf("%s: no write waits scraped", s.Setup.Name)
		}
		for _, r := range append(append(slices.Clone(s.Runs), s.Sweep...), s.Scenarios...) {
			c := r.Server
			if c == nil {
				t.Errorf("%s: %s@%d: no server cost", s.Setup.Name, r.Action, r.Concurrency)
				continue
			}
			for _, f := range []struct {
				field string
				ok    bool
			}{
				{"CPU seconds > 0", c.CPUSeconds > 0}, {"CPU µs per request > 0", c.CPUMicrosPerOK > 0},
				{"RSS > 0", c.RSSMiB > 0}, {"peak RSS ≥ RSS", c.PeakRSSMiB >= c.RSSMiB},
			} {
				if !f.ok {
					t.Errorf("%s: %s@%d: want %s, server cost %+v", s.Setup.Name, r.Action, r.Concurrency, f.field, c)
				}
			}
		}
		if !strings.HasPrefix(s.SQLite, "3.") {
			t.Errorf("%s: sqlite version %q", s.Setup.Name, s.SQLite)
		}
	}
	if split := rep.Setups[1]; split.Runs[0].Failures != 0 || split.BusyErrors != 0 {
		t.Errorf("split failed requests: %+v, busy errors %v", split.Runs[0].StatusCodes, split.BusyErrors)
	}
	if rep.Ceiling == nil || rep.Ceiling.Requests == 0 || rep.Ceiling.Failures != 0 {
		t.Errorf("ceiling %+v", rep.Ceiling)
	}
	if !regexp.MustCompile(`split: run 1: \d+ successful req/s, .*; server \d+ µs CPU/req, [\d.]+ MiB \([\d.]+ anon\) RSS`).MatchString(log.String()) {
		t.Errorf("the progress lines lack the server's cost:\n%s", log.String())
	}
	if rep.Machine.Cores == 0 || rep.Finished.Before(rep.Started) {
		t.Errorf("machine %+v", rep.Machine)
	}
}

func TestReadReport(t *testing.T) {
	var js bytes.Buffer
	if err := sampleReport().WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "results.json"), js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := ReadReport(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Setups) != 2 {
		t.Errorf("read back %d setups, want 2", len(rep.Setups))
	}
	if rep.Config.Duration != 10*time.Second {
		t.Errorf("read back duration %s, want 10s", rep.Config.Duration)
	}
	if rep.Ceiling == nil {
		t.Errorf("read back no ceiling")
	}
	var md bytes.Buffer
	rep.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "| naive | 1 | 1000 |") {
		t.Fatalf("re-rendered markdown:\n%s", md.String())
	}
	// Results written before the server's cost was measured render as
	// they did: no cost columns.
	old := strings.NewReplacer(`"server": {`, `"not_measured": {`).Replace(js.String())
	if err := os.WriteFile(filepath.Join(dir, "old.json"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err = ReadReport(filepath.Join(dir, "old.json")); err != nil || rep.Setups[1].Runs[0].Server != nil {
		t.Fatalf("read back results without the server's cost: %v", err)
	}
	md.Reset()
	rep.WriteMarkdown(&md)
	if strings.Contains(md.String(), "server CPU/req") || !strings.Contains(md.String(), "| split | 1 | 800 | 0 % | 20.0 % | 0 | 20.0 ms | 15.0 ms | 30.0 ms | 50.0 ms | 70.0 ms | 90.0 ms |\n") {
		t.Fatalf("results without the server's cost:\n%s", md.String())
	}
	if _, err := ReadReport(filepath.Join(dir, "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestRunWithoutSuccessHasNoLatency: a run in which every request failed
// shows no latency (not 0 µs) and no successful throughput.
func TestRunWithoutSuccessHasNoLatency(t *testing.T) {
	run := RunResult{Summary: load.Summary{Requests: 100, Failures: 100, RequestsPerSec: 5000,
		Percentiles: []load.PercentileValue{{Percentile: 50, Seconds: 0}}}}
	if got := fmtSeconds(run.Percentile(50)); got != "–" {
		t.Errorf("p50 shown as %q", got)
	}
	_, lat, failed := meanRun([]RunResult{run})
	for i, v := range lat {
		if got := fmtSeconds(v); got != "–" {
			t.Errorf("%s shown as %q", runColumns[i].title, got)
		}
	}
	if run.OKPerSec() != 0 || failed != 100 {
		t.Errorf("successful req/s %v, failed %v", run.OKPerSec(), failed)
	}
}

// TestResultsJSONKeepsWhatTheReportReads: results.json leaves out what no
// table or chart reads, and the report rendered from it is the report
// rendered from the full results, byte for byte, charts included.
func TestResultsJSONKeepsWhatTheReportReads(t *testing.T) {
	full := sampleReport()
	for _, s := range full.Setups {
		for _, runs := range [][]RunResult{s.Runs, s.Sweep, s.Scenarios} {
			for i := range runs {
				runs[i].Histogram = []load.BucketValue{{UpperSeconds: 0.01, Count: 1000}}
			}
		}
	}
	var js bytes.Buffer
	if err := full.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{`"histogram"`} {
		if strings.Contains(js.String(), gone) {
			t.Errorf("results.json keeps %s", gone)
		}
	}
	if n := strings.Count(js.String(), `"log_histogram"`); n != 4 {
		t.Errorf("results.json has %d log histograms, want the 4 main runs'", n)
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	read, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	render := func(r *Report) string {
		var b bytes.Buffer
		if err := r.WriteMarkdown(&b); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteHTML(&b); err != nil {
			t.Fatal(err)
		}
		charts, err := r.charts()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range charts {
			b.Write(c.SVG)
		}
		return b.String()
	}
	if render(read) != render(full) {
		t.Error("the report rendered from results.json differs from the one rendered from the full results")
	}
}
