package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSeedProgress: off a terminal (here a buffer), seed writes a plain
// progress line at each tenth of the rows and none with --quiet; the
// summary on stdout comes either way.
func TestSeedProgress(t *testing.T) {
	dir := t.TempDir()
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"seed", "--db", filepath.Join(dir, "a.sqlite3"), "--users", "10", "--posts", "40"}, &out, &errs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(errs.String(), "\n"), "\n")
	if len(lines) != 10 || strings.Contains(errs.String(), "\r") {
		t.Fatalf("progress off a terminal: %d lines, want one per tenth, no carriage returns:\n%q", len(lines), errs.String())
	}
	for i, line := range lines {
		if want := fmt.Sprintf("(%d%%)", 10*(i+1)); !strings.HasPrefix(line, "seed: ") || !strings.Contains(line, want) {
			t.Fatalf("progress line %d = %q, want %s done", i+1, line, want)
		}
	}
	if !strings.Contains(lines[9], "rows/s") || !strings.Contains(out.String(), "10 users, 40 posts") {
		t.Fatalf("last progress line %q; summary %q", lines[9], out.String())
	}

	out.Reset()
	errs.Reset()
	if err := run(context.Background(), []string{"seed", "--db", filepath.Join(dir, "b.sqlite3"), "--users", "10", "--posts", "40", "--quiet"}, &out, &errs); err != nil {
		t.Fatal(err)
	}
	if errs.Len() != 0 || !strings.Contains(out.String(), "10 users, 40 posts") {
		t.Fatalf("--quiet: stderr %q, stdout %q", errs.String(), out.String())
	}
}

// TestSeedProgressOnTerminal: on a terminal the line is redrawn in place
// (carriage return, erase to the end of line, never a newline), shows the
// final count, and is cleared at the end so the summary takes its place.
func TestSeedProgressOnTerminal(t *testing.T) {
	var w bytes.Buffer
	p := &seedProgress{w: &w, terminal: true, total: 5000, start: time.Now()}
	for range 5000 {
		p.row()
	}
	p.finish()
	s := w.String()
	if strings.Contains(s, "\n") || !strings.HasPrefix(s, "\r") || !strings.HasSuffix(s, "\r\033[K") {
		t.Fatalf("terminal progress = %q: want lines redrawn in place and cleared", s)
	}
	if !strings.Contains(s, "5000 of 5000 rows (100%)") {
		t.Fatalf("terminal progress = %q: the final count is missing", s)
	}
	if draws := strings.Count(s, "\r"); draws > 5000/1024+2 {
		t.Fatalf("%d redraws for 5,000 rows: want at most one per 1,024 rows", draws)
	}
}
