package bench

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// serverCounters is what the report reads from a server's /metrics: with
// worker processes (serve --workers), each sample carries a worker label,
// and the counters are summed over them.
type serverCounters struct {
	writeWait    histogram // loremnews_write_wait_seconds
	busyErrors   float64
	busyRetries  float64
	queueMax     float64
	writeWaitMax float64
	turnWaitMax  float64
	// By worker: the requests answered, the transactions committed, and
	// the writes' waits (count and total seconds).
	requests, commits, waits, waited map[string]float64
}

// ProcessShare is one worker process's part of a setup's main runs.
type ProcessShare struct {
	Worker string `json:"worker"`
	// Requests and Commits are its shares (0–1) of the requests answered
	// and of the transactions committed; -1 where the server does not say
	// (the database/sql baselines count no commits).
	Requests float64 `json:"requests"`
	Commits  float64 `json:"commits"`
	// MeanWriteWait is the mean wait of its writes, from asking to write
	// until BEGIN returned, in seconds; -1 if none was counted.
	MeanWriteWait float64 `json:"mean_write_wait"`
}

// histogram is a Prometheus histogram: cumulative counts per upper bound.
type histogram struct {
	bounds []float64 // ascending upper bounds, +Inf last
	counts []float64 // cumulative
	sum    float64
}

func parseCounters(text string) (serverCounters, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return serverCounters{}, fmt.Errorf("bench: parse metrics: %w", err)
	}
	var c serverCounters
	if f := fams["loremnews_write_wait_seconds"]; f != nil {
		for _, m := range f.Metric {
			c.writeWait = c.writeWait.plus(fromDTO(m.GetHistogram()))
		}
	}
	c.busyErrors = sum(fams["loremnews_sqlite_busy_errors_total"])
	// Lock retries: SQLite's BEGIN IMMEDIATE polls, or PostgreSQL's
	// transactions started over; a server has one or the other.
	c.busyRetries = sum(fams["loremnews_sqlite_busy_retries_total"]) + sum(fams["loremnews_postgres_write_retries_total"])
	c.queueMax = largest(fams["loremnews_sqlite_writer_queue_max_depth"])
	c.writeWaitMax = largest(fams["loremnews_sqlite_writer_wait_max_seconds"])
	c.turnWaitMax = largest(fams["loremnews_sqlite_writer_process_turn_wait_max_seconds"])
	c.commits = byWorker(fams["loremnews_sqlite_writer_commits_total"], value)
	c.requests = byWorker(fams["loremnews_http_request_duration_seconds"], func(m *dto.Metric) float64 {
		return float64(m.GetHistogram().GetSampleCount())
	})
	c.waits = byWorker(fams["loremnews_write_wait_seconds"], func(m *dto.Metric) float64 { return float64(m.GetHistogram().GetSampleCount()) })
	c.waited = byWorker(fams["loremnews_write_wait_seconds"], func(m *dto.Metric) float64 { return m.GetHistogram().GetSampleSum() })
	return c, nil
}

// value is a counter's or gauge's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return 0
}

// sum adds up a counter's samples (one per worker process, or one).
func sum(f *dto.MetricFamily) float64 {
	var total float64
	if f != nil {
		for _, m := range f.Metric {
			total += value(m)
		}
	}
	return total
}

// largest is the largest of a gauge's samples.
func largest(f *dto.MetricFamily) float64 {
	var top float64
	if f != nil {
		for _, m := range f.Metric {
			top = max(top, value(m))
		}
	}
	return top
}

// byWorker adds up v of f's samples by their worker label, nil if none has one.
func byWorker(f *dto.MetricFamily, v func(*dto.Metric) float64) map[string]float64 {
	if f == nil {
		return nil
	}
	var out map[string]float64
	for _, m := range f.Metric {
		for _, l := range m.GetLabel() {
			if l.GetName() == "worker" {
				if out == nil {
					out = map[string]float64{}
				}
				out[l.GetValue()] += v(m)
			}
		}
	}
	return out
}

// shares are each worker's parts of the requests and commits between two
// scrapes, in the workers' order; nil for a server of one process.
func shares(before, after serverCounters) []ProcessShare {
	if len(after.requests) < 2 {
		return nil
	}
	var reqs, commits float64
	for w := range after.requests {
		reqs += after.requests[w] - before.requests[w]
		commits += after.commits[w] - before.commits[w]
	}
	var out []ProcessShare
	for w := range after.requests {
		s := ProcessShare{Worker: w, Requests: -1, Commits: -1, MeanWriteWait: -1}
		if n := after.waits[w] - before.waits[w]; n > 0 {
			s.MeanWriteWait = (after.waited[w] - before.waited[w]) / n
		}
		if reqs > 0 {
			s.Requests = (after.requests[w] - before.requests[w]) / reqs
		}
		if commits > 0 {
			s.Commits = (after.commits[w] - before.commits[w]) / commits
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := strconv.Atoi(out[i].Worker)
		b, _ := strconv.Atoi(out[j].Worker)
		return a < b
	})
	return out
}

// plus is the histogram of two processes' observations together.
func (h histogram) plus(o histogram) histogram {
	if len(h.bounds) == 0 {
		return o
	}
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), sum: h.sum + o.sum}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(o.counts) {
			out.counts[i] += o.counts[i]
		}
	}
	return out
}

func fromDTO(h *dto.Histogram) histogram {
	var out histogram
	for _, b := range h.GetBucket() {
		out.bounds = append(out.bounds, b.GetUpperBound())
		out.counts = append(out.counts, float64(b.GetCumulativeCount()))
	}
	if len(out.bounds) == 0 || !math.IsInf(out.bounds[len(out.bounds)-1], 1) {
		out.bounds = append(out.bounds, math.Inf(1))
		out.counts = append(out.counts, float64(h.GetSampleCount()))
	}
	out.sum = h.GetSampleSum()
	return out
}

// minus is the histogram of what happened between an earlier scrape and this one.
func (h histogram) minus(earlier histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), sum: h.sum - earlier.sum}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(earlier.counts) {
			out.counts[i] -= earlier.counts[i]
		}
	}
	return out
}

func (h histogram) count() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// quantile estimates the q-quantile (0–1) the way Prometheus's
// histogram_quantile does: linear interpolation inside the bucket that
// holds it. With the server's buckets ~1.6× apart, the estimate is within
// that bucket's width.
func (h histogram) quantile(q float64) float64 {
	total := h.count()
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	i := sort.Search(len(h.counts), func(i int) bool { return h.counts[i] >= rank })
	if i >= len(h.bounds) {
		i = len(h.bounds) - 1
	}
	if math.IsInf(h.bounds[i], 1) {
		if i == 0 {
			return math.NaN()
		}
		return h.bounds[i-1] // beyond the last finite bucket: report its bound
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = h.bounds[i-1], h.counts[i-1]
	}
	inBucket := h.counts[i] - below
	if inBucket == 0 {
		return h.bounds[i]
	}
	return lower + (h.bounds[i]-lower)*(rank-below)/inBucket
}

func (h histogram) mean() float64 {
	if h.count() == 0 {
		return math.NaN()
	}
	return h.sum / h.count()
}
