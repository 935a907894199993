// Package metrics exposes what the experiment needs to see inside the
// server, in Prometheus's text format at /metrics: request latency by
// route and how long writes wait, beside the database's own collector
// (the writer queue's depth, SQLITE_BUSY retries and errors, checkpoints,
// connection pool use), which each store provides.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the collectors. Create it before opening the database (the
// database reports write waits to it), then Watch the database.
type Metrics struct {
	reg             *prometheus.Registry
	requestDuration *prometheus.HistogramVec
	writeWait       prometheus.Histogram
}

// Namespace starts every metric's name.
const Namespace = "loremnews"

// Source is a database that exports its own counters: both stores do
// (sqlite.DB.Collector, postgres.DB.Collector).
type Source interface {
	Collector(namespace string) prometheus.Collector
}

// WriteWaitBuckets span 10 µs to 10 s, about 1.6× apart, so percentiles
// computed from them are within a bucket's width of the truth.
var WriteWaitBuckets = prometheus.ExponentialBucketsRange(10e-6, 10, 30)

// New registers the collectors, with Go runtime and process metrics.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "loremnews_http_request_duration_seconds",
			Help:    "Time to answer a request, by route (benchmarking requests by the action they ran) and status.",
			Buckets: prometheus.ExponentialBucketsRange(100e-6, 10, 24),
		}, []string{"route", "code"}),
		writeWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "loremnews_write_wait_seconds",
			Help:    "Time a write waited from asking to write until its BEGIN returned: writer queue plus SQLite's lock.",
			Buckets: WriteWaitBuckets,
		}),
	}
	m.reg.MustRegister(m.requestDuration, m.writeWait,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Build exports which build serves: loremnews_build_info{version,
// commit} 1, so a dashboard can tell the processes of a deploy apart.
func (m *Metrics) Build(version, commit string) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "loremnews_build_info", Help: "The build that serves: its version and commit.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit}})
	g.Set(1)
	m.reg.MustRegister(g)
}

// Watch makes the database's counters part of every scrape. Watch one
// database per Metrics.
func (m *Metrics) Watch(db Source) { m.reg.MustRegister(db.Collector(Namespace)) }

// ObserveWriteWait records one write's wait (sqlite.Config.OnWriteWait).
func (m *Metrics) ObserveWriteWait(d time.Duration) { m.writeWait.Observe(d.Seconds()) }

// ObserveRequest records one answered request.
func (m *Metrics) ObserveRequest(route string, status int, d time.Duration) {
	m.requestDuration.WithLabelValues(route, strconv.Itoa(status)).Observe(d.Seconds())
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
