package sqlite

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/loremnews/loremnews/sqlitedb/sqlitedbprom"
)

// Collector exports the database's counters to Prometheus, read at each
// scrape: namespace_db_profile_info{profile}, and for the sqlitedb
// profiles the metrics of package sqlitedbprom (namespace_sqlite_…: the
// writer's queue, its commits, checkpoints, busy retries and errors, both
// pools, reads that waited); for a baseline, its busy retries and errors
// under the same names, and its one pool as database/sql's go_sql_…
// metrics with db_name="namespace".
func (db *DB) Collector(namespace string) prometheus.Collector {
	info := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "db", Name: "profile_info",
		Help: "The connection profile in use.", ConstLabels: prometheus.Labels{"profile": string(db.profile)}})
	info.Set(1)
	switch e := db.eng.(type) {
	case sqlitedbEngine:
		return multiCollector{info, sqlitedbprom.NewCollector(e.db, namespace)}
	case *poolEngine:
		busy := func(name, help string, v func() int64) prometheus.Collector {
			return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Subsystem: "sqlite", Name: name, Help: help},
				func() float64 { return float64(v()) })
		}
		return multiCollector{info,
			busy("busy_retries_total", "BEGINs retried because another connection held the lock.", e.busyRetries.Load),
			busy("busy_errors_total", "Reads and writes that failed because the database was locked.", e.busyErrors.Load),
			collectors.NewDBStatsCollector(e.pool, namespace)}
	}
	return info
}

// multiCollector is several collectors as one.
type multiCollector []prometheus.Collector

func (m multiCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m {
		c.Describe(ch)
	}
}

func (m multiCollector) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m {
		c.Collect(ch)
	}
}
