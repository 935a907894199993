package sqlite

import (
	"slices"
	"time"
)

// Profile names a connection setup. Most are the steps of the 2024 talk on
// SQLite in production web apps (its demo app is the public repository
// fractaledmind/wrocloverb-2024, one branch per step), rebuilt on Go's
// database/sql, so the experiment can show what each step changes.
type Profile string

const (
	// ProfileNaive is what Rails 7.1+ gives by default, the talk's baseline
	// (branch 00-baseline): one pool of 5 connections (database.yml's
	// default) shared by reads and writes; deferred transactions; a 5 s
	// busy timeout; prepared statements kept per connection; and the
	// adapter's pragmas (railsPragmas). Under
	// concurrent writes it fails for real: a transaction that reads and
	// then writes cannot upgrade its lock once another writer has committed
	// (SQLITE_BUSY_SNAPSHOT, returned at once, not after waiting).
	ProfileNaive Profile = "naive"
	// ProfileEnhanced is the talk's step 01 (branch
	// 01-add-enhanced-adapter-gem): naive plus what the
	// activerecord-enhancedsqlite3-adapter gem v0.5.0 changes, transactions
	// that BEGIN IMMEDIATE and the gem's busy handler in place of SQLite's
	// (gemBusyHandler). Its pragmas are Rails's, so naive's.
	ProfileEnhanced Profile = "enhanced"
	// ProfileImmediate takes the write lock at BEGIN (BEGIN IMMEDIATE), so
	// the upgrade failure cannot happen, and sets the production pragmas.
	// Waiting writers still use SQLite's back-off busy handler.
	ProfileImmediate Profile = "immediate"
	// ProfileFair adds a first-come-first-served writer queue in the process
	// (one goroutine runs every write, a transaction each; see writer.go)
	// and, for the lock between processes, polls at a constant 1 ms interval
	// instead of SQLite's growing back-off, so no waiting writer is starved.
	ProfileFair Profile = "fair"
	// ProfileSplit (the default) is fair plus separate pools: several
	// query_only connections for reads, taken in arrival order, and exactly
	// one write connection, so a read never waits for a connection held by
	// a writer.
	ProfileSplit Profile = "split"
	// ProfileBatch is split whose writers queue (first come, first served)
	// for one goroutine that commits the writes queued at that moment
	// together (group commit, each write in its own savepoint; see
	// writer.go). With the touches sharing a commit in split too, the two
	// measure alike (docs/setups.md). It is not the default because a
	// failed COMMIT fails every write of its batch, where in split each
	// write commits or fails alone.
	ProfileBatch Profile = "batch"
	// ProfileDurable is split with synchronous=FULL: every commit waits for
	// the WAL to reach the disk, so a power loss loses no acknowledged
	// write. It prices that durability against split's NORMAL.
	ProfileDurable Profile = "durable"
)

// ProfileNames lists the profiles in the order the experiment runs them.
func ProfileNames() []string {
	return []string{string(ProfileNaive), string(ProfileEnhanced), string(ProfileImmediate), string(ProfileFair),
		string(ProfileSplit), string(ProfileBatch), string(ProfileDurable)}
}

// ValidProfile reports whether name is a known profile.
func ValidProfile(name string) bool { return slices.Contains(ProfileNames(), name) }

// profileSpec is what a profile switches on.
type profileSpec struct {
	sharedPool    bool     // one pool for reads and writes
	sharedPoolMax int      // the shared pool's size; 0: Config.ReadConns
	immediate     bool     // BEGIN IMMEDIATE for write transactions
	writerQueue   bool     // FIFO queue of writes served by one goroutine, a transaction each
	groupCommit   bool     // FIFO queue served by one goroutine that commits queued writes together
	pollBusy      bool     // busy_timeout=0 on writers; Go retries BEGIN every busyPollInterval
	gemBusy       bool     // busy_timeout=0 on the pool; Go retries with gemBusyHandler's schedule
	stmtCache     int      // prepared statements kept per connection (0: prepare every query)
	checkpointer  bool     // WAL checkpoints from a goroutine of their own (checkpointer.go), not in a commit
	pragmas       []pragma // run on every connection, in order
}

// railsPoolSize is the pool of Rails's generated database.yml
// (RAILS_MAX_THREADS, default 5), which the talk's app kept.
const railsPoolSize = 5

// stmtCacheSize is how many prepared statements each connection of the
// tuned profiles keeps. Preparing (parsing and planning) a join costs tens
// of microseconds, a sixth of all server CPU before it was cached; the app
// has about 40 distinct statements.
const stmtCacheSize = 64

// railsPragmas are what Rails's SQLite adapter sets on every connection
// (activerecord/lib/active_record/connection_adapters/sqlite3_adapter.rb:
// configure_connection in 7.1, DEFAULT_PRAGMAS in 7.2), and what the
// enhanced adapter gem v0.5.0 sets too; the 5 s busy timeout is
// database.yml's "timeout: 5000".
var railsPragmas = []pragma{
	{"foreign_keys", "ON"},
	{"journal_mode", "WAL"},
	{"synchronous", "NORMAL"},
	{"mmap_size", "134217728"},         // 128 MiB
	{"journal_size_limit", "67108864"}, // 64 MiB
	{"cache_size", "2000"},             // pages, 8 MB at 4 KiB
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
	// and here nearly every request commits, so the server's CPU went to
	// munmap (TLB shootdowns) and the page faults that follow. Plain reads
	// from the OS page cache are cheaper; the figures are in
	// benchmarks/perf/README.md (the "no memory map" attempt, 12).
	{"mmap_size", "0"},
	// A 20 MB page cache per connection instead of 2 MB (negative = KiB).
	{"cache_size", "-20000"},
	// Temporary b-trees (sorts, GROUP BY) in memory rather than temp files.
	{"temp_store", "MEMORY"},
}

// durablePragmas are the production pragmas with synchronous=FULL: in WAL
// mode, an fsync of the WAL at every commit.
var durablePragmas = mergePragmas(productionPragmas, []pragma{{"synchronous", "FULL"}})

var profiles = map[Profile]profileSpec{
	// Rails keeps each connection's prepared statements too (its adapter's
	// StatementPool, on by default), so the Rails profiles cache them.
	ProfileNaive:     {sharedPool: true, sharedPoolMax: railsPoolSize, stmtCache: stmtCacheSize, pragmas: railsPragmas},
	ProfileEnhanced:  {sharedPool: true, sharedPoolMax: railsPoolSize, immediate: true, gemBusy: true, stmtCache: stmtCacheSize, pragmas: railsPragmas},
	ProfileImmediate: {sharedPool: true, immediate: true, stmtCache: stmtCacheSize, pragmas: productionPragmas},
	ProfileFair:      {sharedPool: true, immediate: true, writerQueue: true, pollBusy: true, stmtCache: stmtCacheSize, pragmas: productionPragmas},
	ProfileSplit:     {immediate: true, writerQueue: true, pollBusy: true, stmtCache: stmtCacheSize, pragmas: productionPragmas, checkpointer: true},
	ProfileBatch:     {immediate: true, groupCommit: true, pollBusy: true, stmtCache: stmtCacheSize, pragmas: productionPragmas, checkpointer: true},
	ProfileDurable:   {immediate: true, writerQueue: true, pollBusy: true, stmtCache: stmtCacheSize, pragmas: durablePragmas, checkpointer: true},
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
	if s.pollBusy || s.gemBusy {
		return 0
	}
	return timeout
}

// The enhanced adapter gem v0.5.0 (lib/enhanced_sqlite3/adapter.rb,
// configure_busy_handler_timeout) replaces SQLite's busy handler, which
// backs off (1, 2, 5, … 100 ms between tries), with one that sleeps a
// constant 60 µs and gives up once count × 60 µs exceeds the timeout,
// checking only every 100th call:
//
//	@raw_connection.busy_handler do |count|
//	  timed_out = false
//	  if (count % 100).zero?
//	    timed_out = (count * retry_interval) > timeout_seconds
//	  end
//	  if timed_out then false else sleep(retry_interval); true end
//	end
//
// go-sqlite3 has no way to register a busy handler, so the profile sets
// busy_timeout=0 (SQLite returns SQLITE_BUSY at once) and Go runs the same
// loop around BEGIN IMMEDIATE, the one statement where an IMMEDIATE writer
// meets the lock: SQLite's handler would retry that same lock request
// after the same sleep. The loop's count is the handler's.
const gemRetryInterval = 60 * time.Microsecond

// gemBusyHandler is the gem's decision for the count-th SQLITE_BUSY of one
// statement (count from 0): retry after gemRetryInterval, or give up.
func gemBusyHandler(count int, timeout time.Duration) (retry bool) {
	if count%100 == 0 && time.Duration(count)*gemRetryInterval > timeout {
		return false
	}
	return true
}
