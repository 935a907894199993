// Package load is an HTTP load generator in the spirit of hey and oha: a
// closed loop of concurrent workers (each sends its next request when the
// last one is answered), or an open loop at a fixed arrival rate whose
// latencies are measured from each request's intended start, so queueing
// in the server is not hidden (the coordinated-omission problem that wrk2
// and oha --latency-correction solve).
//
// It is a library: Run takes a Config and returns a Result; it prints
// nothing and knows nothing of the application under test. Latencies go
// into an HDR histogram (github.com/HdrHistogram/hdrhistogram-go), which
// keeps three significant digits at every scale.
package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes one load test.
type Config struct {
	URL    string
	Method string // default GET
	Header http.Header
	Body   []byte

	// Concurrency is the number of workers: in the closed loop, requests in
	// flight at once; in the open loop, the most that may be in flight.
	Concurrency int
	// Requests stops after this many requests (0: no limit).
	Requests int
	// Duration stops sending new requests after this long (0: no limit);
	// requests in flight then finish and are counted, as hey does.
	Duration time.Duration
	// Rate switches to the open loop: this many requests per second in
	// total, each latency measured from its scheduled start time.
	Rate float64

	DisableRedirects  bool          // report 3xx instead of following them (then a 3xx is a success)
	MaxRedirects      int           // redirects followed per request; 0 means 10, as net/http
	DisableKeepAlives bool          // a new connection for every request
	Timeout           time.Duration // per request, redirects included; default 20 s

	// GiveUpAfter, if set, ends the test this long after its start when no
	// request has had an answer and some were refused a connection: nothing
	// listens at the URL, and trying again for the rest of Duration would
	// only report the same refusal later. Result.GaveUp says it happened.
	GiveUpAfter time.Duration

	// OnProgress, if set, is called every ProgressEvery (default 250 ms)
	// from another goroutine while the test runs.
	OnProgress    func(Progress)
	ProgressEvery time.Duration

	// OnResponse, if set, is called with each final response (its body
	// read and closed), from the worker that made the request, so it must
	// be safe for concurrent use: to check what a server said it did,
	// from its headers.
	OnResponse func(*http.Response)
}

// Progress is a snapshot taken while a test runs.
type Progress struct {
	Elapsed  time.Duration
	Requests int64   // finished so far
	Failures int64   // finished without success so far (errors and error statuses)
	RPS      float64 // finished per second over the last interval
}

func (c *Config) validate() error {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return errors.New("load: no URL")
	case !strings.Contains(c.URL, "://") && !strings.HasPrefix(c.URL, "/"):
		// "localhost:8080/" would parse with the scheme "localhost", and
		// "127.0.0.1:8080/" not at all: name the likely fix instead.
		return fmt.Errorf("load: URL %q has no scheme; did you mean http://%s?", c.URL, c.URL)
	case err != nil:
		return fmt.Errorf("load: bad URL %q: %w", c.URL, err)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("load: URL %q must be http:// or https:// with a host", c.URL)
	case c.Concurrency < 1:
		return fmt.Errorf("load: concurrency must be at least 1, not %d", c.Concurrency)
	case c.Requests < 0 || c.Duration < 0 || c.Rate < 0 || c.Timeout < 0 || c.MaxRedirects < 0:
		return errors.New("load: requests, duration, rate, timeout and redirects must not be negative")
	case c.Requests == 0 && c.Duration == 0:
		return errors.New("load: give a number of requests or a duration")
	case c.Requests > 0 && c.Rate == 0 && c.Requests < c.Concurrency:
		return fmt.Errorf("load: %d requests cannot keep %d workers busy; lower the concurrency", c.Requests, c.Concurrency)
	}
	return nil
}

// Run runs the test until its request count or duration is reached, or ctx
// ends (then requests in flight are cancelled and counted as errors).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Method == "" {
		cfg.Method = http.MethodGet
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 250 * time.Millisecond
	}
	transport := &http.Transport{
		Proxy:               nil, // measure the target, not a proxy from the environment
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		DisableKeepAlives:   cfg.DisableKeepAlives,
		DisableCompression:  true, // count the bytes the server sends, as hey does
		ForceAttemptHTTP2:   false,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: cfg.Timeout}
	if cfg.DisableRedirects {
		client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	} else if cfg.MaxRedirects > 0 {
		client.CheckRedirect = func(_ *http.Request, via []*http.Request) error {
			if len(via) > cfg.MaxRedirects {
				return fmt.Errorf("stopped after %d redirects", cfg.MaxRedirects)
			}
			return nil
		}
	}

	r := &runner{cfg: cfg, client: client, rec: newRecorder(time.Now())}
	return r.run(ctx)
}

type runner struct {
	cfg    Config
	client *http.Client
	rec    *recorder
	issued atomic.Int64 // requests started (closed loop) or scheduled (open loop)
	stop   atomic.Bool  // duration reached (or given up): send nothing new
	gaveUp atomic.Bool  // stopped by GiveUpAfter
}

func (r *runner) run(ctx context.Context) (*Result, error) {
	start := r.rec.start
	var timers sync.WaitGroup
	done := make(chan struct{})
	if r.cfg.Duration > 0 {
		t := time.AfterFunc(r.cfg.Duration, func() { r.stop.Store(true) })
		defer t.Stop()
	}
	if r.cfg.GiveUpAfter > 0 {
		t := time.AfterFunc(r.cfg.GiveUpAfter, func() {
			if r.rec.refusedOnly() {
				r.gaveUp.Store(true)
				r.stop.Store(true)
			}
		})
		defer t.Stop()
	}
	if r.cfg.OnProgress != nil {
		timers.Add(1)
		go func() {
			defer timers.Done()
			r.reportProgress(start, done)
		}()
	}

	var workers sync.WaitGroup
	if r.cfg.Rate > 0 {
		due := make(chan time.Time, r.cfg.Concurrency)
		for range r.cfg.Concurrency {
			workers.Add(1)
			go func() {
				defer workers.Done()
				r.openLoopWorker(ctx, due)
			}()
		}
		r.schedule(ctx, start, due)
		close(due)
	} else {
		for range r.cfg.Concurrency {
			workers.Add(1)
			go func() {
				defer workers.Done()
				r.closedLoopWorker(ctx)
			}()
		}
	}
	workers.Wait()
	elapsed := time.Since(start)
	close(done)
	timers.Wait()
	res := r.rec.result(r.cfg, start, elapsed)
	res.GaveUp = r.gaveUp.Load()
	return res, nil
}

// closedLoopWorker sends a request, waits for its answer, and repeats.
func (r *runner) closedLoopWorker(ctx context.Context) {
	for ctx.Err() == nil && !r.stop.Load() {
		if n := r.issued.Add(1); r.cfg.Requests > 0 && n > int64(r.cfg.Requests) {
			return
		}
		start := time.Now()
		r.send(ctx, start)
	}
}

// schedule hands out start times at the configured rate: the i-th request
// is due at start + i/rate whatever happened before, so a slow server makes
// requests late, and their lateness counts in their latency.
func (r *runner) schedule(ctx context.Context, start time.Time, due chan<- time.Time) {
	interval := time.Duration(float64(time.Second) / r.cfg.Rate)
	for i := int64(0); ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if r.cfg.Requests > 0 && i >= int64(r.cfg.Requests) || r.cfg.Duration > 0 && at.Sub(start) >= r.cfg.Duration || r.stop.Load() {
			return
		}
		if d := time.Until(at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		r.issued.Add(1)
		select {
		case due <- at: // blocks while every worker is busy: the queueing we want to see
		case <-ctx.Done():
			return
		}
	}
}

func (r *runner) openLoopWorker(ctx context.Context, due <-chan time.Time) {
	for at := range due {
		if ctx.Err() != nil {
			continue // drain
		}
		r.rec.recordSend(at, time.Now())
		r.send(ctx, at)
	}
}

// send makes one request (following redirects unless disabled), reads the
// whole body, and records the outcome with its latency from since.
func (r *runner) send(ctx context.Context, since time.Time) {
	req, err := http.NewRequestWithContext(ctx, r.cfg.Method, r.cfg.URL, bytes.NewReader(r.cfg.Body))
	if err != nil {
		r.rec.recordError(classify(err))
		return
	}
	for k, vs := range r.cfg.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if h := r.cfg.Header.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := r.client.Do(req)
	if err != nil {
		r.rec.recordError(classify(err))
		return
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		r.rec.recordError(classify(err))
		return
	}
	r.rec.recordResponse(resp.StatusCode, isSuccess(resp.StatusCode, r.cfg.DisableRedirects), n, time.Since(since))
	if r.cfg.OnResponse != nil {
		r.cfg.OnResponse(resp)
	}
}

// isSuccess reports whether a final status counts as a success: 2xx, or
// 3xx when redirects are not followed (then the redirect is the answer
// asked for).
func isSuccess(status int, redirectsOff bool) bool {
	return status >= 200 && status <= 299 || redirectsOff && status >= 300 && status <= 399
}

func (r *runner) reportProgress(start time.Time, done <-chan struct{}) {
	t := time.NewTicker(r.cfg.ProgressEvery)
	defer t.Stop()
	var lastN int64
	last := start
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			n, fails := r.rec.counts()
			r.cfg.OnProgress(Progress{
				Elapsed:  now.Sub(start),
				Requests: n,
				Failures: fails,
				RPS:      float64(n-lastN) / now.Sub(last).Seconds(),
			})
			lastN, last = n, now
		}
	}
}
