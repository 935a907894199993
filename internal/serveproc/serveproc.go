// Package serveproc runs `loremnews serve` as a process of its own, for the
// experiment runner (each setup is measured in its own server process) and
// for the tests that need a real process (signals, kill -9, two servers on
// one file). It starts the server on a free loopback port, learns the
// address from the line serve prints, and waits until /up answers.
package serveproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// StartTimeout bounds each wait of Start: for serve to print its address,
// then for /up to answer. Generous: a loaded 2-core machine may take
// seconds to migrate, open and start a server.
const StartTimeout = 30 * time.Second

// listeningRe matches the line serve prints once it listens:
// "Lorem News listening on http://127.0.0.1:PORT (…)".
var listeningRe = regexp.MustCompile(`listening on (http://\S+)`)

// ListeningURL returns the base URL from serve's "listening on" line, if
// text holds one.
func ListeningURL(text string) (string, bool) {
	m := listeningRe.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// metricsRe matches the line serve prints, before its "listening on"
// line, when it serves /metrics: "metrics on http://127.0.0.1:PORT/metrics".
var metricsRe = regexp.MustCompile(`metrics on (http://\S+)`)

// MetricsURL returns the URL of /metrics from serve's "metrics on" line,
// if text holds one.
func MetricsURL(text string) (string, bool) {
	m := metricsRe.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Process is a running `loremnews serve`.
type Process struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:41234.
	URL string
	// MetricsURL is where it serves /metrics, on a listener apart from
	// the site's ("" with --metrics=false).
	MetricsURL string
	cmd        *exec.Cmd
	exited     chan struct{} // closed once the process has exited and its output is copied
	err        error         // how it exited, set before exited is closed
}

// Start runs `binary serve --addr 127.0.0.1:0 args…`, its standard output
// and error copied to log (nil: discarded), and returns once /up answers
// 200. It gives up, stopping the process, when ctx ends or a wait takes
// longer than StartTimeout; if the process exits first, the error says how.
func Start(ctx context.Context, binary string, args []string, log io.Writer) (*Process, error) {
	if log == nil {
		log = io.Discard
	}
	log = &lockedWriter{w: log}
	found := make(chan string, 1)
	cmd := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	watcher := &addressWatcher{w: log, found: found}
	cmd.Stdout = watcher
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("serveproc: start %s: %w", binary, err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()

	timeout := time.NewTimer(StartTimeout)
	defer timeout.Stop()
	select {
	case p.URL = <-found:
		p.MetricsURL = watcher.metricsURL
	case <-p.exited:
		return nil, fmt.Errorf("serveproc: the server exited at start (%v)", p.err)
	case <-timeout.C:
		p.Kill()
		return nil, fmt.Errorf("serveproc: the server did not say where it listens within %s", StartTimeout)
	case <-ctx.Done():
		p.Kill()
		return nil, ctx.Err()
	}
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(StartTimeout)
	for {
		resp, err := client.Get(p.URL + "/up")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("serveproc: the server exited before /up answered (%v)", p.err)
		case <-ctx.Done():
			p.Kill()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Kill()
			return nil, fmt.Errorf("serveproc: %s/up did not answer 200 within %s", p.URL, StartTimeout)
		}
	}
}

// Pid is the server's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// ExitCode is the process's exit code once it has exited (-1 if a signal
// ended it).
func (p *Process) ExitCode() int {
	<-p.exited
	return p.cmd.ProcessState.ExitCode()
}

// Signal sends sig and waits up to within for the process to exit. It
// reports an error if the process is still running after that.
func (p *Process) Signal(sig os.Signal, within time.Duration) error {
	p.cmd.Process.Signal(sig) // fails only if the process has exited: the wait below sees that
	select {
	case <-p.exited:
		return nil
	case <-time.After(within):
		return fmt.Errorf("serveproc: the server did not exit within %s of %v", within, sig)
	}
}

// Stop ends the server gracefully with SIGTERM (requests in flight finish,
// SQLite's WAL is checkpointed), killing it if it takes longer than
// within. The error says if it did not exit cleanly with status 0.
func (p *Process) Stop(within time.Duration) error {
	if err := p.Signal(syscall.SIGTERM, within); err != nil {
		p.Kill()
		return fmt.Errorf("serveproc: the server did not stop within %s of SIGTERM and was killed", within)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return fmt.Errorf("serveproc: the server exited with %v", p.err)
	}
	return p.err
}

// Kill ends the process at once and waits for it.
func (p *Process) Kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// addressWatcher copies serve's standard output to w and sends the
// address of its "listening on" line to found, once, having noted the
// "metrics on" line before it in metricsURL.
type addressWatcher struct {
	w          io.Writer
	found      chan<- string
	partial    []byte // the current line so far
	sent       bool
	metricsURL string // set before found is sent
}

func (a *addressWatcher) Write(b []byte) (int, error) {
	if !a.sent {
		a.partial = append(a.partial, b...)
		for {
			i := bytes.IndexByte(a.partial, '\n')
			if i < 0 {
				break
			}
			if url, ok := MetricsURL(string(a.partial[:i])); ok {
				a.metricsURL = url
			}
			if url, ok := ListeningURL(string(a.partial[:i])); ok {
				a.found <- url
				a.sent, a.partial = true, nil
				break
			}
			a.partial = a.partial[i+1:]
		}
	}
	return a.w.Write(b)
}

// lockedWriter serialises the writes of the process's two output streams,
// each copied by a goroutine of its own.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
