package load

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func mustRun(t *testing.T, cfg Config) *Result {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestExactCountsAndBytes(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("X-Test") != "yes" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		n := hits.Add(1)
		if n%4 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
		}
		w.Write([]byte("0123456789"))
	}))
	defer srv.Close()
	res := mustRun(t, Config{URL: srv.URL, Method: "POST", Header: http.Header{"X-Test": {"yes"}}, Concurrency: 8, Requests: 400})
	if res.Requests != 400 || hits.Load() != 400 {
		t.Fatalf("requests %d, server hits %d, want 400", res.Requests, hits.Load())
	}
	if res.StatusCodes[200] != 300 || res.StatusCodes[500] != 100 || res.Failures != 100 {
		t.Fatalf("statuses %v, failures %d", res.StatusCodes, res.Failures)
	}
	if res.Bytes != 4000 || res.Responses() != 400 {
		t.Fatalf("bytes %d, responses %d", res.Bytes, res.Responses())
	}
	if s := res.Summary(); s.StatusCodes["200"] != 300 || s.BytesPerRequest != 10 || len(s.Percentiles) != len(StandardPercentiles) {
		t.Fatalf("summary %+v", s)
	}
}

func TestRedirects(t *testing.T) {
	var starts, ends atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /start", func(w http.ResponseWriter, r *http.Request) {
		starts.Add(1)
		http.Redirect(w, r, "/end", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /end", func(w http.ResponseWriter, r *http.Request) {
		ends.Add(1)
		w.Write([]byte("the end"))
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	t.Run("Followed", func(t *testing.T) {
		res := mustRun(t, Config{URL: srv.URL + "/start", Method: "POST", Concurrency: 4, Requests: 100})
		if got := res.StatusCodes[200]; got != 100 {
			t.Errorf("200s = %d, want 100 (statuses %v)", got, res.StatusCodes)
		}
		if got := starts.Load(); got != 100 {
			t.Errorf("starts = %d, want 100", got)
		}
		if got := ends.Load(); got != 100 {
			t.Errorf("ends = %d, want 100", got)
		}
		if res.Bytes != 700 {
			t.Errorf("bytes = %d, want 700", res.Bytes)
		}
	})
	t.Run("Disabled", func(t *testing.T) {
		ends.Store(0)
		res := mustRun(t, Config{URL: srv.URL + "/start", Method: "POST", Concurrency: 4, Requests: 50, DisableRedirects: true})
		if res.StatusCodes[303] != 50 || ends.Load() != 0 {
			t.Fatalf("statuses %v, ends %d", res.StatusCodes, ends.Load())
		}
	})
	t.Run("TooMany", func(t *testing.T) {
		res := mustRun(t, Config{URL: srv.URL + "/loop", Concurrency: 2, Requests: 4})
		if res.Errors["too many redirects"] != 4 {
			t.Fatalf("errors %v", res.Errors)
		}
	})
	t.Run("Limited", func(t *testing.T) {
		var loops atomic.Int64
		mux := http.NewServeMux()
		mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
			loops.Add(1)
			http.Redirect(w, r, "/loop", http.StatusFound)
		})
		srv := httptest.NewServer(mux)
		defer srv.Close()
		res := mustRun(t, Config{URL: srv.URL + "/loop", Concurrency: 1, Requests: 2, MaxRedirects: 3})
		// Each request: the first answer and three redirects followed.
		if res.Errors["too many redirects"] != 2 || loops.Load() != 8 {
			t.Fatalf("errors %v, %d hits, want 2 × (1 + 3)", res.Errors, loops.Load())
		}
	})
	t.Run("DisabledRedirectIsASuccess", func(t *testing.T) {
		res := mustRun(t, Config{URL: srv.URL + "/start", Method: "POST", Concurrency: 1, Requests: 5, DisableRedirects: true})
		if res.Successes() != 5 || res.Failures != 0 || res.Measured() != 5 {
			t.Fatalf("successes %d, failures %d, measured %d", res.Successes(), res.Failures, res.Measured())
		}
	})
}

// TestFailuresAreNotSuccesses: a server that answers every request with an
// error status has a success rate of 0 and no latency figures; half
// answered 503 leaves half the latencies, and the throughput of successes
// is half the throughput.
func TestFailuresAreNotSuccesses(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/missing":
			http.NotFound(w, r)
		case n.Add(1)%2 == 0:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	res := mustRun(t, Config{URL: srv.URL + "/missing", Concurrency: 2, Requests: 20})
	if got := res.Successes(); got != 0 {
		t.Errorf("404s: successes = %d, want 0", got)
	}
	if got := res.SuccessRate(); got != 0 {
		t.Errorf("404s: success rate = %v, want 0", got)
	}
	if got := res.Measured(); got != 0 {
		t.Errorf("404s: measured = %d, want 0", got)
	}
	if got := res.Responses(); got != 20 {
		t.Errorf("404s: answered = %d, want 20", got)
	}
	if got := res.SuccessesPerSec(); got != 0 {
		t.Errorf("404s: successes/s = %v, want 0", got)
	}
	res = mustRun(t, Config{URL: srv.URL + "/half", Concurrency: 1, Requests: 40})
	if got := res.Successes(); got != 20 {
		t.Errorf("half 503: successes = %d, want 20", got)
	}
	if got := res.SuccessRate(); got != 0.5 {
		t.Errorf("half 503: success rate = %v, want 0.5", got)
	}
	if got := res.Measured(); got != 20 {
		t.Errorf("half 503: measured = %d, want 20", got)
	}
	if got := res.StatusCodes[503]; got != 20 {
		t.Errorf("half 503: 503s = %d, want 20 (statuses %v)", got, res.StatusCodes)
	}
	if got, want := res.SuccessesPerSec(), res.RequestsPerSec()/2; got < want*0.99 || got > want*1.01 {
		t.Fatalf("successes/s %v, want half of %v", got, res.RequestsPerSec())
	}
	var total int64
	for _, p := range res.Timeline {
		total += p.Successes + p.Failures
	}
	if total != 40 {
		t.Fatalf("timeline holds %d requests, want 40: %+v", total, res.Timeline)
	}
}

// TestOpenLoopReportsItsRate: 2 requests per second for 3 s is six requests
// sent, and a rate of 2 per second over the window, not over the time to
// the last answer (2.5 s).
func TestOpenLoopReportsItsRate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	res := mustRun(t, Config{URL: srv.URL, Concurrency: 4, Duration: 3 * time.Second, Rate: 2})
	if res.Sent != 6 || res.Requests != 6 {
		t.Fatalf("sent %d, finished %d, want 6", res.Sent, res.Requests)
	}
	for name, v := range map[string]float64{"send rate": res.SendRate, "req/s": res.RequestsPerSec(), "successes/s": res.SuccessesPerSec()} {
		if v < 1.6 || v > 2.4 {
			t.Errorf("%s %.2f, want 2 ± 20 %%", name, v)
		}
	}
}

// TestOpenLoopCountsLateRequests: one worker against a server that takes
// 50 ms a request cannot start requests due every 10 ms on time; the
// result says how many were late and by how much.
func TestOpenLoopCountsLateRequests(t *testing.T) {
	srv := serialServer(50 * time.Millisecond)
	defer srv.Close()
	res := mustRun(t, Config{URL: srv.URL, Concurrency: 1, Requests: 10, Rate: 100})
	// Request i starts when request i-1 ends, at ≥ 50·i ms, but is due at
	// 10·i ms: every one but the first is ≥ 40·i ms late.
	if res.Late < 9 || res.LateMax < 300*time.Millisecond || res.LateMean <= 0 {
		t.Fatalf("late %d, mean %v, max %v; want 9 late, the last ≥ 360 ms", res.Late, res.LateMean, res.LateMax)
	}
	if res.SendRate >= 100 {
		t.Fatalf("send rate %.1f: the generator could not keep 100/s", res.SendRate)
	}
}

func TestErrorsAreClassified(t *testing.T) {
	t.Run("Refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		res := mustRun(t, Config{URL: "http://" + addr + "/", Concurrency: 2, Requests: 10})
		if got := res.Errors["connection refused"]; got != 10 {
			t.Errorf("connection refused = %d, want 10 (errors %v)", got, res.Errors)
		}
		if res.Failures != 10 {
			t.Errorf("failures = %d, want 10", res.Failures)
		}
		if got := res.Responses(); got != 0 {
			t.Errorf("answered = %d, want 0", got)
		}
		if got := res.Successes(); got != 0 {
			t.Errorf("successes = %d, want 0", got)
		}
		if got := res.Measured(); got != 0 {
			t.Errorf("measured = %d, want 0", got)
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		res := mustRun(t, Config{URL: srv.URL, Concurrency: 3, Requests: 6, Timeout: 50 * time.Millisecond})
		if res.Errors["timeout"] != 6 {
			t.Fatalf("errors %v", res.Errors)
		}
	})
	t.Run("ClosedConnection", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		res := mustRun(t, Config{URL: srv.URL, Concurrency: 1, Requests: 3, DisableKeepAlives: true})
		if res.Errors["connection closed before the response (EOF)"] != 3 {
			t.Fatalf("errors %v", res.Errors)
		}
	})
}

// TestPercentilesOfKnownDistribution feeds 1…10,000 µs, once each: every
// percentile p must be p% of 10 ms within the histogram's 0.1% precision.
func TestPercentilesOfKnownDistribution(t *testing.T) {
	rec := newRecorder(time.Now())
	for us := 1; us <= 10000; us++ {
		rec.recordResponse(200, true, 1, time.Duration(us)*time.Microsecond)
	}
	res := rec.result(Config{Concurrency: 1}, time.Now(), time.Second)
	for _, p := range []float64{10, 50, 90, 99, 99.9} {
		want := time.Duration(p*100) * time.Microsecond
		got := res.Percentile(p)
		if diff := got - want; diff < -want/500 || diff > want/500 {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if res.Fastest() != time.Microsecond || res.Slowest() < 9990*time.Microsecond || res.Slowest() > 10010*time.Microsecond {
		t.Errorf("fastest %v, slowest %v", res.Fastest(), res.Slowest())
	}
	if m := res.Mean(); m < 4990*time.Microsecond || m > 5010*time.Microsecond {
		t.Errorf("mean %v", m)
	}
	if res.RequestsPerSec() != 10000 {
		t.Errorf("rps %v", res.RequestsPerSec())
	}
	var sum int64
	buckets := res.LinearBuckets(10)
	for _, b := range buckets {
		sum += b.Count
	}
	if sum != 10000 || len(buckets) != 11 || buckets[0].Count != 1 {
		t.Errorf("linear buckets %v", buckets)
	}
	// Uniform data: the ten equal buckets hold about 1,000 each.
	for _, b := range buckets[1:] {
		if b.Count < 950 || b.Count > 1050 {
			t.Errorf("bucket ≤%v holds %d", b.Upper, b.Count)
		}
	}
	sum = 0
	for _, b := range res.LogBuckets(1.25) {
		sum += b.Count
	}
	if sum != 10000 {
		t.Errorf("log buckets hold %d", sum)
	}
}

// serialServer answers one request at a time, each taking d: a server with
// a capacity of 1/d requests per second.
func serialServer(d time.Duration) *httptest.Server {
	var mu sync.Mutex
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		time.Sleep(d)
		mu.Unlock()
	}))
}

// TestOpenLoopIncludesQueueing: a server that does 100 requests/s, asked
// for 200/s. The closed loop (one worker) politely waits, so it measures
// the server alone; the open loop measures from each request's scheduled
// time, so the backlog that builds up shows in its latencies.
//
// What it checks follows from arithmetic, however slow the machine: all 100
// open-loop requests are due within 495 ms, but the server, one at a time
// and 10 ms each, cannot answer the last 11 before 900 ms, so whatever the
// order those are at least 405 ms late: p90 and p99 must show it. The
// closed loop's requests never overlap, so their latencies add up to no
// more than its run.
func TestOpenLoopIncludesQueueing(t *testing.T) {
	srv := serialServer(10 * time.Millisecond)
	defer srv.Close()

	closed := mustRun(t, Config{URL: srv.URL, Concurrency: 1, Requests: 40})
	if closed.Requests != 40 || closed.StatusCodes[200] != 40 {
		t.Fatalf("closed loop: %d requests, %v", closed.Requests, closed.StatusCodes)
	}
	// 1% for the histogram's rounding.
	if sum := closed.Mean() * 40; sum > closed.Elapsed+closed.Elapsed/100 {
		t.Errorf("closed loop latencies add up to %v, more than the %v it ran: it counts time it did not wait", sum, closed.Elapsed)
	}
	open := mustRun(t, Config{URL: srv.URL, Concurrency: 50, Requests: 100, Rate: 200})
	if open.Requests != 100 || open.StatusCodes[200] != 100 {
		t.Fatalf("open loop: %d requests, %v", open.Requests, open.StatusCodes)
	}
	for _, p := range []float64{90, 99} {
		if got := open.Percentile(p); got < 400*time.Millisecond {
			t.Errorf("open loop p%v %v hides the queueing: 11 of the 100 requests were at least 405 ms late", p, got)
		}
	}
}

func TestDurationStopsAndCountsInFlight(t *testing.T) {
	srv := serialServer(time.Millisecond)
	defer srv.Close()
	var progress atomic.Int64
	res := mustRun(t, Config{URL: srv.URL, Concurrency: 4, Duration: 300 * time.Millisecond,
		OnProgress: func(p Progress) { progress.Add(1) }, ProgressEvery: 50 * time.Millisecond})
	if res.Elapsed < 300*time.Millisecond || res.Elapsed > 2*time.Second {
		t.Fatalf("elapsed %v", res.Elapsed)
	}
	if res.Requests == 0 || res.Requests != res.StatusCodes[200] || res.Failures != 0 {
		t.Fatalf("requests %d, statuses %v, errors %v", res.Requests, res.StatusCodes, res.Errors)
	}
	if progress.Load() < 3 {
		t.Fatalf("progress reported %d times", progress.Load())
	}
}

// TestGiveUpAfter: a URL that refuses every connection ends the test at
// GiveUpAfter, in the closed and the open loop, with GaveUp set; a server
// that answers, however slowly or badly, runs for the whole Duration.
func TestGiveUpAfter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer slow.Close()
	for _, tc := range []struct {
		name       string
		cfg        Config
		wantGaveUp bool
		minElapsed time.Duration
		maxElapsed time.Duration
	}{
		{"ClosedLoopClosedPort", Config{URL: closed, Concurrency: 2, Duration: 30 * time.Second}, true, 200 * time.Millisecond, 2 * time.Second},
		{"OpenLoopClosedPort", Config{URL: closed, Concurrency: 2, Rate: 100, Duration: 30 * time.Second}, true, 200 * time.Millisecond, 2 * time.Second},
		{"ClosedPortByCount", Config{URL: closed, Concurrency: 2, Requests: 10}, false, 0, 2 * time.Second},
		{"SlowErrors", Config{URL: slow.URL, Concurrency: 2, Duration: 1500 * time.Millisecond}, false, 1500 * time.Millisecond, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.GiveUpAfter = 200 * time.Millisecond
			res := mustRun(t, tc.cfg)
			if res.GaveUp != tc.wantGaveUp {
				t.Errorf("GaveUp = %v, want %v", res.GaveUp, tc.wantGaveUp)
			}
			if res.Elapsed < tc.minElapsed || res.Elapsed > tc.maxElapsed {
				t.Errorf("elapsed %v, want %v to %v", res.Elapsed, tc.minElapsed, tc.maxElapsed)
			}
			if got := res.Summary().GaveUp; got != tc.wantGaveUp {
				t.Errorf("Summary().GaveUp = %v, want %v", got, tc.wantGaveUp)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	srv := serialServer(time.Millisecond)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, Config{URL: srv.URL, Concurrency: 2, Duration: time.Hour})
	if err != nil || res.Elapsed > 5*time.Second {
		t.Fatalf("res %v, err %v", res, err)
	}
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no url":        {Concurrency: 1, Requests: 1},
		"bad scheme":    {URL: "ftp://x/", Concurrency: 1, Requests: 1},
		"no host":       {URL: "http:///x", Concurrency: 1, Requests: 1},
		"no stop":       {URL: "http://127.0.0.1:1/", Concurrency: 1},
		"zero workers":  {URL: "http://127.0.0.1:1/", Requests: 1},
		"negative rate": {URL: "http://127.0.0.1:1/", Concurrency: 1, Requests: 1, Rate: -1},
		"n < c":         {URL: "http://127.0.0.1:1/", Concurrency: 10, Requests: 5},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Run(context.Background(), cfg); err == nil || !strings.HasPrefix(err.Error(), "load: ") {
				t.Fatalf("err = %v", err)
			}
		})
	}
}
