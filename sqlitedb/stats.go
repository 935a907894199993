//go:build cgo

package sqlitedb

import (
	"database/sql"
	"time"
)

// Stats is a snapshot of a DB's counters.
type Stats struct {
	Writer      WriterStats
	Checkpoints CheckpointStats
	// BusyRetries counts BEGINs that found SQLite's lock taken (by another
	// process) and were tried again.
	BusyRetries int64
	// BusyErrors counts ErrBusy errors returned to callers: each is a read
	// or write that failed because the database was locked.
	BusyErrors int64
	// ReadWaits counts reads that found every read connection taken and
	// waited for one; ReadWaitTime is their total wait. (ReadPool's own
	// wait counts stay 0: reads queue before they reach the pool.)
	ReadWaits    int64
	ReadWaitTime time.Duration
	ReadPool     sql.DBStats // the read pool
	WritePool    sql.DBStats // the write connection
	// Timeouts counts reads and writes that waited Options.Timeout for
	// their connection or their turn and did not run (ErrTimeout).
	Timeouts int64
	// MappedDatabase and MappedWAL say whether this process reads the
	// database file and its WAL from a memory map (Options.MemoryMap) now.
	MappedDatabase, MappedWAL bool
}

// WriterStats are the writer goroutine's counters.
type WriterStats struct {
	Depth     int   // writes waiting now
	MaxDepth  int   // most writes ever waiting at once
	Writes    int64 // writes run (ordinary and coalesced)
	Abandoned int64 // writes whose caller left before their turn (they never ran)
	Commits   int64 // transactions committed
	// Waited is the total time the writes run waited for their turn, from
	// Write (or Coalesce) to their transaction's BEGIN succeeding: the
	// turn in this process, the turn among processes, SQLite's lock.
	// Waited/Writes is the mean wait, MaxWait the longest.
	Waited  time.Duration
	MaxWait time.Duration

	// Queue says whether the writers of all processes using the package
	// on the file take turns in arrival order ("on"; see Open), or why
	// this one polls for SQLite's lock instead ("off: …").
	Queue string
	// TurnWaits counts transactions that waited for another process's
	// turn to end; TurnWaited is their total wait, MaxTurnWait the
	// longest. QueueErrors counts transactions that went on without a
	// turn because the queue's file locks failed.
	TurnWaits   int64
	TurnWaited  time.Duration
	MaxTurnWait time.Duration
	QueueErrors int64
}

// CheckpointStats are the checkpointer's counters.
type CheckpointStats struct {
	Background int64 // PASSIVE checkpoints from the checkpointer's own connection
	Inline     int64 // PASSIVE checkpoints the writer ran itself, to finish a background one
	Restarts   int64 // RESTART checkpoints the writer ran past 60,000 WAL pages (the checkpointer fell behind, or readers never paused)
	Truncates  int64 // TRUNCATE checkpoints once writes stopped
	// CopiedElsewhere counts signals to checkpoint that ran none, as
	// another connection's checkpoint (another process's, mostly) had
	// copied the WAL already, or was copying it.
	CopiedElsewhere int64
	Errors          int64 // checkpoints that failed (tried again at the next signal)
	// Stopped, once a sync of the database file has failed, says so: no
	// checkpoint runs any more and the WAL keeps every frame until the
	// database is opened again (see ErrSyncFailed). Empty until then.
	Stopped string
}
