// Package metrics exposes what the experiment needs to see inside the
// server, in Prometheus's text format at /metrics: request latency by
// route, how long writes wait for their turn and SQLite's lock, the writer
// queue's depth, SQLITE_BUSY retries and errors, and connection pool use.
package metrics

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/loremnews/loremnews"
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
	db              atomic.Pointer[StatsReporter]
}

// StatsReporter is a database that reports its own counters and gauges at
// each scrape; both stores do (loremnews.Database.DatabaseStats).
type StatsReporter interface {
	DatabaseStats() loremnews.DatabaseStats
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
	m.reg.MustRegister(m.requestDuration, m.writeWait, dbCollector{m},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Watch makes the database's counters part of every scrape.
func (m *Metrics) Watch(db StatsReporter) { m.db.Store(&db) }

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

var (
	descProfile     = prometheus.NewDesc("loremnews_db_profile_info", "The connection profile in use.", []string{"profile"}, nil)
	descBusyRetries = prometheus.NewDesc("loremnews_sqlite_busy_retries_total", "BEGIN IMMEDIATE attempts that found the lock held (by another process) and were retried after 1 ms.", nil, nil)
	descBusyErrors  = prometheus.NewDesc("loremnews_sqlite_busy_errors_total", "SQLITE_BUSY/LOCKED errors returned to requests (each one a failed request).", nil, nil)
	descQueueDepth  = prometheus.NewDesc("loremnews_writer_queue_depth", "Writers waiting for their turn now.", nil, nil)
	descQueueMax    = prometheus.NewDesc("loremnews_writer_queue_max_depth", "Most writers ever waiting at once.", nil, nil)
	descQueueTurns  = prometheus.NewDesc("loremnews_writer_queue_turns_total", "Turns taken in the writer queue.", nil, nil)
	descQueueLeft   = prometheus.NewDesc("loremnews_writer_queue_abandoned_total", "Writers that left the queue before their turn (client gone or writer timeout).", nil, nil)
	descCommits     = prometheus.NewDesc("loremnews_writer_commits_total", "Transactions the writer committed (the touches waiting at one moment share one).", nil, nil)
	descPoolOpen    = prometheus.NewDesc("loremnews_db_pool_open_connections", "Open connections.", []string{"pool"}, nil)
	descPoolInUse   = prometheus.NewDesc("loremnews_db_pool_in_use_connections", "Connections in use.", []string{"pool"}, nil)
	descPoolWaits   = prometheus.NewDesc("loremnews_db_pool_waits_total", "Times a caller waited for a free connection.", []string{"pool"}, nil)
	descPoolWaitSec = prometheus.NewDesc("loremnews_db_pool_wait_seconds_total", "Total time spent waiting for a free connection.", []string{"pool"}, nil)
	descPGRetries   = prometheus.NewDesc("loremnews_postgres_write_retries_total", "Write transactions started over (a random pick deleted meanwhile, a serialization failure or a deadlock).", nil, nil)
	descPGDeadlocks = prometheus.NewDesc("loremnews_postgres_deadlocks_total", "Write transactions PostgreSQL aborted as deadlocked (the lock order should keep this 0).", nil, nil)
)

// dbCollector reads the database's counters at scrape time.
type dbCollector struct{ m *Metrics }

func (c dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descProfile, descBusyRetries, descBusyErrors, descQueueDepth, descQueueMax,
		descQueueTurns, descQueueLeft, descCommits, descPoolOpen, descPoolInUse, descPoolWaits, descPoolWaitSec, descPGRetries, descPGDeadlocks} {
		ch <- d
	}
}

func (c dbCollector) Collect(ch chan<- prometheus.Metric) {
	db := c.m.db.Load()
	if db == nil {
		return
	}
	s := (*db).DatabaseStats()
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	metric(descProfile, prometheus.GaugeValue, 1, s.Setup)
	if l := s.Lock; l != nil {
		metric(descBusyRetries, prometheus.CounterValue, float64(l.BusyRetries))
		metric(descBusyErrors, prometheus.CounterValue, float64(l.BusyErrors))
	}
	if q := s.WriterQueue; q != nil {
		metric(descQueueDepth, prometheus.GaugeValue, float64(q.Depth))
		metric(descQueueMax, prometheus.GaugeValue, float64(q.MaxDepth))
		metric(descQueueTurns, prometheus.CounterValue, float64(q.Turns))
		metric(descQueueLeft, prometheus.CounterValue, float64(q.Abandoned))
		metric(descCommits, prometheus.CounterValue, float64(q.Commits))
	}
	if r := s.Restarts; r != nil {
		metric(descPGRetries, prometheus.CounterValue, float64(r.Retries))
		metric(descPGDeadlocks, prometheus.CounterValue, float64(r.Deadlocks))
	}
	for _, p := range s.Pools {
		metric(descPoolOpen, prometheus.GaugeValue, float64(p.Open), p.Name)
		metric(descPoolInUse, prometheus.GaugeValue, float64(p.InUse), p.Name)
		metric(descPoolWaits, prometheus.CounterValue, float64(p.Waits), p.Name)
		metric(descPoolWaitSec, prometheus.CounterValue, p.WaitTime.Seconds(), p.Name)
	}
}
