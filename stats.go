package loremnews

import "time"

// DatabaseStats is what a database reports of its own work: counters since
// it opened and gauges now. A part that an engine does not have is nil.
type DatabaseStats struct {
	// Setup names the connection setup: the SQLite profile, or "postgres".
	Setup string
	// Lock counts waits for and failures on SQLite's write lock; nil on
	// PostgreSQL, whose writers lock rows instead.
	Lock *LockStats
	// WriterQueue is the queue writes wait in for their turn; nil where
	// writes do not queue (PostgreSQL).
	WriterQueue *WriterQueueStats
	// Restarts counts write transactions started over; nil where none is
	// (SQLite: one writer at a time, nothing to start over).
	Restarts *RestartStats
	// Pools are the connection pools: SQLite's read and write pools (or
	// its one shared pool), PostgreSQL's one.
	Pools []PoolStats
}

// LockStats counts what SQLite's write lock cost.
type LockStats struct {
	BusyRetries int64 // BEGIN IMMEDIATE attempts that found the lock held and were retried
	BusyErrors  int64 // SQLITE_BUSY/LOCKED errors returned to requests
}

// WriterQueueStats describes the queue writes wait in for their turn.
type WriterQueueStats struct {
	Depth     int   // writers waiting now
	MaxDepth  int   // most writers ever waiting at once
	Turns     int64 // turns taken
	Abandoned int64 // writers that left before their turn
	Commits   int64 // transactions committed for them (the touches waiting at one moment share one)
}

// RestartStats counts write transactions started over.
type RestartStats struct {
	Retries   int64 // all restarts: a random pick deleted meanwhile, a serialization failure, a deadlock
	Deadlocks int64 // those the server aborted as deadlocked
}

// PoolStats describes one connection pool.
type PoolStats struct {
	Name     string // "read", "write", "shared" or "postgres"
	Open     int    // connections open now
	InUse    int    // connections in use now
	Waits    int64  // times a caller waited for a free connection
	WaitTime time.Duration
}
