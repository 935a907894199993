package sqlite

import (
	"slices"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// Profile names a connection setup. Most are the steps of the 2024 talk on
// SQLite in production web apps (its demo app is the public repository
// fractaledmind/wrocloverb-2024, one branch per step), rebuilt on Go's
// database/sql, so the experiment can show what each step changes: naive,
// enhanced, immediate and fair are baselines on database/sql and the
// driver alone (baseline.go); split (the default), batch and durable are
// sets of sqlitedb options.
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
	// (gemRetryInterval). Its pragmas are Rails's, so naive's.
	ProfileEnhanced Profile = "enhanced"
	// ProfileImmediate takes the write lock at BEGIN (BEGIN IMMEDIATE), so
	// the upgrade failure cannot happen, and sets the production pragmas.
	// Waiting writers still use SQLite's back-off busy handler.
	ProfileImmediate Profile = "immediate"
	// ProfileFair makes the process's writes take turns in arrival order,
	// first come, first served, each on its caller's goroutine and
	// connection, and, for the lock between processes, polls at a constant
	// 1 ms interval instead of SQLite's growing back-off, so no waiting
	// writer is starved.
	ProfileFair Profile = "fair"
	// ProfileSplit (the default) is package sqlitedb: several query_only
	// connections for reads, taken in arrival order, and exactly one write
	// connection, on which one goroutine runs every write in arrival order,
	// so a read never waits for a connection held by a writer.
	ProfileSplit Profile = "split"
	// ProfileBatch is split whose writers queue (first come, first served)
	// for one goroutine that commits the writes queued at that moment
	// together (group commit, each write in its own savepoint; see
	// package sqlitedb). With the touches sharing a commit in split too, the two
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

// railsPoolSize is the pool of Rails's generated database.yml
// (RAILS_MAX_THREADS, default 5), which the talk's app kept.
const railsPoolSize = 5

// railsPragmas are what Rails's SQLite adapter sets on every connection
// (activerecord/lib/active_record/connection_adapters/sqlite3_adapter.rb:
// configure_connection in 7.1, DEFAULT_PRAGMAS in 7.2), and what the
// enhanced adapter gem v0.5.0 sets too, written over sqlitedb's defaults:
// temp_store goes back to SQLite's default, which Rails leaves. The 5 s
// busy timeout is database.yml's "timeout: 5000".
var railsPragmas = []sqlitedb.Pragma{
	{Name: "foreign_keys", Value: "ON"},
	{Name: "journal_mode", Value: "WAL"},
	{Name: "synchronous", Value: "NORMAL"},
	{Name: "mmap_size", Value: "134217728"},         // 128 MiB
	{Name: "journal_size_limit", Value: "67108864"}, // 64 MiB
	{Name: "cache_size", Value: "2000"},             // pages, 8 MB at 4 KiB
	{Name: "temp_store", Value: "DEFAULT"},
}

// The enhanced adapter gem v0.5.0 (lib/enhanced_sqlite3/adapter.rb,
// configure_busy_handler_timeout) replaces SQLite's busy handler, which
// backs off (1, 2, 5, … 100 ms between tries), with one that sleeps a
// constant 60 µs between tries:
//
//	@raw_connection.busy_handler do |count|
//	  timed_out = false
//	  if (count % 100).zero?
//	    timed_out = (count * retry_interval) > timeout_seconds
//	  end
//	  if timed_out then false else sleep(retry_interval); true end
//	end
//
// The enhanced baseline polls at that interval (baseline.poll), around
// BEGIN IMMEDIATE, the one statement where an IMMEDIATE writer meets the
// lock. One difference: the gem gives up once count × 60 µs passes the
// timeout, which, since each sleep overruns, is later than the timeout by
// the clock at which the baseline gives up; at the 5 s timeout neither
// gives up in the experiment.
const gemRetryInterval = 60 * time.Microsecond

// setup is the profile's setup: sqlitedb's options, or a baseline on
// database/sql; ok is false if the profile is unknown.
func (p Profile) setup() (opts *sqlitedb.Options, base *baseline, ok bool) {
	// Rails opens the file with SQLite's default VFS: pread, and with its
	// mmap_size SQLite's own memory map. Its pool is database.yml's.
	switch p {
	case ProfileNaive:
		return nil, &baseline{conns: railsPoolSize, pragmas: railsPragmas, begin: `BEGIN`}, true
	case ProfileEnhanced:
		return nil, &baseline{conns: railsPoolSize, pragmas: railsPragmas, begin: `BEGIN IMMEDIATE`, poll: gemRetryInterval}, true
	case ProfileImmediate:
		return nil, &baseline{pragmas: productionPragmas, begin: `BEGIN IMMEDIATE`}, true
	case ProfileFair:
		return nil, &baseline{pragmas: productionPragmas, begin: `BEGIN IMMEDIATE`, poll: time.Millisecond, inTurn: true}, true
	case ProfileSplit:
		return &sqlitedb.Options{}, nil, true
	case ProfileBatch:
		return &sqlitedb.Options{GroupCommit: true}, nil, true
	case ProfileDurable:
		return &sqlitedb.Options{Pragmas: []sqlitedb.Pragma{{Name: "synchronous", Value: "FULL"}}}, nil, true
	}
	return nil, nil, false
}

// productionPragmas are the pragmas the immediate and fair baselines set:
// sqlitedb's defaults (WAL, synchronous=NORMAL, foreign keys, a 20 MB
// cache, temporary tables in memory, no memory map of SQLite's own).
var productionPragmas = sqlitedb.DefaultPragmas()
