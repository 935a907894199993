// Package sqlitedbprom exports a sqlitedb.DB's counters (DB.Stats) as
// Prometheus metrics, read at each scrape. It is a package of its own so
// that sqlitedb itself imports no metrics library.
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(sqlitedbprom.NewCollector(db, "myapp"))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// The metrics, each named namespace_sqlite_…:
//
//	writer_queue_depth                      gauge    writes waiting for the writer now
//	writer_queue_max_depth                  gauge    most writes ever waiting at once
//	writer_writes_total                     counter  writes run (ordinary and coalesced)
//	writer_abandoned_total                  counter  writes whose caller left before their turn
//	writer_commits_total                    counter  transactions the writer committed
//	writer_wait_seconds_total               counter  time the writes run waited for their turn
//	writer_wait_max_seconds                 gauge    the longest wait of a write, from Write to its BEGIN
//	writer_process_queue                    gauge    1 if the writers of all processes on the file take turns
//	writer_process_turn_waits_total         counter  transactions that waited for another process's turn
//	writer_process_turn_wait_seconds_total  counter  time they waited
//	writer_process_turn_wait_max_seconds    gauge    the longest of those waits
//	writer_process_queue_errors_total       counter  transactions run without a turn (the queue's locks failed)
//	busy_retries_total                      counter  BEGINs retried because another connection held the lock
//	busy_errors_total                       counter  reads and writes that failed with ErrBusy
//	timeouts_total                          counter  reads and writes that waited Timeout for their turn and did not run
//	checkpoints_total{kind}                 counter  WAL checkpoints: background, inline, restart, truncate
//	checkpoint_errors_total                 counter  checkpoints that failed (tried again later)
//	checkpoints_copied_elsewhere_total      counter  signals to checkpoint that ran none: another process's had copied the WAL or was copying it
//	checkpoints_stopped                     gauge    1 once a failed sync of the database file stopped every checkpoint
//	mapped{file}                            gauge    1 if the file (database, wal) is read from a memory map
//	pool_open_connections{pool}             gauge    open connections: read, write
//	pool_in_use_connections{pool}           gauge    connections in use
//	pool_waits_total{pool}                  counter  times a caller waited for a connection
//	pool_wait_seconds_total{pool}           counter  time spent waiting for a connection
//	read_waits_total                        counter  reads that found every read connection taken
//	read_wait_seconds_total                 counter  time those reads waited, in arrival order
package sqlitedbprom

import (
	"database/sql"

	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/prometheus/client_golang/prometheus"
)

// collector reads db.Stats() at each scrape.
type collector struct {
	db *sqlitedb.DB

	queueDepth, queueMaxDepth, writes, abandoned, commits  *prometheus.Desc
	busyRetries, busyErrors, timeouts                      *prometheus.Desc
	checkpoints, checkpointErrors, checkpointsStopped      *prometheus.Desc
	copiedElsewhere                                        *prometheus.Desc
	mapped                                                 *prometheus.Desc
	poolOpen, poolInUse, poolWaits, poolWaitSeconds        *prometheus.Desc
	readWaits, readWaitSeconds, writeWaitSeconds           *prometheus.Desc
	writeWaitMax, processQueue, turnWaits, turnWaitSeconds *prometheus.Desc
	turnWaitMax, queueErrors                               *prometheus.Desc
}

// NewCollector returns a collector of db's Stats, with metric names
// starting namespace_sqlite_ (sqlite_ if namespace is empty). Register it
// once per database; to watch several databases, register each on its own
// registry or wrap the registerer with prometheus.WrapRegistererWith and a
// label that tells them apart.
func NewCollector(db *sqlitedb.DB, namespace string) prometheus.Collector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "sqlite", name), help, labels, nil)
	}
	return &collector{
		db:                 db,
		queueDepth:         desc("writer_queue_depth", "Writes waiting for the writer now."),
		queueMaxDepth:      desc("writer_queue_max_depth", "Most writes ever waiting for the writer at once."),
		writes:             desc("writer_writes_total", "Writes the writer ran, ordinary and coalesced."),
		abandoned:          desc("writer_abandoned_total", "Writes whose caller left (context ended, Timeout passed) before their turn; they never ran."),
		commits:            desc("writer_commits_total", "Transactions the writer committed (coalesced writes share one)."),
		busyRetries:        desc("busy_retries_total", "BEGINs that found SQLite's lock taken and were tried again."),
		busyErrors:         desc("busy_errors_total", "Reads and writes that failed with ErrBusy: the database stayed locked past Timeout."),
		timeouts:           desc("timeouts_total", "Reads and writes that waited Timeout for their connection or their turn and did not run (ErrTimeout)."),
		checkpoints:        desc("checkpoints_total", "WAL checkpoints, by kind: background (PASSIVE, own connection), inline (the writer finishing a background one), restart (the writer, past the hard limit), truncate (once writes stopped).", "kind"),
		copiedElsewhere:    desc("checkpoints_copied_elsewhere_total", "Signals to checkpoint that ran none: another connection's checkpoint (another process's, mostly) had copied the WAL already, or was copying it."),
		checkpointErrors:   desc("checkpoint_errors_total", "WAL checkpoints that failed (tried again at the next signal)."),
		checkpointsStopped: desc("checkpoints_stopped", "1 once a sync of the database file failed: no checkpoint runs any more, the WAL keeps every frame, and opening the database again copies them (restart the process)."),
		mapped:             desc("mapped", "1 if the file (database, wal) is read from a memory map (Options.MemoryMap).", "file"),
		poolOpen:           desc("pool_open_connections", "Open connections, by pool (read, write).", "pool"),
		poolInUse:          desc("pool_in_use_connections", "Connections in use, by pool.", "pool"),
		poolWaits:          desc("pool_waits_total", "Times a caller of database/sql waited for a free connection, by pool.", "pool"),
		poolWaitSeconds:    desc("pool_wait_seconds_total", "Time callers of database/sql spent waiting for a free connection, by pool.", "pool"),
		readWaits:          desc("read_waits_total", "Reads that found every read connection taken and waited for one, in arrival order."),
		readWaitSeconds:    desc("read_wait_seconds_total", "Time reads spent waiting for a read connection."),
		writeWaitSeconds:   desc("writer_wait_seconds_total", "Time the writes run spent waiting for their turn (divide by writer_writes_total for the mean)."),
		writeWaitMax:       desc("writer_wait_max_seconds", "The longest wait of a write, from asking to write until its BEGIN succeeded."),
		processQueue:       desc("writer_process_queue", "1 if the writers of all processes using the file take turns in arrival order; 0 if they poll for SQLite's lock."),
		turnWaits:          desc("writer_process_turn_waits_total", "Transactions that waited for another process's turn to write."),
		turnWaitSeconds:    desc("writer_process_turn_wait_seconds_total", "Time transactions waited for another process's turn."),
		turnWaitMax:        desc("writer_process_turn_wait_max_seconds", "The longest wait for another process's turn."),
		queueErrors:        desc("writer_process_queue_errors_total", "Transactions run without a turn because the queue's file locks failed."),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.queueDepth, c.queueMaxDepth, c.writes, c.abandoned, c.commits,
		c.busyRetries, c.busyErrors, c.timeouts, c.checkpoints, c.copiedElsewhere, c.checkpointErrors, c.checkpointsStopped, c.mapped,
		c.poolOpen, c.poolInUse, c.poolWaits, c.poolWaitSeconds,
		c.readWaits, c.readWaitSeconds, c.writeWaitSeconds,
		c.writeWaitMax, c.processQueue, c.turnWaits, c.turnWaitSeconds, c.turnWaitMax, c.queueErrors,
	} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.db.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}

	w := s.Writer
	gauge(c.queueDepth, float64(w.Depth))
	gauge(c.queueMaxDepth, float64(w.MaxDepth))
	counter(c.writes, float64(w.Writes))
	counter(c.abandoned, float64(w.Abandoned))
	counter(c.commits, float64(w.Commits))
	counter(c.writeWaitSeconds, w.Waited.Seconds())
	gauge(c.writeWaitMax, w.MaxWait.Seconds())
	gauge(c.processQueue, bit(w.Queue == "on"))
	counter(c.turnWaits, float64(w.TurnWaits))
	counter(c.turnWaitSeconds, w.TurnWaited.Seconds())
	gauge(c.turnWaitMax, w.MaxTurnWait.Seconds())
	counter(c.queueErrors, float64(w.QueueErrors))
	counter(c.busyRetries, float64(s.BusyRetries))
	counter(c.busyErrors, float64(s.BusyErrors))
	counter(c.timeouts, float64(s.Timeouts))
	k := s.Checkpoints
	counter(c.checkpoints, float64(k.Background), "background")
	counter(c.checkpoints, float64(k.Inline), "inline")
	counter(c.checkpoints, float64(k.Restarts), "restart")
	counter(c.checkpoints, float64(k.Truncates), "truncate")
	counter(c.copiedElsewhere, float64(k.CopiedElsewhere))
	counter(c.checkpointErrors, float64(k.Errors))
	gauge(c.checkpointsStopped, bit(k.Stopped != ""))
	gauge(c.mapped, bit(s.MappedDatabase), "database")
	gauge(c.mapped, bit(s.MappedWAL), "wal")

	pool := func(name string, p sql.DBStats) {
		gauge(c.poolOpen, float64(p.OpenConnections), name)
		gauge(c.poolInUse, float64(p.InUse), name)
		counter(c.poolWaits, float64(p.WaitCount), name)
		counter(c.poolWaitSeconds, p.WaitDuration.Seconds(), name)
	}
	pool("read", s.ReadPool)
	pool("write", s.WritePool)
	counter(c.readWaits, float64(s.ReadWaits))
	counter(c.readWaitSeconds, s.ReadWaitTime.Seconds())
}

// bit is 1 for true, 0 for false.
func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
