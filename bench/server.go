package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/loremnews/loremnews/internal/serveproc"
)

// server is one `loremnews serve` process under test, its output going
// to the log file at logPath.
type server struct {
	*serveproc.Process
	logPath string
	logFile *os.File
}

// seedDatabase builds a fresh database with the setup's own binary (so a
// binary built without compile-time options also seeds with its own SQLite).
func seedDatabase(ctx context.Context, s Setup, dbPath string, cfg Config) error {
	args := []string{"seed", "--db", dbPath, "--seed", fmt.Sprint(cfg.Seed), "--users", fmt.Sprint(s.users(cfg)), "--posts", fmt.Sprint(s.posts(cfg))}
	out, err := exec.CommandContext(ctx, s.Binary, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bench: seed %s: %v: %s", dbPath, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// setupFlags caches setupFlag's answer for each binary.
var setupFlags sync.Map

// setupFlag is the flag with which binary's serve takes the SQLite setup:
// --setup, or --profile for a binary built before --setup had its name
// (--compare serves binaries of earlier commits; a newer one takes both).
// A binary that cannot be asked (a report rendered again elsewhere) is
// taken to be a newer one.
func setupFlag(binary string) string {
	if binary == "" {
		return "--setup"
	}
	if f, ok := setupFlags.Load(binary); ok {
		return f.(string)
	}
	flag := "--setup"
	if out, err := exec.Command(binary, "serve", "--help").CombinedOutput(); err == nil && !strings.Contains(string(out), "-setup") && strings.Contains(string(out), "-profile") {
		flag = "--profile"
	}
	setupFlags.Store(binary, flag)
	return flag
}

// startServer starts the setup's server on a free loopback port, its log
// going to logPath, and waits until /up answers 200.
func startServer(ctx context.Context, s Setup, dbPath, logPath string) (*server, error) {
	dsn := dbPath
	if s.PollWriters {
		dsn = "file:" + dbPath + "?_writers=poll"
	}
	args := append([]string{"--db", dsn, "--benchmarking", "--log-level", "warn"}, s.ServeArgs...)
	if s.SQLiteSetup != "" && !s.Postgres {
		args = append(args, setupFlag(s.Binary), s.SQLiteSetup)
	}
	if s.Workers > 1 {
		args = append(args, "--workers", fmt.Sprint(s.Workers))
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p, err := serveproc.Start(ctx, s.Binary, args, logFile)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("bench: server %s: %w; see %s", s.Name, err, logPath)
	}
	return &server{Process: p, logPath: logPath, logFile: logFile}, nil
}

// stop ends the server gracefully (requests finish, the WAL is
// checkpointed); after 20 s it kills the process.
func (s *server) stop() error {
	err := s.Stop(20 * time.Second)
	s.logFile.Close()
	if err != nil {
		return fmt.Errorf("bench: %w; see %s", err, s.logPath)
	}
	return nil
}

// scrape fetches the server's /metrics text.
func (s *server) scrape() (string, error) {
	url := s.MetricsURL
	if url == "" {
		// A build from before /metrics had a listener of its own (for
		// --compare) served it on the site's address.
		url = s.URL + "/metrics"
	}
	resp, err := http.Get(url)
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
