package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews/load"
)

// summaryRun is a 10 s run at rps successful req/s with p99 and failed
// requests, all 503s.
func summaryRun(action string, c int, rps, p99 float64, failed int64) RunResult {
	requests := int64(rps*10) + failed
	codes := map[string]int64{"200": requests - failed}
	if failed > 0 {
		codes["503"] = failed
	}
	return RunResult{Action: action, Concurrency: c, Summary: load.Summary{
		Requests: requests, Successes: requests - failed, Failures: failed, SuccessesPerSec: rps,
		Percentiles: []load.PercentileValue{{Percentile: 50, Seconds: p99 / 3}, {Percentile: 90, Seconds: p99 / 2}, {Percentile: 99, Seconds: p99}, {Percentile: 99.9, Seconds: p99 * 2}},
		StatusCodes: codes,
	}}
}

func summarySetup(name string, runs ...RunResult) *SetupResult {
	s := &SetupResult{Setup: Setup{Name: name, SQLiteSetup: name}}
	for _, r := range runs {
		if r.Concurrency == 256 {
			s.Scenarios = append(s.Scenarios, r)
		} else {
			s.Runs = append(s.Runs, r)
		}
	}
	return s
}

// TestReportSummary: a report opens with sentences computed from its
// results: which setups failed and how often, which of the others served
// the most successful requests with what p99 against the talk's fix (or
// the runner-up), and, with scenarios, the same at the highest
// concurrency. A failing setup is never named for its throughput.
func TestReportSummary(t *testing.T) {
	cfg := Config{Action: "balanced", Concurrency: 20, Runs: 1, Duration: 10 * time.Second}
	withScenario := cfg
	withScenario.Scenarios = []Scenario{{"balanced", 256}}
	for _, tc := range []struct {
		name   string
		cfg    Config
		setups []*SetupResult
		want   []string
	}{
		{
			// The quick run that misled: naive's successful req/s were the
			// highest, but it failed most of its requests.
			name: "FailingSetupIsNoWinner",
			cfg:  cfg,
			setups: []*SetupResult{
				summarySetup("naive", summaryRun("balanced", 20, 1900, 0.030, 24000)),
				summarySetup("enhanced", summaryRun("balanced", 20, 1500, 0.050, 0)),
				summarySetup("split", summaryRun("balanced", 20, 1800, 0.032, 0)),
			},
			want: []string{"What this run showed, balanced at c=20: naive failed 56 % of its requests (503); the other 2 setups failed none. " +
				"Of the setups that failed less than 1 %, split served the most successful requests: 1,800 req/s, p99 32.0 ms, " +
				"1.20× the talk's fix, enhanced (1,500 req/s, p99 50.0 ms). " +
				"More successful req/s (naive's 1,900) came only from failing setups: a failed request is answered at once."},
		},
		{
			name: "NoFailuresNoTalksFix",
			cfg:  cfg,
			setups: []*SetupResult{
				summarySetup("sqlite", summaryRun("balanced", 20, 2600, 0.030, 0)),
				summarySetup("postgres", summaryRun("balanced", 20, 1300, 0.060, 0)),
			},
			want: []string{"What this run showed, balanced at c=20: no setup failed a request. " +
				"Of the setups that failed less than 1 %, sqlite served the most successful requests: 2,600 req/s, p99 30.0 ms, " +
				"2.00× the runner-up, postgres (1,300 req/s, p99 60.0 ms)."},
		},
		{
			name: "WithScenario",
			cfg:  withScenario,
			setups: []*SetupResult{
				summarySetup("naive", summaryRun("balanced", 20, 1200, 0.028, 17000), summaryRun("balanced", 256, 2100, 0.55, 11000)),
				summarySetup("enhanced", summaryRun("balanced", 20, 1500, 0.054, 0), summaryRun("balanced", 256, 1700, 0.45, 0)),
				summarySetup("batch", summaryRun("balanced", 20, 2400, 0.032, 0), summaryRun("balanced", 256, 4250, 0.119, 0)),
			},
			want: []string{
				"What this run showed, balanced at c=20: naive failed 59 % of its requests (503); the other 2 setups failed none. " +
					"Of the setups that failed less than 1 %, batch served the most successful requests: 2,400 req/s, p99 32.0 ms, " +
					"1.60× the talk's fix, enhanced (1,500 req/s, p99 54.0 ms).",
				"At c=256 (balanced, one run each): naive failed 34 % of its requests (503); the other 2 setups failed none. " +
					"Of the setups that failed less than 1 %, batch served the most successful requests: 4,250 req/s, p99 119.0 ms, " +
					"2.50× the talk's fix, enhanced (1,700 req/s, p99 450.0 ms).",
			},
		},
		{
			name: "EveryoneFails",
			cfg:  cfg,
			setups: []*SetupResult{
				summarySetup("naive", summaryRun("balanced", 20, 100, 0.030, 9000)),
				summarySetup("immediate", summaryRun("balanced", 20, 900, 0.030, 500)),
			},
			want: []string{"What this run showed, balanced at c=20: naive failed 90 % of its requests (503) and immediate failed 5.3 % of its requests (503). " +
				"No setup failed less than 1 % of its requests."},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Config: tc.cfg, Setups: tc.setups}
			got := r.summary()
			if len(got) != len(tc.want) {
				t.Fatalf("summary has %d paragraphs, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i := range tc.want {
				if got[i] != tc.want[i] {
					t.Errorf("paragraph %d:\n got %s\nwant %s", i+1, got[i], tc.want[i])
				}
			}
			var md bytes.Buffer
			if err := r.WriteMarkdown(&md); err != nil {
				t.Fatal(err)
			}
			if _, afterTitle, _ := strings.Cut(md.String(), "\n\n"); !strings.HasPrefix(afterTitle, tc.want[0]) {
				t.Errorf("the report does not open with the summary:\n%.600s", md.String())
			}
		})
	}
}

// TestCollapseLog: a server warning that came many times is shown once
// with its count; lines that differ only by their time are the same.
func TestCollapseLog(t *testing.T) {
	lines := []string{
		`time=2026-11-22T03:53:16.202Z level=WARN msg=unavailable err="touch random user"`,
		`time=2026-11-22T03:53:16.211Z level=WARN msg=unavailable err="create post"`,
		`time=2026-11-22T03:53:16.215Z level=WARN msg=unavailable err="touch random user"`,
		`time=2026-11-22T03:53:16.216Z level=WARN msg=unavailable err="touch random user"`,
		`level=ERROR msg=other`,
	}
	want := []string{
		`3× level=WARN msg=unavailable err="touch random user"`,
		`level=WARN msg=unavailable err="create post"`,
		`level=ERROR msg=other`,
	}
	got := collapseLog(lines)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("collapseLog:\n got %q\nwant %q", got, want)
	}
}

func TestFmtShare(t *testing.T) {
	for _, tc := range []struct {
		share float64
		want  string
	}{
		{0, "0 %"}, {0.59, "59 %"}, {0.01, "1 %"}, {0.053, "5.3 %"}, {0.0012, "0.12 %"}, {0.00001, "<0.01 %"},
	} {
		if got := fmtShare(tc.share); got != tc.want {
			t.Errorf("fmtShare(%v) = %q, want %q", tc.share, got, tc.want)
		}
	}
}
