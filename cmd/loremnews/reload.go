package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runReload is `loremnews reload`: it asks the server named by its PID
// file to replace itself (SIGHUP) and waits until a new process has taken
// over, so a deploy script, or systemd's ExecReload (which then reads the
// new main PID from the file), knows the outcome.
func runReload(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		pidFile string
		timeout time.Duration
		fs      = newFlagSet("reload", "loremnews reload --pid-file PATH",
			"Replace a running serve without dropping a request: send it SIGHUP, which starts a new process of the same\n"+
				"executable (a new binary put in its place runs), and wait until that process serves and the old one has\n"+
				"handed over and exited. Exits 1 if the new process did not take over (the old one then goes on serving).", stdout)
	)
	fs.StringVar(&pidFile, "pid-file", "", "`PATH` of the running serve's --pid-file (required)")
	fs.twin("pid-file", "LOREM_PID_FILE")
	fs.DurationVar(&timeout, "timeout", time.Minute, "how long to wait for the new process to take over and the old one to exit (under systemd's TimeoutStartSec, 90 s by default, when run as ExecReload)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if pidFile == "" {
		return &usageError{msg: "--pid-file is required: the file serve --pid-file writes", cmd: fs.Name()}
	}
	if timeout <= 0 {
		return &usageError{msg: "--timeout must be positive", cmd: fs.Name()}
	}
	old, err := readPID(pidFile)
	if err != nil {
		return err
	}
	// What the server writes if this restart fails; an older one's is
	// removed first (file times are too coarse to tell them apart).
	if err := os.Remove(failedUpgradeFile(pidFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reload: %w", err)
	}
	start := time.Now()
	if err := syscall.Kill(old, syscall.SIGHUP); err != nil {
		return fmt.Errorf("reload: signal the server (PID %d from %s): %w", old, pidFile, err)
	}
	deadline := start.Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	next := 0
	for next == 0 || running(old) {
		if next == 0 {
			if pid, err := readPID(pidFile); err == nil && pid != old {
				next = pid
			} else if !running(old) {
				return fmt.Errorf("reload: the server (PID %d) exited and no new process took over: see its log", old)
			} else if why, ok := upgradeFailed(pidFile); ok {
				return fmt.Errorf("reload: the new process did not take over (%s); the server (PID %d) goes on serving", why, old)
			}
		}
		if time.Now().After(deadline) {
			if next == 0 {
				return fmt.Errorf("reload: no new process took over within %v; the server (PID %d) goes on serving: see its log", timeout, old)
			}
			return fmt.Errorf("reload: PID %d serves, but the old process %d has not exited within %v", next, old, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	fmt.Fprintf(stdout, "reloaded: PID %d serves, PID %d handed over and exited (%v)\n", next, old, time.Since(start).Round(time.Millisecond))
	return nil
}

// upgradeFailed answers why the server's restart failed, if it has
// written so (failedUpgradeFile).
func upgradeFailed(pidFile string) (string, bool) {
	b, err := os.ReadFile(failedUpgradeFile(pidFile))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// readPID reads the PID a PID file holds.
func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reload: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("reload: %s holds %q, not a process id", path, strings.TrimSpace(string(b)))
	}
	return pid, nil
}

// running reports whether process pid exists and is not a zombie (one
// that exited and that its parent has not reaped yet).
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil { // no /proc (not Linux): the signal said it exists
		return true
	}
	// The state follows the command name, which is in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || !strings.HasPrefix(string(b[i+1:]), " Z")
}
