// Package workers runs a server as N worker processes of one executable
// on one listening socket, as Puma's cluster mode does: the parent starts
// them with the socket it listens on, says it is ready once all serve,
// starts one again that exits (kill -9 included), answers /metrics for all
// of them, and stops them. A worker is told what it is by the environment
// (Env: its number; MetricsEnv: the Unix socket its metrics are served
// on, in a directory of the parent's, 0700); its descriptor 3 is the
// listening socket, 4 the pipe on which it says it is ready (Inherited,
// Ready).
package workers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

const (
	// Env, in a worker's environment, is its number.
	Env = "LOREM_WORKER"
	// MetricsEnv, in a worker's environment, is the Unix socket on which
	// it serves its metrics.
	MetricsEnv = "LOREM_WORKER_METRICS"
	// Max bounds the workers of a cluster: beyond it each process's share
	// of the database's read connections and memory is mostly overhead.
	Max = 64
	// StartTimeout bounds how long a worker may take to serve.
	StartTimeout = time.Minute
	// readyLine is what a worker writes on its pipe once it serves.
	readyLine = "ready\n"
)

// Config is what starting the workers takes.
type Config struct {
	Log      *slog.Logger
	Exe      string   // the executable each worker runs
	Args     []string // its arguments
	Env      []string // its environment, to which Env and MetricsEnv are added
	Listener *os.File // the listening socket, handed to each worker
	N        int      // how many workers
	// StopTimeout is how long a worker may take to finish its requests
	// once told to stop; Stop kills one still running 5 s after it.
	StopTimeout time.Duration
}

// New prepares a cluster of cfg.N workers, none started yet: the
// directory of their metrics sockets (Close removes it), after removing
// those that parents killed with -9 left behind.
func New(cfg Config) (*Cluster, error) {
	removeStaleDirs(cfg.Log)
	dir, err := os.MkdirTemp("", dirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("workers: the directory of their metrics sockets: %w", err)
	}
	return &Cluster{cfg: cfg, dir: dir,
		restarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "loremnews_worker_restarts_total", Help: "Worker processes started again after one exited."}),
		live:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "loremnews_workers", Help: "Worker processes serving now."}),
		workers:  make([]*workerProcess, cfg.N),
		stopped:  make(chan struct{}),
	}, nil
}

// Collectors are the cluster's own metrics: the workers serving now, and
// those started again after one exited.
func (cl *Cluster) Collectors() []prometheus.Collector {
	return []prometheus.Collector{cl.restarts, cl.live}
}

// Close removes the directory of the metrics sockets, once the workers
// have stopped.
func (cl *Cluster) Close() error { return os.RemoveAll(cl.dir) }

// Inherited are, in a worker, the listening socket and the pipe its
// parent handed it; ok is false in a process not started as a worker.
func Inherited() (listener, ready *os.File, ok bool) {
	listener, ready = os.NewFile(3, "site listener"), os.NewFile(4, "ready pipe")
	return listener, ready, listener != nil && ready != nil
}

// Ready tells the parent, on the pipe Inherited gave, that this worker
// serves.
func Ready(pipe *os.File) error {
	_, err := pipe.WriteString(readyLine)
	pipe.Close()
	return err
}

// Cluster is the parent's view of its workers.
type Cluster struct {
	cfg Config
	dir string // the workers' metrics sockets

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

// ListenerFile is a descriptor of the listening socket for the workers to
// inherit, made without net's File method: that one marks its os.File as
// one whose Fd puts the descriptor in blocking mode, and os/exec calls Fd.
// The processes that share the socket share that mode: for a moment, an
// accept begun by a worker that lost the race for a connection would wait
// in the kernel for the next one, and that worker could not close its
// listener to stop until one came. A descriptor from os.NewFile is left
// as it is.
func ListenerFile(tl *net.TCPListener) (*os.File, error) {
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

// dirPrefix begins the name of a parent's directory of metrics
// sockets, in the temporary directory: its pid follows, then a random part.
const dirPrefix = "loremnews-workers-"

// removeStaleDirs removes the directories of metrics sockets that
// parents killed with -9 left behind (a parent that stops removes its
// own): those of this user whose parent's pid runs no longer.
func removeStaleDirs(log *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(d), dirPrefix), "-", 2)[0])
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

// StartAll starts every worker and returns once all serve, or the first
// failure.
func (cl *Cluster) StartAll(ctx context.Context) error {
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
func (cl *Cluster) startWorker(n int) error {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("worker %d: %w", n, err)
	}
	defer readyR.Close()
	cmd := exec.Command(cl.cfg.Exe, cl.cfg.Args...)
	cmd.Env = append(slices.Clip(cl.cfg.Env), Env+"="+strconv.Itoa(n), MetricsEnv+"="+cl.metricsSocket(n))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.ExtraFiles = []*os.File{cl.cfg.Listener, readyW}
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
		if line != readyLine {
			<-w.exited
			return fmt.Errorf("worker %d exited before it served (%v): see the log above", n, w.err)
		}
	case <-time.After(StartTimeout):
		cmd.Process.Kill()
		<-w.exited
		return fmt.Errorf("worker %d did not serve within %v", n, StartTimeout)
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
func (cl *Cluster) isStopping() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.stopping
}

// supervise starts worker n again each time it exits, until the cluster
// stops. One that dies within a second of starting is started again after
// a pause that grows to 10 s, so a worker that cannot start does not spin.
func (cl *Cluster) supervise(ctx context.Context, n int) {
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
		cl.cfg.Log.Error("a worker exited; starting another", "worker", n, "pid", w.cmd.Process.Pid, "err", w.err)
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
			cl.cfg.Log.Error("start a worker", "worker", n, "err", err, "again_in", pause)
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

// Stop tells every worker to stop (SIGTERM: it hands its clients over and
// finishes the requests in flight), waits for them, and kills one still
// running after the shutdown timeout and 5 s more. It reports a worker
// that did not exit cleanly.
func (cl *Cluster) Stop() error {
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
	deadline := time.After(cl.cfg.StopTimeout + 5*time.Second)
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
func (cl *Cluster) metricsSocket(n int) string {
	return filepath.Join(cl.dir, strconv.Itoa(n)+".sock")
}

// MetricsHandler answers /metrics for the whole server: the parent's own
// (reg) and every worker's, each sample labelled worker="N". A worker
// that does not answer (it is being restarted) is left out of that scrape.
func (cl *Cluster) MetricsHandler(reg *prometheus.Registry) http.Handler {
	gatherers := prometheus.Gatherers{reg}
	for n := range cl.cfg.N {
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
