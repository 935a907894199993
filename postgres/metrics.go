package postgres

import "github.com/prometheus/client_golang/prometheus"

// Collector exports the database's counters to Prometheus, read at each
// scrape: namespace_db_setup_info{setup="postgres"}, the write
// transactions started over and the deadlocks among them, and the pool's
// connections and waits (namespace_postgres_…).
func (db *DB) Collector(namespace string) prometheus.Collector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "postgres", name), help, nil, nil)
	}
	return &collector{db: db,
		info:      prometheus.NewDesc(prometheus.BuildFQName(namespace, "db", "setup_info"), "The setup in use.", nil, prometheus.Labels{"setup": "postgres"}),
		retries:   desc("write_retries_total", "Write transactions started over (a random pick deleted meanwhile, a serialization failure or a deadlock)."),
		deadlocks: desc("deadlocks_total", "Write transactions PostgreSQL aborted as deadlocked (the lock order should keep this 0)."),
		open:      desc("pool_open_connections", "Open connections."),
		inUse:     desc("pool_in_use_connections", "Connections in use."),
		waits:     desc("pool_waits_total", "Times a caller waited for a free connection."),
		waitSec:   desc("pool_wait_seconds_total", "Total time spent waiting for a free connection."),
	}
}

// collector reads db.Stats() at each scrape.
type collector struct {
	db                                                    *DB
	info, retries, deadlocks, open, inUse, waits, waitSec *prometheus.Desc
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.info, c.retries, c.deadlocks, c.open, c.inUse, c.waits, c.waitSec} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.db.Stats()
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
		ch <- prometheus.MustNewConstMetric(d, t, v)
	}
	metric(c.info, prometheus.GaugeValue, 1)
	metric(c.retries, prometheus.CounterValue, float64(s.Retries))
	metric(c.deadlocks, prometheus.CounterValue, float64(s.Deadlocks))
	metric(c.open, prometheus.GaugeValue, float64(s.TotalConns))
	metric(c.inUse, prometheus.GaugeValue, float64(s.AcquiredConn))
	metric(c.waits, prometheus.CounterValue, float64(s.EmptyAcquire))
	metric(c.waitSec, prometheus.CounterValue, s.EmptyAcquireWait.Seconds())
}
