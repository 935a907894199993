package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loremnews/loremnews/load"
)

func TestLoadCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.Header.Get("X-A") != "1" {
			w.WriteHeader(400)
		}
		io.WriteString(w, "hello")
	}))
	defer srv.Close()

	t.Run("Text", func(t *testing.T) {
		var out bytes.Buffer
		// URL first works too.
		if err := run(context.Background(), []string{"load", srv.URL, "-c", "3", "-n", "30", "-m", "post", "-H", "X-A: 1"}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Success rate:\t100.00% (30 of 30 requests)", "Requests/sec:", "Latency distribution", "99.9% in", "[200]\t30 responses", "Size/request:\t5 bytes"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("output lacks %q:\n%s", want, out.String())
			}
		}
	})
	t.Run("JSON", func(t *testing.T) {
		var out bytes.Buffer
		// Flags after the URL work too.
		if err := run(context.Background(), []string{"load", "-c", "2", "-n", "10", srv.URL, "-m", "POST", "-H", "X-A: 1", "--json"}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		var s load.Summary
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		if s.Requests != 10 {
			t.Errorf("requests = %d, want 10", s.Requests)
		}
		if got := s.StatusCodes["200"]; got != 10 {
			t.Errorf("200s = %d, want 10", got)
		}
		if s.BytesTotal != 50 {
			t.Errorf("bytes = %d, want 50", s.BytesTotal)
		}
		if len(s.Percentiles) == 0 {
			t.Errorf("no percentiles")
		}
	})
	t.Run("UsageErrors", func(t *testing.T) {
		for _, args := range [][]string{
			{"load"},
			{"load", "-c", "0", srv.URL},
			{"load", "-H", "no-colon", srv.URL},
			{"load", "ftp://example/"},
			{"load", srv.URL, "extra"},
		} {
			var stderr bytes.Buffer
			if code := exitCode(run(context.Background(), args, io.Discard, io.Discard), &stderr); code != 2 {
				t.Errorf("%v: exit %d (%s)", args, code, stderr.String())
			}
		}
	})
}

// TestLoadFailureExitsNonZero: a run in which nothing succeeded, or more
// failed than --max-error-rate allows, exits 1 with one line naming what
// failed and, for the usual mistakes, what to try; its report says so and
// shows no latency figures. A closed port ends the run within a second or
// two, whatever -z says.
func TestLoadFailureExitsNonZero(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/missing":
			http.NotFound(w, r)
		case r.URL.Path == "/post-only" && r.Method != http.MethodPost:
			w.Header().Set("Allow", http.MethodPost)
			w.WriteHeader(http.StatusMethodNotAllowed)
		case r.URL.Path == "/flaky" && n.Add(1)%4 == 0:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	for _, c := range []struct {
		name     string
		args     []string
		exit     int
		line     string // in the error line
		inReport string
	}{
		{"ClosedPort", []string{closed, "-n", "10", "-c", "2"}, 1, "no request succeeded: 10 of 10 failed (10× connection refused)", "Success rate:\t0.00% (0 of 10 requests)"},
		{"ClosedPortForAWhile", []string{closed, "-z", "30s", "-c", "2"}, 1, "failed (", "Success rate:\t0.00%"},
		{"NotFound", []string{srv.URL + "/missing", "-n", "10", "-c", "2"}, 1, "no request succeeded: 10 of 10 failed (10× status 404); did you mean -m POST?", "none measured"},
		{"NotFoundPOST", []string{srv.URL + "/missing", "-n", "10", "-c", "2", "-m", "POST"}, 1, "no request succeeded: 10 of 10 failed (10× status 404)", "none measured"},
		{"MethodNotAllowed", []string{srv.URL + "/post-only", "-n", "10", "-c", "2"}, 1, "no request succeeded: 10 of 10 failed (10× status 405); did you mean -m POST?", "none measured"},
		{"AboveMaxErrorRate", []string{srv.URL + "/flaky", "-n", "40", "-c", "1", "--max-error-rate", "0.1"}, 1, "error rate 25.00 % (10 of 40) is above --max-error-rate 10.00 % (10× status 503)", "Success rate:\t75.00% (30 of 40 requests)"},
		{"WithinMaxErrorRate", []string{srv.URL + "/flaky", "-n", "40", "-c", "1", "--max-error-rate", "0.3"}, 0, "", "[503]\t10 responses"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, stderr bytes.Buffer
			start := time.Now()
			code := exitCode(run(context.Background(), append([]string{"load"}, c.args...), &out, io.Discard), &stderr)
			took := time.Since(start)
			if code != c.exit || !strings.Contains(stderr.String(), c.line) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), c.exit, c.line)
			}
			if lines := strings.Count(strings.TrimSpace(stderr.String()), "\n"); lines > 0 {
				t.Fatalf("error is %d lines, want one:\n%s", lines+1, stderr.String())
			}
			stoppedEarly := strings.Contains(stderr.String(), "stopped after 1s: is the server running, on this port?")
			if wantEarly := c.name == "ClosedPortForAWhile"; stoppedEarly != wantEarly {
				t.Fatalf("stderr %q: gave up = %v, want %v", stderr.String(), stoppedEarly, wantEarly)
			}
			if stoppedEarly && took > 3*time.Second {
				t.Fatalf("against a closed port with -z 30s the run took %s, want at most 3s", took)
			}
			if c.name == "NotFoundPOST" && strings.Contains(stderr.String(), "did you mean") {
				t.Fatalf("a POST that got 404 is told to POST: %q", stderr.String())
			}
			if !strings.Contains(out.String(), c.inReport) {
				t.Fatalf("report lacks %q:\n%s", c.inReport, out.String())
			}
			if strings.Contains(c.line, "no request succeeded") && strings.Contains(out.String(), "Slowest") {
				t.Fatalf("latency figures without a success:\n%s", out.String())
			}
		})
	}
}

// TestLoadAcceptsOhaSpellings: a command line written for oha runs as is.
func TestLoadAcceptsOhaSpellings(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" && r.Header.Get("Content-Type") == "application/json" {
			posts.Add(1)
			http.Redirect(w, r, "/elsewhere", http.StatusSeeOther)
			return
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	var out bytes.Buffer
	err := run(context.Background(), []string{"load", "-c", "1", "-n", "5", "-m", "POST", "--latency-correction", "--disable-keepalive",
		"--redirect", "0", "-T", "application/json", "-d", "{}", "--no-tui", srv.URL}, &out, io.Discard)
	if err != nil || posts.Load() != 5 || !strings.Contains(out.String(), "[303]\t5 responses") {
		t.Fatalf("err %v, %d posts:\n%s", err, posts.Load(), out.String())
	}
}

// TestOpenLoopReport: -q 2 -z 3s reports the configured rate exactly and
// the rate achieved over the window.
func TestOpenLoopReport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"load", "-q", "0.5", "-z", "4s", "-c", "2", srv.URL, "--json"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var s load.Summary
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	// Due at 0, 2 s: two requests over a 4 s window.
	if s.Rate != 0.5 {
		t.Errorf("rate = %v, want 0.5", s.Rate)
	}
	if s.Requests != 2 {
		t.Errorf("requests = %d, want 2", s.Requests)
	}
	if s.SendRate < 0.4 || s.SendRate > 0.6 {
		t.Errorf("send rate = %v, want 0.4 to 0.6", s.SendRate)
	}
	out.Reset()
	if err := run(context.Background(), []string{"load", "-q", "0.5", "-n", "1", "-c", "1", srv.URL}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Configured rate:\t0.5 req/s") {
		t.Fatalf("configured rate not shown exactly:\n%s", out.String())
	}
}

func TestProgressLine(t *testing.T) {
	line := progressLine(load.Config{Requests: 1000}, load.Progress{Elapsed: 2 * time.Second, Requests: 250, Failures: 3, RPS: 125})
	for _, want := range []string{"25%", "250/1000", "2s elapsed, 6s left", "125 req/s", "3 errors"} {
		if !strings.Contains(line, want) {
			t.Errorf("-n: %q lacks %q", line, want)
		}
	}
	line = progressLine(load.Config{Duration: 10 * time.Second}, load.Progress{Elapsed: 4 * time.Second, Requests: 800, RPS: 200})
	for _, want := range []string{"40%", "800 requests", "4s elapsed, 6s left", "200 req/s", "0 errors"} {
		if !strings.Contains(line, want) {
			t.Errorf("-z: %q lacks %q", line, want)
		}
	}
}

func TestFmtDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		153 * time.Microsecond:  "153.0 µs",
		1500 * time.Microsecond: "1.500 ms",
		2 * time.Second:         "2.0000 s",
	} {
		if got := fmtDuration(d); got != want {
			t.Errorf("fmtDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestFreshReportDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "2026-11-22-balanced")
	if got := freshReportDir(dir); got != dir {
		t.Fatalf("empty: %s", got)
	}
	for _, d := range []string{dir, dir + "-2"} {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "results.json"), []byte("{}"), 0o644)
	}
	if got := freshReportDir(dir); got != dir+"-3" {
		t.Fatalf("with two reports: %s, want %s-3", got, dir)
	}
}
