package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestParseBenchFlags: the command line becomes the experiment's config,
// the lists parsed by the bench package; nothing runs.
func TestParseBenchFlags(t *testing.T) {
	old := filepath.Join(t.TempDir(), "loremnews-old")
	if err := os.WriteFile(old, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := parseBenchFlags([]string{"--setups", "naive,split", "--compare", "before=" + old, "--quick", "-c", "7",
		"--scenarios", "actions", "--point-read", "1,5", "--sweep", "--out", "reports"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.cfg
	var names []string
	for _, s := range cfg.Setups {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"naive", "split", "before"}) || cfg.Setups[2].Binary != old || cfg.Setups[2].SQLiteSetup != "naive" {
		t.Errorf("setups %+v", cfg.Setups)
	}
	// --quick: 3 runs of 3 s and no sweep, whatever --sweep says.
	if cfg.Runs != 3 {
		t.Errorf("runs = %d, want 3", cfg.Runs)
	}
	if cfg.Duration != 3*time.Second {
		t.Errorf("duration = %s, want 3s", cfg.Duration)
	}
	if cfg.Sweep != nil {
		t.Errorf("sweep = %v, want none", cfg.Sweep)
	}
	if cfg.Concurrency != 7 {
		t.Errorf("concurrency = %d, want 7", cfg.Concurrency)
	}
	if c.out != "reports" {
		t.Errorf("out = %q, want reports", c.out)
	}
	var scenarios []string
	for _, sc := range cfg.Scenarios {
		scenarios = append(scenarios, sc.String())
	}
	want := []string{"post_create@7", "comment_create@7", "post_destroy@7", "comment_destroy@7", "post_show@7", "posts_index@7", "user_show@7",
		"balanced@256", "write_heavy@256"}
	if !slices.Equal(scenarios, want) {
		t.Errorf("scenarios %v, want %v", scenarios, want)
	}
	if !slices.Equal(cfg.PointRead, []int{1, 5}) || cfg.Action != "balanced" {
		t.Errorf("point read %v, action %q", cfg.PointRead, cfg.Action)
	}

	// --render reads nothing else: it only renders an earlier run again.
	if c, err := parseBenchFlags([]string{"--render", "benchmarks/x", "--setups", "turbo"}, io.Discard); err != nil || c.render != "benchmarks/x" {
		t.Errorf("render: %+v, %v", c, err)
	}
}
