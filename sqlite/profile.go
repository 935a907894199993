package sqlite

import (
	"slices"
	"time"
)

// Profile names a connection setup. The four are the steps of the 2024 talk
// on SQLite in production web apps, rebuilt on Go's database/sql, so the
// experiment can show what each step changes.
type Profile string

const (
	// ProfileNaive is what a framework gives you by default: one
	// database/sql pool with its default limits, shared by reads and writes;
	// deferred transactions; SQLite's built-in 5 s busy timeout; WAL; foreign
	// keys. Under concurrent writes it fails for real: a transaction that
	// reads and then writes cannot upgrade its lock once another writer has
	// committed (SQLITE_BUSY_SNAPSHOT, returned at once, not after waiting).
	ProfileNaive Profile = "naive"
	// ProfileImmediate takes the write lock at BEGIN (BEGIN IMMEDIATE), so
	// the upgrade failure cannot happen, and sets the production pragmas.
	// Waiting writers still use SQLite's back-off busy handler.
	ProfileImmediate Profile = "immediate"
	// ProfileFair adds a first-come-first-served writer queue in the process
	// and, for the lock between processes, polls at a constant 1 ms interval
	// instead of SQLite's growing back-off, so no waiting writer is starved.
	ProfileFair Profile = "fair"
	// ProfileSplit (the default) is fair plus separate pools: several
	// query_only connections for reads and exactly one write connection, so
	// a read never waits for a connection held by a writer.
	ProfileSplit Profile = "split"
	// ProfileBatch is split whose writers queue (first come, first served)
	// for one goroutine that commits the writes queued at that moment
	// together (group commit, each write in its own savepoint; see
	// group_commit.go). Measured here: more throughput and a lower median,
	// but a longer tail than split, so it is not the default.
	ProfileBatch Profile = "batch"
)

// ProfileNames lists the profiles in the order the experiment runs them.
func ProfileNames() []string {
	return []string{string(ProfileNaive), string(ProfileImmediate), string(ProfileFair), string(ProfileSplit), string(ProfileBatch)}
}

// ValidProfile reports whether name is a known profile.
func ValidProfile(name string) bool { return slices.Contains(ProfileNames(), name) }

// profileSpec is what a profile switches on.
type profileSpec struct {
	sharedPool    bool     // one pool for reads and writes
	capSharedPool bool     // limit the shared pool's size (naive keeps database/sql's unlimited default)
	immediate     bool     // BEGIN IMMEDIATE for write transactions
	writerQueue   bool     // FIFO queue of writers inside the process, a transaction each
	groupCommit   bool     // FIFO queue served by one goroutine that commits queued writes together
	pollBusy      bool     // busy_timeout=0 on writers; Go retries BEGIN every busyPollInterval
	stmtCache     int      // prepared statements kept per connection (0: prepare every query)
	pragmas       []pragma // run on every connection, in order
}

// stmtCacheSize is how many prepared statements each connection of the
// tuned profiles keeps. Preparing (parsing and planning) a join costs tens
// of microseconds, a sixth of all server CPU before it was cached; the app
// has about 40 distinct statements.
const stmtCacheSize = 64

// naivePragmas are what frameworks set by default (Rails 7.1+ sets WAL and
// foreign keys, nothing else).
var naivePragmas = []pragma{
	{"journal_mode", "WAL"},
	{"foreign_keys", "ON"},
}

// productionPragmas are set on every connection of the tuned profiles.
// Order matters only for journal_mode, which must come first so the rest
// apply to a WAL database; busy_timeout is set by the driver before all.
var productionPragmas = []pragma{
	// Readers never block the writer and the writer never blocks readers.
	{"journal_mode", "WAL"},
	// In WAL mode, NORMAL fsyncs only at checkpoints: a commit survives an
	// app crash; a power loss may drop the last commits but never corrupts.
	{"synchronous", "NORMAL"},
	// SQLite leaves foreign keys off on every new connection unless asked;
	// without this, cascades silently don't happen.
	{"foreign_keys", "ON"},
	// After a checkpoint, truncate the WAL back to 64 MiB, so one burst of
	// writes does not leave a huge file behind forever.
	{"journal_size_limit", "67108864"},
	// No memory map (SQLite's default). With one, a connection whose read
	// transaction starts after another connection committed unmaps the
	// whole file and maps it again (pager.c: sqlite3OsUnfetch(fd, 0, 0)),
	// and here nearly every request commits: perf showed 17 % of the
	// server's CPU in munmap (TLB shootdowns) and the page faults that
	// follow. Plain reads from the OS page cache are cheaper: +21 % req/s
	// (benchmarks/perf/README.md, row 12).
	{"mmap_size", "0"},
	// A 20 MB page cache per connection instead of 2 MB (negative = KiB).
	{"cache_size", "-20000"},
	// Temporary b-trees (sorts, GROUP BY) in memory rather than temp files.
	{"temp_store", "MEMORY"},
}

var profiles = map[Profile]profileSpec{
	ProfileNaive:     {sharedPool: true, pragmas: naivePragmas},
	ProfileImmediate: {sharedPool: true, capSharedPool: true, immediate: true, stmtCache: stmtCacheSize, pragmas: productionPragmas},
	ProfileFair:      {sharedPool: true, capSharedPool: true, immediate: true, writerQueue: true, pollBusy: true, stmtCache: stmtCacheSize, pragmas: productionPragmas},
	ProfileSplit:     {immediate: true, writerQueue: true, pollBusy: true, stmtCache: stmtCacheSize, pragmas: productionPragmas},
	ProfileBatch:     {immediate: true, groupCommit: true, pollBusy: true, stmtCache: stmtCacheSize, pragmas: productionPragmas},
}

func (s profileSpec) txlock() string {
	if s.immediate {
		return "immediate"
	}
	return "deferred"
}

// writerBusyTimeout is the busy_timeout of connections that write. Polling
// profiles set 0 so that SQLite returns SQLITE_BUSY at once and Go does the
// (fair) waiting; the others let SQLite's handler wait up to timeout.
func (s profileSpec) writerBusyTimeout(timeout time.Duration) time.Duration {
	if s.pollBusy {
		return 0
	}
	return timeout
}
