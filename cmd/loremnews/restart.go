package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/cloudflare/tableflip"
	"github.com/coreos/go-systemd/v22/daemon"
)

// restarter replaces the serving process on SIGHUP without dropping a
// request, with github.com/cloudflare/tableflip: the new process (the
// executable at the same path, so a new binary put in place, with the same
// arguments and environment) inherits the listening sockets, opens the
// database, and says it is ready; only then does the old one stop
// accepting and hand its clients over (lnhttp.Server.Handoff). If the new
// process fails to start or to get ready in time, the old one goes on
// serving. Under systemd (Type=notify, NotifyAccess=all), each process
// that becomes ready says so with its PID (READY=1, MAINPID=), so systemd
// follows the new one; ExecReload runs `loremnews reload`, which waits.
//
// tableflip allows one upgrader per process; a second serve in the same
// process (as the tests run it) listens without one, and SIGHUP is then
// only logged.
type restarter struct {
	upg     *tableflip.Upgrader // nil: this process cannot restart
	pidFile string
	log     *slog.Logger
	sigs    chan os.Signal
	done    chan struct{}
}

// newRestarter starts watching for SIGHUP.
func newRestarter(pidFile string, log *slog.Logger) *restarter {
	r := &restarter{pidFile: pidFile, log: log, sigs: make(chan os.Signal, 1), done: make(chan struct{})}
	upg, err := tableflip.New(tableflip.Options{PIDFile: pidFile})
	if err != nil {
		log.Info("restarts on SIGHUP are off in this process", "err", err)
	} else {
		r.upg = upg
	}
	signal.Notify(r.sigs, syscall.SIGHUP)
	go r.watch()
	return r
}

// watch starts a new process at each SIGHUP.
func (r *restarter) watch() {
	for {
		select {
		case <-r.done:
			return
		case <-r.sigs:
		}
		if r.upg == nil {
			r.log.Warn("SIGHUP ignored: restarts are off in this process")
			continue
		}
		r.log.Info("SIGHUP: starting a new process to take over")
		if err := r.upg.Upgrade(); err != nil {
			r.log.Error("the new process did not take over; this one goes on serving", "err", err)
			r.noteFailure(err)
			continue
		}
		r.log.Info("the new process is ready")
	}
}

// noteFailure writes why the new process did not take over to
// failedUpgradeFile(--pid-file), where `loremnews reload` looks, so it
// says so at once instead of waiting out its timeout.
func (r *restarter) noteFailure(err error) {
	if r.pidFile == "" {
		return
	}
	path := failedUpgradeFile(r.pidFile)
	werr := os.WriteFile(path+".tmp", []byte(err.Error()+"\n"), 0o644)
	if werr == nil {
		werr = os.Rename(path+".tmp", path)
	}
	if werr != nil {
		r.log.Warn("could not say why beside the PID file; loremnews reload will wait out its timeout", "err", werr)
	}
}

// failedUpgradeFile is where the server says why its last restart
// failed: beside its PID file.
func failedUpgradeFile(pidFile string) string { return pidFile + ".failed" }

// listen listens on addr, or takes the socket the process before this one
// listened on for the same name and addr. The name tells apart two
// listeners given the same address (127.0.0.1:0 for the site and its
// metrics, each on a port of its own).
func (r *restarter) listen(name, addr string) (net.Listener, error) {
	if r.upg == nil {
		return net.Listen("tcp", addr)
	}
	// The upgrader's error keeps only the text of the listener's, so the
	// listener's own is returned: errors.Is(err, syscall.EADDRINUSE) then
	// holds, for the hints that depend on it.
	var listenErr error
	ln, err := r.upg.ListenWithCallback("tcp", name+" "+addr, func(network, _ string) (net.Listener, error) {
		ln, err := net.Listen(network, addr)
		listenErr = err
		return ln, err
	})
	if err != nil && listenErr != nil {
		return nil, listenErr
	}
	return ln, err
}

// ready says this process serves: the process before it, if any, may hand
// over. It writes --pid-file and tells systemd, if it started the service,
// that this process is the main one now.
func (r *restarter) ready() error {
	if r.upg != nil {
		if err := r.upg.Ready(); err != nil {
			return fmt.Errorf("restart: ready: %w", err)
		}
	} else if r.pidFile != "" {
		tmp := r.pidFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return fmt.Errorf("--pid-file: %w", err)
		}
		if err := os.Rename(tmp, r.pidFile); err != nil {
			return fmt.Errorf("--pid-file: %w", err)
		}
	}
	// Nothing to do without $NOTIFY_SOCKET (not under systemd).
	if _, err := daemon.SdNotify(false, fmt.Sprintf("MAINPID=%d\nREADY=1", os.Getpid())); err != nil {
		r.log.Warn("tell systemd this process is ready", "err", err)
	}
	return nil
}

// replaced is closed once a new process has taken over.
func (r *restarter) replaced() <-chan struct{} {
	if r.upg == nil {
		return nil
	}
	return r.upg.Exit()
}

// stop stops watching for SIGHUP and lets the upgrader go.
func (r *restarter) stop() {
	signal.Stop(r.sigs)
	close(r.done)
	if r.upg != nil {
		r.upg.Stop()
	}
}
