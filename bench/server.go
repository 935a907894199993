package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// server is one `loremnews serve` process under test.
type server struct {
	cmd     *exec.Cmd
	baseURL string
	logPath string
	exited  chan error
}

var listeningRe = regexp.MustCompile(`listening on (http://\S+)`)

// seedDatabase builds a fresh database with the setup's own binary (so a
// binary built without compile-time options also seeds with its own SQLite).
func seedDatabase(ctx context.Context, s Setup, dbPath string, cfg Config) error {
	args := []string{"seed", "--db", dbPath, "--seed", fmt.Sprint(cfg.Seed), "--users", fmt.Sprint(cfg.Users), "--posts", fmt.Sprint(cfg.Posts)}
	out, err := exec.CommandContext(ctx, s.Binary, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bench: seed %s: %v: %s", dbPath, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// startServer starts the setup's server on a free loopback port, its log
// going to logPath, and waits until /up answers 200.
func startServer(ctx context.Context, s Setup, dbPath, logPath string) (*server, error) {
	args := append([]string{"serve", "--db", dbPath, "--addr", "127.0.0.1:0", "--benchmarking", "--log-level", "warn"}, s.ServeArgs...)
	if s.Profile != "" && !s.Postgres {
		args = append(args, "--profile", s.Profile)
	}
	cmd := exec.Command(s.Binary, args...)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("bench: start %s: %w", s.Binary, err)
	}
	srv := &server{cmd: cmd, logPath: logPath, exited: make(chan error, 1)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			fmt.Fprintln(logFile, sc.Text())
			if m := listeningRe.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	go func() {
		srv.exited <- cmd.Wait()
		logFile.Close()
	}()

	select {
	case srv.baseURL = <-found:
	case err := <-srv.exited:
		return nil, fmt.Errorf("bench: server %s exited at start (%v); see %s", s.Name, err, logPath)
	case <-time.After(30 * time.Second):
		srv.stop()
		return nil, fmt.Errorf("bench: server %s did not start in 30 s; see %s", s.Name, logPath)
	case <-ctx.Done():
		srv.stop()
		return nil, ctx.Err()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(srv.baseURL + "/up")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return srv, nil
			}
		}
		if time.Now().After(deadline) {
			srv.stop()
			return nil, fmt.Errorf("bench: server %s never answered /up; see %s", s.Name, logPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM (graceful: requests finish, the WAL is checkpointed)
// and waits; after 20 s it kills the process.
func (s *server) stop() error {
	if s.cmd.Process == nil {
		return nil
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("bench: server exited with %v; see %s", err, s.logPath)
		}
		return err
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("bench: server did not stop in 20 s and was killed; see %s", s.logPath)
	}
}

// scrape fetches the server's /metrics text.
func (s *server) scrape() (string, error) {
	resp, err := http.Get(s.baseURL + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("bench: /metrics answered %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// logTail returns the last lines of the server's log that are warnings or
// errors, for the report.
func logTail(path string, n int) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") && !strings.Contains(l, "benchmarking endpoints are ON") {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}

func dbPathFor(dir string, s Setup) string { return filepath.Join(dir, s.Name+".sqlite3") }
