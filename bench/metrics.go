package bench

import (
	"fmt"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// serverCounters is what the report reads from a server's /metrics.
type serverCounters struct {
	writeWait   histogram // loremnews_write_wait_seconds
	busyErrors  float64
	busyRetries float64
	queueMax    float64
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
	if f := fams["loremnews_write_wait_seconds"]; f != nil && len(f.Metric) > 0 {
		c.writeWait = fromDTO(f.Metric[0].GetHistogram())
	}
	c.busyErrors = single(fams["loremnews_sqlite_busy_errors_total"])
	// Lock retries: SQLite's BEGIN IMMEDIATE polls, or PostgreSQL's
	// transactions started over; a server has one or the other.
	c.busyRetries = single(fams["loremnews_sqlite_busy_retries_total"]) + single(fams["loremnews_postgres_write_retries_total"])
	c.queueMax = single(fams["loremnews_sqlite_writer_queue_max_depth"])
	return c, nil
}

func single(f *dto.MetricFamily) float64 {
	if f == nil || len(f.Metric) == 0 {
		return 0
	}
	m := f.Metric[0]
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return 0
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
