package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/loremnews/loremnews/internal/workers"
	"github.com/prometheus/client_golang/prometheus"
)

// serve --workers N is a cluster of worker processes (package workers):
// this process listens, and N processes of the same executable, started
// with the same arguments and environment, serve on the listening socket
// it hands them, each with its own connections to the database. The
// parent migrates (and with --seed-if-empty seeds) the database before
// any worker starts, and its workers share one configuration: what the
// settings file and the secret key said when it started. On SIGHUP it is
// replaced as a single process is (see restarter): the new parent starts
// its own workers on the inherited socket and says it is ready once they
// all serve; then the old parent stops its workers, which finish what
// they are answering.

// runWorker serves as worker n of a cluster.
func (c serveCommand) runWorker(ctx context.Context, n string, log *slog.Logger) error {
	lnFile, readyPipe, ok := workers.Inherited()
	if !ok {
		return fmt.Errorf("%s=%s is set, but this process was not started as a worker (no descriptors 3 and 4)", workers.Env, n)
	}
	ln, err := net.FileListener(lnFile)
	lnFile.Close()
	if err != nil {
		return fmt.Errorf("worker %s: the listener its parent handed it: %w", n, err)
	}
	s, err := c.openSite(ctx, log, io.Discard, io.Discard, false)
	if err != nil {
		ln.Close()
		return err
	}
	defer s.close()
	if s.metrics != nil {
		path := os.Getenv(workers.MetricsEnv)
		os.Remove(path) // left by the worker this one replaces
		ml, err := net.Listen("unix", path)
		if err != nil {
			ln.Close()
			return fmt.Errorf("worker %s: metrics socket: %w", n, err)
		}
		msrv := &http.Server{Handler: s.metrics.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go msrv.Serve(ml)
		defer msrv.Close()
	}
	return c.serve(ctx, s, ln, func() error { return workers.Ready(readyPipe) }, nil)
}

// runCluster prepares the database, starts the workers, says the server
// is ready once all serve, and supervises them until ctx ends or a new
// parent has taken over.
func (c serveCommand) runCluster(ctx context.Context, restart *restarter, log *slog.Logger, stdout, stderr io.Writer) error {
	described, err := c.prepareDatabase(ctx, log, stdout, stderr)
	if err != nil {
		return err
	}
	ln, err := c.listenSite(restart)
	if err != nil {
		return err
	}
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		ln.Close()
		return fmt.Errorf("listen on %s: not a TCP listener", c.addr)
	}
	lnFile, err := workers.ListenerFile(tl)
	// The workers accept on their copies; the parent's is not served.
	defer ln.Close()
	if err != nil {
		return fmt.Errorf("listen on %s: %w", c.addr, err)
	}
	defer lnFile.Close()
	cl, err := c.newCluster(log, lnFile)
	if err != nil {
		return err
	}
	defer cl.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(cl.Collectors()...)
	if c.metrics {
		opsSrv, err := c.serveOps(restart, cl.MetricsHandler(reg), log, stdout)
		if err != nil {
			return err
		}
		defer handOff(opsSrv)
	}
	c.logSettings(log)
	if err := cl.StartAll(ctx); err != nil {
		cl.Stop()
		return err
	}
	if err := restart.ready(); err != nil {
		cl.Stop()
		return err
	}
	fmt.Fprintf(stdout, "Lorem News listening on http://%s (%d worker processes, %s)\n", ln.Addr(), c.workers, described)
	select {
	case <-ctx.Done():
		log.Info("shutting down: the workers finish the requests in flight", "timeout", c.shutdownTimeout)
	case <-restart.replaced():
		log.Info("a new process serves: the workers hand over their clients and finish the requests in flight", "timeout", c.shutdownTimeout)
	}
	return cl.Stop()
}

// prepareDatabase opens the database once, so that it is created and
// migrated (and with --seed-if-empty seeded) before any worker opens it,
// and says what it is.
func (c serveCommand) prepareDatabase(ctx context.Context, log *slog.Logger, stdout, stderr io.Writer) (string, error) {
	db, err := c.db.open(ctx)
	if err != nil {
		return "", err
	}
	described := fmt.Sprintf("%s, database %s", db.Describe(), db.Name())
	if c.seedIfEmpty {
		err = c.seedEmpty(ctx, db, stdout, stderr)
	}
	if cerr := db.Close(); cerr != nil {
		log.Warn("close database after preparing it", "err", cerr)
	}
	return described, err
}

// newCluster gathers what starting a worker takes: this executable, and
// the arguments and environment of this serve.
func (c serveCommand) newCluster(log *slog.Logger, lnFile *os.File) (*workers.Cluster, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--workers: find this executable: %w", err)
	}
	// Not a worker's business: systemd's notify socket and listeners,
	// and the restarter's marker of a parent.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "NOTIFY_SOCKET" || name == "LISTEN_FDS" || name == "LISTEN_PID" || name == "LISTEN_FDNAMES" ||
			strings.HasPrefix(name, "TABLEFLIP_") || name == workers.Env || name == workers.MetricsEnv
	})
	// Every worker of this parent, one restarted after a crash included,
	// runs what --settings-file said when the parent read it: its values
	// are handed down in the environment (after it, so they win, as the
	// file's win over the environment's), and the workers read no file.
	// A reload, a new parent, reads the file again for all of its own.
	// So is the secret key, whether it came from --secret-key-file (read
	// once, here) or was made now, when none was given: the workers share
	// it, so a form one serves is accepted by the others.
	args := slices.Clip(c.args)
	if c.fromFile != nil {
		for _, k := range slices.Sorted(maps.Keys(c.fromFile)) {
			env = append(env, k+"="+c.fromFile[k])
		}
		args = append(args, "--settings-file=")
	}
	key := string(c.site.SecretKey)
	if key == "" {
		b := make([]byte, 32)
		rand.Read(b)
		key = hex.EncodeToString(b)
	}
	env = append(env, "LOREM_SECRET_KEY="+key)
	args = append(args, "--secret-key-file=")
	return workers.New(workers.Config{Log: log, Exe: exe, Args: append([]string{"serve"}, args...), Env: env,
		Listener: lnFile, N: c.workers, StopTimeout: c.shutdownTimeout})
}
