package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// A cluster is serve --workers N: this process listens, and N worker
// processes of the same executable, started with the same arguments and
// environment, serve on the listening socket it hands them, each with its
// own connections to the database, as Puma's cluster mode does. The
// parent migrates (and with --seed-if-empty seeds) the database before
// any worker starts, restarts a worker that exits (kill -9 included),
// answers /metrics for all of them, and forwards SIGTERM. On SIGHUP it is
// replaced as a single process is (see restarter): the new parent starts
// its own workers on the inherited socket and says it is ready once they
// all serve; then the old parent stops its workers, which finish what
// they are answering.
//
// A worker is told what it is by the environment: workerEnv its number,
// workerMetricsEnv the Unix socket its metrics are served on (in a
// directory of the parent's, 0700). Its descriptor 3 is the listening
// socket, 4 the pipe on which it says "ready".
const (
	workerEnv        = "LOREM_WORKER"
	workerMetricsEnv = "LOREM_WORKER_METRICS"
	// maxWorkers bounds --workers: beyond it each process's share of the
	// database's read connections and memory is mostly overhead.
	maxWorkers = 64
	// workerStartTimeout bounds how long a worker may take to serve.
	workerStartTimeout = time.Minute
)

// runWorker serves as worker n of a cluster.
func (c serveCommand) runWorker(ctx context.Context, n string, log *slog.Logger) error {
	lnFile, readyPipe := os.NewFile(3, "site listener"), os.NewFile(4, "ready pipe")
	if lnFile == nil || readyPipe == nil {
		return fmt.Errorf("%s=%s is set, but this process was not started as a worker (no descriptors 3 and 4)", workerEnv, n)
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
		path := os.Getenv(workerMetricsEnv)
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
	ready := func() error {
		_, err := readyPipe.WriteString("ready\n")
		readyPipe.Close()
		return err
	}
	return c.serve(ctx, s, ln, ready, nil)
}

// cluster is the parent's view of its workers.
type cluster struct {
	c        serveCommand
	log      *slog.Logger
	exe      string
	args     []string // serve's, which each worker is given too
	env      []string
	listener *os.File // the site's listening socket, handed to each worker
	dir      string   // the workers' metrics sockets

	restarts prometheus.Counter
	live     prometheus.Gauge

	supervisors sync.WaitGroup
	stopped     chan struct{} // closed by stop

	mu       sync.Mutex
	stopping bool
	workers  []*workerProcess // by number; a restarted one replaces its entry
}

// workerProcess is one started worker.
type workerProcess struct {
	n      int
	cmd    *exec.Cmd
	start  time.Time
	exited chan struct{} // closed once it has exited and been waited for
	err    error         // its exit, once exited is closed
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
	lnFile, err := listenerFile(tl)
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
	defer os.RemoveAll(cl.dir)

	reg := prometheus.NewRegistry()
	reg.MustRegister(cl.restarts, cl.live)
	if c.metrics {
		opsSrv, err := c.serveOps(restart, cl.metricsHandler(reg), log, stdout)
		if err != nil {
			return err
		}
		defer handOff(opsSrv)
	}
	c.logSettings(log)
	if err := cl.startAll(ctx); err != nil {
		cl.stop()
		return err
	}
	if err := restart.ready(); err != nil {
		cl.stop()
		return err
	}
	fmt.Fprintf(stdout, "Lorem News listening on http://%s (%d worker processes, %s)\n", ln.Addr(), c.workers, described)
	select {
	case <-ctx.Done():
		log.Info("shutting down: the workers finish the requests in flight", "timeout", c.shutdownTimeout)
	case <-restart.replaced():
		log.Info("a new process serves: the workers hand over their clients and finish the requests in flight", "timeout", c.shutdownTimeout)
	}
	return cl.stop()
}

// listenerFile is a descriptor of the listening socket for the workers to
// inherit, made without net's File method: that one marks its os.File as
// one whose Fd puts the descriptor in blocking mode, and os/exec calls Fd.
// The processes that share the socket share that mode: for a moment, an
// accept begun by a worker that lost the race for a connection would wait
// in the kernel for the next one, and that worker could not close its
// listener to stop until one came. A descriptor from os.NewFile is left
// as it is.
func listenerFile(tl *net.TCPListener) (*os.File, error) {
	rc, err := tl.SyscallConn()
	if err != nil {
		return nil, err
	}
	var dup uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		dup, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if errno != 0 {
		return nil, errno
	}
	return os.NewFile(dup, "site listener"), nil
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

// newCluster gathers what starting a worker takes: this executable, the
// arguments and environment of this serve, and the directory of the
// metrics sockets.
func (c serveCommand) newCluster(log *slog.Logger, lnFile *os.File) (*cluster, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--workers: find this executable: %w", err)
	}
	removeStaleWorkerDirs(log)
	dir, err := os.MkdirTemp("", workerDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("--workers: %w", err)
	}
	// Not a worker's business: systemd's notify socket and listeners,
	// and the restarter's marker of a parent.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "NOTIFY_SOCKET" || name == "LISTEN_FDS" || name == "LISTEN_PID" || name == "LISTEN_FDNAMES" ||
			strings.HasPrefix(name, "TABLEFLIP_") || name == workerEnv || name == workerMetricsEnv
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
	return &cluster{c: c, log: log, exe: exe, args: args, env: env, listener: lnFile, dir: dir,
		restarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "loremnews_worker_restarts_total", Help: "Worker processes started again after one exited."}),
		live:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "loremnews_workers", Help: "Worker processes serving now."}),
		workers:  make([]*workerProcess, c.workers),
		stopped:  make(chan struct{}),
	}, nil
}

// workerDirPrefix begins the name of a parent's directory of metrics
// sockets, in the temporary directory: its pid follows, then a random part.
const workerDirPrefix = "loremnews-workers-"

// removeStaleWorkerDirs removes the directories of metrics sockets that
// parents killed with -9 left behind (a parent that stops removes its
// own): those of this user whose parent's pid runs no longer.
func removeStaleWorkerDirs(log *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), workerDirPrefix+"*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), workerDirPrefix), "-", 2)[0])
		if err != nil || pid <= 0 {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(d, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || int(st.Uid) != os.Geteuid() {
			continue
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			continue // runs (or is another user's: EPERM)
		}
		if err := os.RemoveAll(d); err != nil {
			log.Warn("remove the metrics sockets of a server that was killed", "dir", d, "err", err)
		}
	}
}

// startAll starts every worker and returns once all serve, or the first
// failure.
func (cl *cluster) startAll(ctx context.Context) error {
	errs := make(chan error, len(cl.workers))
	for n := range cl.workers {
		go func() { errs <- cl.startWorker(n) }()
	}
	var first error
	for range cl.workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	for n := range cl.workers {
		cl.supervisors.Add(1)
		go cl.supervise(ctx, n)
	}
	return nil
}

// startWorker starts worker n and waits until it serves.
func (cl *cluster) startWorker(n int) error {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("worker %d: %w", n, err)
	}
	defer readyR.Close()
	cmd := exec.Command(cl.exe, append([]string{"serve"}, cl.args...)...)
	cmd.Env = append(slices.Clip(cl.env), workerEnv+"="+strconv.Itoa(n), workerMetricsEnv+"="+cl.metricsSocket(n))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.ExtraFiles = []*os.File{cl.listener, readyW}
	// A worker outlives no parent: if this process dies, it is told to
	// stop (and finishes what it answers).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	err = cmd.Start()
	readyW.Close()
	if err != nil {
		return fmt.Errorf("worker %d: start: %w", n, err)
	}
	w := &workerProcess{n: n, cmd: cmd, start: time.Now(), exited: make(chan struct{})}
	go func() {
		w.err = cmd.Wait()
		close(w.exited)
	}()
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(readyR).ReadString('\n')
		said <- line
	}()
	select {
	case line := <-said:
		if line != "ready\n" {
			<-w.exited
			return fmt.Errorf("worker %d exited before it served (%v): see the log above", n, w.err)
		}
	case <-time.After(workerStartTimeout):
		cmd.Process.Kill()
		<-w.exited
		return fmt.Errorf("worker %d did not serve within %v", n, workerStartTimeout)
	}
	cl.mu.Lock()
	stopping := cl.stopping
	if !stopping {
		cl.workers[n] = w
	}
	cl.mu.Unlock()
	if stopping { // started as the cluster stopped: stopped too
		cmd.Process.Signal(syscall.SIGTERM)
		<-w.exited
		return errClusterStopping
	}
	cl.live.Inc()
	return nil
}

// errClusterStopping: a worker was started as the cluster stopped.
var errClusterStopping = errors.New("the server is stopping")

// isStopping reports whether stop has been called.
func (cl *cluster) isStopping() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.stopping
}

// supervise starts worker n again each time it exits, until the cluster
// stops. One that dies within a second of starting is started again after
// a pause that grows to 10 s, so a worker that cannot start does not spin.
func (cl *cluster) supervise(ctx context.Context, n int) {
	defer cl.supervisors.Done()
	pause := time.Second
	for {
		cl.mu.Lock()
		w := cl.workers[n]
		cl.mu.Unlock()
		<-w.exited
		cl.live.Dec()
		if w.err == nil {
			// A worker exits 0 when told to stop (SIGTERM, SIGINT), and
			// whoever told it usually told this process too at the same
			// moment: systemd and a terminal signal every process of the
			// service. Give that signal a moment to arrive.
			select {
			case <-ctx.Done():
			case <-cl.stopped:
			case <-time.After(time.Second):
			}
		}
		if ctx.Err() != nil || cl.isStopping() {
			return
		}
		cl.log.Error("a worker exited; starting another", "worker", n, "pid", w.cmd.Process.Pid, "err", w.err)
		if time.Since(w.start) > time.Second {
			pause = time.Second
		}
		for {
			err := cl.startWorker(n)
			if err == nil {
				cl.restarts.Inc()
				break
			}
			if errors.Is(err, errClusterStopping) {
				return
			}
			cl.log.Error("start a worker", "worker", n, "err", err, "again_in", pause)
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return
			case <-cl.stopped:
				return
			}
			pause = min(2*pause, 10*time.Second)
		}
	}
}

// stop tells every worker to stop (SIGTERM: it hands its clients over and
// finishes the requests in flight), waits for them, and kills one still
// running after the shutdown timeout and 5 s more. It reports a worker
// that did not exit cleanly.
func (cl *cluster) stop() error {
	cl.mu.Lock()
	if !cl.stopping {
		close(cl.stopped)
	}
	cl.stopping = true
	workers := slices.Clone(cl.workers)
	cl.mu.Unlock()
	for _, w := range workers {
		if w != nil {
			w.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.After(cl.c.shutdownTimeout + 5*time.Second)
	var errs []error
	for _, w := range workers {
		if w == nil {
			continue
		}
		select {
		case <-w.exited:
		case <-deadline:
			w.cmd.Process.Kill()
			<-w.exited
		}
		if w.err != nil {
			errs = append(errs, fmt.Errorf("worker %d (PID %d): %w", w.n, w.cmd.Process.Pid, w.err))
		}
	}
	cl.supervisors.Wait()
	return errors.Join(errs...)
}

// metricsSocket is where worker n serves its metrics.
func (cl *cluster) metricsSocket(n int) string {
	return filepath.Join(cl.dir, strconv.Itoa(n)+".sock")
}

// metricsHandler answers /metrics for the whole server: the parent's own
// (reg) and every worker's, each sample labelled worker="N". A worker
// that does not answer (it is being restarted) is left out of that scrape.
func (cl *cluster) metricsHandler(reg *prometheus.Registry) http.Handler {
	gatherers := prometheus.Gatherers{reg}
	for n := range cl.c.workers {
		gatherers = append(gatherers, &workerGatherer{worker: strconv.Itoa(n), client: &http.Client{
			Timeout: 5 * time.Second,
			Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", cl.metricsSocket(n))
			}},
		}})
	}
	return promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// workerGatherer gathers one worker's metrics through its socket.
type workerGatherer struct {
	worker string
	client *http.Client
}

func (g *workerGatherer) Gather() ([]*dto.MetricFamily, error) {
	req, err := http.NewRequest("GET", "http://worker/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("worker %s: %w", g.worker, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("worker %s: metrics: %s", g.worker, resp.Status)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	var families []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err == io.EOF {
			break
		} else if err != nil {
			return families, fmt.Errorf("worker %s: metrics: %w", g.worker, err)
		}
		for _, m := range mf.Metric {
			m.Label = append(m.Label, &dto.LabelPair{Name: proto.String("worker"), Value: proto.String(g.worker)})
			slices.SortFunc(m.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
		}
		families = append(families, mf)
	}
	return families, nil
}
