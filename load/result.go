package load

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds from 1 µs to 1 h with three
// significant digits (0.1% resolution at every scale).
const (
	histMin     = 1
	histMax     = int64(time.Hour / time.Microsecond)
	histSigFigs = 3
)

// lateThreshold is how far behind its schedule an open-loop request may
// start before it counts as late: the generator could not keep the rate.
const lateThreshold = time.Millisecond

// recorder collects outcomes from all workers. One mutex is cheaper than it
// looks at these rates (tens of thousands per second), and a single HDR
// histogram keeps memory small at any concurrency.
type recorder struct {
	start     time.Time
	mu        sync.Mutex
	hist      *hdrhistogram.Histogram // latencies of successful responses
	statuses  map[int]int64
	errors    map[string]int64
	n         int64 // responses + errors
	responses int64
	fails     int64 // errors + responses that were not a success
	bytes     int64
	timeline  []*second

	// Open loop: requests handed to a worker, how late, and the last.
	sent      int64
	late      int64
	lateMax   time.Duration
	lateTotal time.Duration
	lastSend  time.Time
}

// second is one second of a run, by completion time.
type second struct {
	successes, failures int64
	hist                *hdrhistogram.Histogram // successful responses' latencies
}

func newRecorder(start time.Time) *recorder {
	return &recorder{
		start:    start,
		hist:     hdrhistogram.New(histMin, histMax, histSigFigs),
		statuses: map[int]int64{},
		errors:   map[string]int64{},
	}
}

// at returns the timeline's bucket for now, growing the timeline as needed.
func (r *recorder) at(now time.Time) *second {
	i := max(0, int(now.Sub(r.start)/time.Second))
	for len(r.timeline) <= i {
		// Two significant digits are plenty for a per-second p99 and keep
		// each second's histogram small.
		r.timeline = append(r.timeline, &second{hist: hdrhistogram.New(histMin, histMax, 2)})
	}
	return r.timeline[i]
}

func (r *recorder) recordResponse(status int, success bool, n int64, latency time.Duration) {
	us := min(max(latency.Microseconds(), histMin), histMax)
	now := time.Now()
	r.mu.Lock()
	r.statuses[status]++
	r.n++
	r.responses++
	sec := r.at(now)
	if success {
		r.hist.RecordValue(us)
		sec.hist.RecordValue(us)
		sec.successes++
	} else {
		r.fails++
		sec.failures++
	}
	r.bytes += n
	r.mu.Unlock()
}

func (r *recorder) recordError(kind string) {
	now := time.Now()
	r.mu.Lock()
	r.errors[kind]++
	r.n++
	r.fails++
	r.at(now).failures++
	r.mu.Unlock()
}

// recordSend notes an open-loop request due at due that a worker starts at now.
func (r *recorder) recordSend(due, now time.Time) {
	r.mu.Lock()
	r.sent++
	if late := now.Sub(due); late > lateThreshold {
		r.late++
		r.lateTotal += late
		r.lateMax = max(r.lateMax, late)
	}
	if now.After(r.lastSend) {
		r.lastSend = now
	}
	r.mu.Unlock()
}

// refusedOnly reports whether no request has had an answer yet and at
// least one was refused a connection.
func (r *recorder) refusedOnly() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.responses == 0 && r.errors[refused] > 0
}

func (r *recorder) counts() (n, fails int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.fails
}

func (r *recorder) result(cfg Config, start time.Time, elapsed time.Duration) *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := &Result{
		URL:         cfg.URL,
		Method:      cfg.Method,
		Concurrency: cfg.Concurrency,
		Rate:        cfg.Rate,
		Duration:    cfg.Duration,
		NoRedirects: cfg.DisableRedirects,
		Started:     start,
		Elapsed:     elapsed,
		Requests:    r.n,
		Answered:    r.responses,
		Failures:    r.fails,
		Bytes:       r.bytes,
		StatusCodes: r.statuses,
		Errors:      r.errors,
		Sent:        r.sent,
		Late:        r.late,
		LateMax:     r.lateMax,
		hist:        r.hist,
	}
	if r.late > 0 {
		res.LateMean = r.lateTotal / time.Duration(r.late)
	}
	if cfg.Rate > 0 && r.sent > 0 {
		// The window the requests were sent over: the -z window, or for -n
		// the schedule's length; longer if the generator fell behind.
		window := cfg.Duration
		if window == 0 {
			window = time.Duration(float64(r.sent) / cfg.Rate * float64(time.Second))
		}
		window = max(window, r.lastSend.Sub(start))
		res.SendRate = float64(r.sent) / window.Seconds()
	}
	for i, sec := range r.timeline {
		p := TimelinePoint{Second: i, Successes: sec.successes, Failures: sec.failures}
		if sec.hist.TotalCount() > 0 {
			p.P50 = usToDuration(sec.hist.ValueAtPercentile(50)).Seconds()
			p.P99 = usToDuration(sec.hist.ValueAtPercentile(99)).Seconds()
		}
		res.Timeline = append(res.Timeline, p)
	}
	return res
}

// Result is what a test measured. A request succeeded if it got a 2xx (or
// a 3xx with redirects off); latency statistics cover successful responses
// only, since an error's "latency" (a refused connection, a 503 sent at
// once) says nothing about how fast the server serves.
type Result struct {
	URL         string
	Method      string
	Concurrency int
	Rate        float64       // open loop rate, 0 for the closed loop
	Duration    time.Duration // the -z window, 0 for a request count
	NoRedirects bool          // 3xx answers were not followed, and counted as successes
	Started     time.Time
	Elapsed     time.Duration // from the first request to the last answer
	Requests    int64         // finished: responses plus errors
	Answered    int64         // got an HTTP response, of any status
	Failures    int64         // errors plus responses that were not a success
	Bytes       int64         // response body bytes (after redirects)
	StatusCodes map[int]int64
	Errors      map[string]int64 // by kind: "timeout", "connection refused", …
	GaveUp      bool             // stopped early by Config.GiveUpAfter: every connection was refused

	// Open loop only: requests handed to workers, the send rate achieved,
	// and those that started more than lateThreshold after their time.
	Sent     int64
	SendRate float64
	Late     int64
	LateMean time.Duration
	LateMax  time.Duration

	// Timeline is the run second by second, by completion time.
	Timeline []TimelinePoint

	hist *hdrhistogram.Histogram
}

// TimelinePoint is one second of a run.
type TimelinePoint struct {
	Second    int     `json:"second"`
	Successes int64   `json:"successes"`
	Failures  int64   `json:"failures"`
	P50       float64 `json:"p50_seconds"` // of that second's successful responses; 0 if none
	P99       float64 `json:"p99_seconds"`
}

// IsSuccess reports whether a response with this status counted as a success.
func (r *Result) IsSuccess(status int) bool { return isSuccess(status, r.NoRedirects) }

// Responses is the number of requests that got a response, of any status.
func (r *Result) Responses() int64 { return r.Answered }

// Successes is the number of requests that succeeded.
func (r *Result) Successes() int64 { return r.Requests - r.Failures }

// SuccessRate is the share (0–1) of finished requests that succeeded.
func (r *Result) SuccessRate() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Successes()) / float64(r.Requests)
}

// window is the time rates are computed over: the -z window, or until the
// last answer if that came later (as hey does); for -n, until the last answer.
func (r *Result) window() time.Duration { return max(r.Duration, r.Elapsed) }

// RequestsPerSec is finished requests over the window.
func (r *Result) RequestsPerSec() float64 {
	if r.window() <= 0 {
		return 0
	}
	return float64(r.Requests) / r.window().Seconds()
}

// SuccessesPerSec is successful requests over the window.
func (r *Result) SuccessesPerSec() float64 {
	if r.window() <= 0 {
		return 0
	}
	return float64(r.Successes()) / r.window().Seconds()
}

// Percentile returns the latency at or below which p percent (0–100) of
// successful responses fell.
func (r *Result) Percentile(p float64) time.Duration {
	return usToDuration(r.hist.ValueAtPercentile(p))
}

// Fastest, Slowest and Mean summarise successful responses' latency.
func (r *Result) Fastest() time.Duration { return usToDuration(r.hist.Min()) }
func (r *Result) Slowest() time.Duration { return usToDuration(r.hist.Max()) }
func (r *Result) Mean() time.Duration {
	return time.Duration(r.hist.Mean() * float64(time.Microsecond))
}

// Measured is the number of latencies the statistics cover.
func (r *Result) Measured() int64 { return r.hist.TotalCount() }

func usToDuration(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// StandardPercentiles are the percentiles reports show.
var StandardPercentiles = []float64{10, 25, 50, 75, 90, 95, 99, 99.9, 99.99}

// Bucket is one bar of a latency histogram: Count responses took at most
// Upper (and more than the previous bucket's Upper).
type Bucket struct {
	Upper time.Duration
	Count int64
}

// LinearBuckets splits fastest…slowest into n equal buckets, hey's layout;
// the first bucket holds the fastest response alone, as in hey.
func (r *Result) LinearBuckets(n int) []Bucket {
	if r.Measured() == 0 || n < 1 {
		return nil
	}
	lo, hi := r.hist.Min(), r.hist.Max()
	width := float64(hi-lo) / float64(n)
	out := make([]Bucket, n+1)
	out[0].Upper = usToDuration(lo)
	for i := 1; i <= n; i++ {
		out[i].Upper = usToDuration(lo + int64(math.Round(width*float64(i))))
	}
	for _, bar := range r.hist.Distribution() {
		if bar.Count == 0 {
			continue
		}
		i := 0 // the fastest value's own bar goes first, as in hey
		if bar.From > lo && width > 0 {
			i = min(n, max(1, int(math.Ceil(float64(bar.To-lo)/width))))
		}
		out[i].Count += bar.Count
	}
	return out
}

// LogBuckets groups latencies into buckets growing by factor (e.g. 1.25)
// from the fastest response, for charts whose x axis is logarithmic.
func (r *Result) LogBuckets(factor float64) []Bucket {
	if r.Measured() == 0 || factor <= 1 {
		return nil
	}
	var out []Bucket
	upper := float64(max(r.hist.Min(), histMin))
	for _, bar := range r.hist.Distribution() {
		if bar.Count == 0 {
			continue
		}
		v := float64(bar.To)
		for v > upper {
			upper *= factor
		}
		u := usToDuration(int64(math.Ceil(upper)))
		if len(out) == 0 || out[len(out)-1].Upper != u {
			out = append(out, Bucket{Upper: u})
		}
		out[len(out)-1].Count += bar.Count
	}
	return out
}

// Summary is the machine-readable form of a Result (durations in seconds).
type Summary struct {
	URL             string            `json:"url"`
	Method          string            `json:"method"`
	Concurrency     int               `json:"concurrency"`
	Rate            float64           `json:"rate,omitempty"`
	OpenLoop        bool              `json:"open_loop"`
	Started         time.Time         `json:"started"`
	TotalSeconds    float64           `json:"total_seconds"`
	Requests        int64             `json:"requests"`
	Responses       int64             `json:"responses"`
	Failures        int64             `json:"failures"` // errors and responses that were not a success
	Successes       int64             `json:"successes"`
	SuccessRate     float64           `json:"success_rate"`
	RequestsPerSec  float64           `json:"requests_per_sec"`
	SuccessesPerSec float64           `json:"successes_per_sec"`
	SendRate        float64           `json:"send_rate,omitempty"` // open loop: achieved
	Late            int64             `json:"late_requests,omitempty"`
	LateMean        float64           `json:"late_mean_seconds,omitempty"`
	LateMax         float64           `json:"late_max_seconds,omitempty"`
	BytesTotal      int64             `json:"bytes_total"`
	BytesPerRequest int64             `json:"bytes_per_request"`
	LatencyCount    int64             `json:"latency_count"` // successful responses, which the latency figures cover
	Fastest         float64           `json:"fastest_seconds"`
	Average         float64           `json:"average_seconds"`
	Slowest         float64           `json:"slowest_seconds"`
	Percentiles     []PercentileValue `json:"percentiles"`
	Histogram       []BucketValue     `json:"histogram,omitempty"`
	LogHistogram    []BucketValue     `json:"log_histogram,omitempty"`
	StatusCodes     map[string]int64  `json:"status_codes"`
	Errors          map[string]int64  `json:"errors"`
	Timeline        []TimelinePoint   `json:"timeline,omitempty"`
	GaveUp          bool              `json:"gave_up,omitempty"` // stopped early: every connection was refused
}

// PercentileValue is one latency percentile.
type PercentileValue struct {
	Percentile float64 `json:"percentile"`
	Seconds    float64 `json:"seconds"`
}

// BucketValue is one histogram bar.
type BucketValue struct {
	UpperSeconds float64 `json:"upper_seconds"`
	Count        int64   `json:"count"`
}

// Summary returns the result's machine-readable form.
func (r *Result) Summary() Summary {
	s := Summary{
		URL: r.URL, Method: r.Method, Concurrency: r.Concurrency, Rate: r.Rate, OpenLoop: r.Rate > 0,
		Started: r.Started, TotalSeconds: r.Elapsed.Seconds(),
		Requests: r.Requests, Responses: r.Responses(), Failures: r.Failures, RequestsPerSec: r.RequestsPerSec(),
		Successes: r.Successes(), SuccessRate: r.SuccessRate(), SuccessesPerSec: r.SuccessesPerSec(),
		SendRate: r.SendRate, Late: r.Late, LateMean: r.LateMean.Seconds(), LateMax: r.LateMax.Seconds(),
		Timeline:     r.Timeline,
		LatencyCount: r.Measured(),
		BytesTotal:   r.Bytes,
		Fastest:      r.Fastest().Seconds(), Average: r.Mean().Seconds(), Slowest: r.Slowest().Seconds(),
		StatusCodes: map[string]int64{}, Errors: r.Errors,
		GaveUp: r.GaveUp,
	}
	if n := r.Responses(); n > 0 {
		s.BytesPerRequest = r.Bytes / n
	}
	for _, p := range StandardPercentiles {
		s.Percentiles = append(s.Percentiles, PercentileValue{p, r.Percentile(p).Seconds()})
	}
	for _, b := range r.LinearBuckets(10) {
		s.Histogram = append(s.Histogram, BucketValue{b.Upper.Seconds(), b.Count})
	}
	for _, b := range r.LogBuckets(1.25) {
		s.LogHistogram = append(s.LogHistogram, BucketValue{b.Upper.Seconds(), b.Count})
	}
	for code, n := range r.StatusCodes {
		s.StatusCodes[strconv.Itoa(code)] = n
	}
	return s
}

// SortedStatusCodes returns the status codes in ascending order.
func (r *Result) SortedStatusCodes() []int {
	codes := make([]int, 0, len(r.StatusCodes))
	for c := range r.StatusCodes {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	return codes
}

// refused is the error kind of a request whose connection was refused.
const refused = "connection refused"

// classify names the kind of a failed request, so the error distribution
// groups "connection refused" together instead of listing every URL.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return refused
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by peer"
	case errors.Is(err, syscall.EPIPE):
		return "broken pipe"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "server closed idle connection"):
		// The last: net/http's name for a kept-alive connection the server
		// closed just as a request went out on it.
		return "connection closed before the response (EOF)"
	case strings.Contains(err.Error(), "stopped after") && strings.Contains(err.Error(), "redirects"):
		return "too many redirects"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
