package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loremnews/loremnews/internal/serveproc"
)

// Helpers for tests that run the real binary as its own process: crashes,
// signals and two servers on one file cannot be tested in-process.

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// binary builds loremnews once per test run (without -race: it is the
// subject, not the test) and returns its path.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "loremnews-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "loremnews")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build: %v", buildErr)
	}
	return builtBin
}

// serverProc is a running `loremnews serve`.
type serverProc struct {
	t *testing.T
	*serveproc.Process
	stderr *syncBuffer // its standard output and error
}

// startServer runs `loremnews serve --addr 127.0.0.1:0 --db db args…` and
// waits until /up answers; the process is killed when the test ends.
func startServer(t *testing.T, db string, args ...string) *serverProc {
	t.Helper()
	out := &syncBuffer{}
	p, err := serveproc.Start(context.Background(), binary(t), append([]string{"--db", db, "--log-level", "warn"}, args...), out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Cleanup(p.Kill)
	return &serverProc{t: t, Process: p, stderr: out}
}

// signal sends sig and waits for the process to exit, at most within.
func (p *serverProc) signal(sig syscall.Signal, within time.Duration) (exitCode int, took time.Duration) {
	p.t.Helper()
	start := time.Now()
	if err := p.Signal(sig, within); err != nil {
		p.t.Fatalf("%v\n%s", err, p.stderr.String())
	}
	return p.ExitCode(), time.Since(start)
}

// seedFile seeds a fresh database file with the real binary.
func seedFile(t *testing.T, db string, args ...string) {
	t.Helper()
	out, err := exec.Command(binary(t), append([]string{"seed", "--db", db}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("seed: %v\n%s", err, out)
	}
}

// noRedirects is a client that reports 303s instead of following them.
func noRedirects(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout:       timeout,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// execCommand prepares the real binary with args.
func execCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(binary(t), args...)
}
