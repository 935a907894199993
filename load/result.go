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

// recorder collects outcomes from all workers. One mutex is cheaper than it
// looks at these rates (tens of thousands per second), and a single HDR
// histogram keeps memory small at any concurrency.
type recorder struct {
	mu       sync.Mutex
	hist     *hdrhistogram.Histogram
	statuses map[int]int64
	errors   map[string]int64
	n        int64 // responses + errors
	fails    int64 // errors + non-2xx
	bytes    int64
}

func newRecorder() *recorder {
	return &recorder{
		hist:     hdrhistogram.New(histMin, histMax, histSigFigs),
		statuses: map[int]int64{},
		errors:   map[string]int64{},
	}
}

func (r *recorder) recordResponse(status int, n int64, latency time.Duration) {
	us := min(max(latency.Microseconds(), histMin), histMax)
	r.mu.Lock()
	r.hist.RecordValue(us)
	r.statuses[status]++
	r.n++
	if status < 200 || status > 299 {
		r.fails++
	}
	r.bytes += n
	r.mu.Unlock()
}

func (r *recorder) recordError(kind string) {
	r.mu.Lock()
	r.errors[kind]++
	r.n++
	r.fails++
	r.mu.Unlock()
}

func (r *recorder) counts() (n, fails int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.fails
}

func (r *recorder) result(cfg Config, start time.Time, elapsed time.Duration) *Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &Result{
		URL:         cfg.URL,
		Method:      cfg.Method,
		Concurrency: cfg.Concurrency,
		Rate:        cfg.Rate,
		Started:     start,
		Elapsed:     elapsed,
		Requests:    r.n,
		Failures:    r.fails,
		Bytes:       r.bytes,
		StatusCodes: r.statuses,
		Errors:      r.errors,
		hist:        r.hist,
	}
}

// Result is what a test measured. Latency statistics cover requests that got
// a response (of any status); requests that failed without one (refused,
// reset, timed out) are counted in Errors only, as their "latency" says
// nothing about the server.
type Result struct {
	URL         string
	Method      string
	Concurrency int
	Rate        float64 // open loop rate, 0 for the closed loop
	Started     time.Time
	Elapsed     time.Duration // from the first request to the last answer
	Requests    int64         // finished: responses plus errors
	Failures    int64         // errors plus non-2xx responses
	Bytes       int64         // response body bytes (after redirects)
	StatusCodes map[int]int64
	Errors      map[string]int64 // by kind: "timeout", "connection refused", …

	hist *hdrhistogram.Histogram
}

// Responses is the number of requests that got a response.
func (r *Result) Responses() int64 { return r.hist.TotalCount() }

// RequestsPerSec is finished requests over elapsed time, as hey reports it.
func (r *Result) RequestsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Percentile returns the latency at or below which p percent (0–100) of
// responses fell.
func (r *Result) Percentile(p float64) time.Duration {
	return usToDuration(r.hist.ValueAtPercentile(p))
}

// Fastest, Slowest and Mean summarise response latency.
func (r *Result) Fastest() time.Duration { return usToDuration(r.hist.Min()) }
func (r *Result) Slowest() time.Duration { return usToDuration(r.hist.Max()) }
func (r *Result) Mean() time.Duration {
	return time.Duration(r.hist.Mean() * float64(time.Microsecond))
}

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
	if r.Responses() == 0 || n < 1 {
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
	if r.Responses() == 0 || factor <= 1 {
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
	Failures        int64             `json:"failures"`
	RequestsPerSec  float64           `json:"requests_per_sec"`
	BytesTotal      int64             `json:"bytes_total"`
	BytesPerRequest int64             `json:"bytes_per_request"`
	Fastest         float64           `json:"fastest_seconds"`
	Average         float64           `json:"average_seconds"`
	Slowest         float64           `json:"slowest_seconds"`
	Percentiles     []PercentileValue `json:"percentiles"`
	Histogram       []BucketValue     `json:"histogram"`
	LogHistogram    []BucketValue     `json:"log_histogram"`
	StatusCodes     map[string]int64  `json:"status_codes"`
	Errors          map[string]int64  `json:"errors"`
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
		BytesTotal: r.Bytes,
		Fastest:    r.Fastest().Seconds(), Average: r.Mean().Seconds(), Slowest: r.Slowest().Seconds(),
		StatusCodes: map[string]int64{}, Errors: r.Errors,
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
		return "connection refused"
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
