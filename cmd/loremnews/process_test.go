package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	exited chan error
}

// startServer runs `loremnews serve --addr 127.0.0.1:0 --db db args…` and
// waits until /up answers; the process is killed when the test ends.
func startServer(t *testing.T, db string, args ...string) *serverProc {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--log-level", "warn"}, args...)...)
	p := &serverProc{t: t, cmd: cmd, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); <-p.exited })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() { p.exited <- cmd.Wait(); close(p.exited) }()
	select {
	case p.url = <-found:
	case err := <-p.exited:
		t.Fatalf("server exited at start: %v\n%s", err, p.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not start\n%s", p.stderr.String())
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if resp, err := http.Get(p.url + "/up"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server never answered /up\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// signal sends sig and waits for the process to exit, at most within.
func (p *serverProc) signal(sig syscall.Signal, within time.Duration) (exitCode int, took time.Duration) {
	p.t.Helper()
	start := time.Now()
	p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(within):
		p.t.Fatalf("server did not exit within %s of %v\n%s", within, sig, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode(), time.Since(start)
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
