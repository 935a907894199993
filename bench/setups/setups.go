// Package setups opens the store on each of the setups the experiment
// compares. Most are the steps of the 2024 talk on SQLite in production web
// apps (its demo app is the public repository fractaledmind/wrocloverb-2024,
// one branch per step), rebuilt on Go's database/sql, so the experiment can
// show what each step changes: naive, enhanced, immediate and fair are
// baselines on database/sql and the driver alone (baseline.go); split (the
// store's own setup, sqlite.Open), batch and durable run on package
// sqlitedb.
package setups

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/loremnews/loremnews/sqlite"
	"github.com/loremnews/loremnews/sqlitedb"
)

// The setups, by name.
const (
	// Naive is what Rails 7.1+ gives by default, the talk's baseline
	// (branch 00-baseline): one pool of 5 connections (database.yml's
	// default) shared by reads and writes; deferred transactions; a 5 s
	// busy timeout; prepared statements kept per connection; and the
	// adapter's pragmas (railsPragmas). Under concurrent writes it fails
	// for real: a transaction that reads and then writes cannot upgrade
	// its lock once another writer has committed (SQLITE_BUSY_SNAPSHOT,
	// returned at once, not after waiting).
	Naive = "naive"
	// Enhanced is the talk's step 01 (branch 01-add-enhanced-adapter-gem):
	// naive plus what the activerecord-enhancedsqlite3-adapter gem v0.5.0
	// changes, transactions that BEGIN IMMEDIATE and the gem's busy
	// handler in place of SQLite's (gemRetryInterval). Its pragmas are
	// Rails's, so naive's.
	Enhanced = "enhanced"
	// Immediate takes the write lock at BEGIN (BEGIN IMMEDIATE), so the
	// upgrade failure cannot happen, and sets the production pragmas.
	// Waiting writers still use SQLite's back-off busy handler.
	Immediate = "immediate"
	// Fair makes the process's writes take turns in arrival order, first
	// come, first served, each on its caller's goroutine and connection,
	// and, for the lock between processes, polls at a constant 1 ms
	// interval instead of SQLite's growing back-off, so no waiting writer
	// is starved.
	Fair = "fair"
	// Split is the store's own setup (sqlite.Open, package sqlitedb):
	// several query_only connections for reads, taken in arrival order,
	// and exactly one write connection, on which one goroutine runs every
	// write in arrival order, so a read never waits for a connection held
	// by a writer.
	Split = sqlite.ProductSetup
	// Batch is split with every write coalesced (sqlitedb.DB.Coalesce),
	// not just the touches: the writes queued at one moment share one
	// transaction and one commit; a write that fails is answered alone and
	// the others run again without it. With the touches sharing a commit
	// in split too, the two measure alike (docs/setups.md). It is not the
	// store's setup because a failed COMMIT fails every write of its
	// batch, and a coalesced write is not interrupted when its caller
	// leaves, where in split each write commits or fails alone.
	Batch = "batch"
	// Durable is split with synchronous=FULL: every commit waits for the
	// WAL to reach the disk, so a power loss loses no acknowledged write.
	// It prices that durability against split's NORMAL.
	Durable = "durable"
)

// Names lists the setups in the order the experiment runs them.
func Names() []string { return []string{Naive, Enhanced, Immediate, Fair, Split, Batch, Durable} }

// Valid reports whether name is a known setup.
func Valid(name string) bool { return slices.Contains(Names(), name) }

// Open opens (creating if needed) and migrates the database on the setup
// called name; "" means Split. cfg.ReadConns sizes a baseline's one pool,
// but for naive and enhanced, which keep Rails's 5.
func Open(ctx context.Context, name string, cfg sqlite.Config) (*sqlite.DB, error) {
	if name == "" {
		name = Split
	}
	open, ok := opener(name, cfg)
	if !ok {
		return nil, fmt.Errorf("sqlite: unknown setup %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	return sqlite.OpenEngine(ctx, name, open)
}

// opener is how the setup called name opens its engine; ok is false if
// there is no such setup.
func opener(name string, cfg sqlite.Config) (open func(context.Context, sqlite.Hooks) (sqlite.Engine, error), ok bool) {
	onSqlitedb := func(pragmas []sqlitedb.Pragma, engine func(*sqlitedb.DB) sqlite.Engine) func(context.Context, sqlite.Hooks) (sqlite.Engine, error) {
		return func(ctx context.Context, s sqlite.Hooks) (sqlite.Engine, error) {
			opts := cfg.Options(s)
			opts.Pragmas = pragmas
			db, err := sqlitedb.Open(ctx, cfg.DSN, opts)
			if err != nil {
				return nil, err
			}
			return engine(db), nil
		}
	}
	onPool := func(b baseline) func(context.Context, sqlite.Hooks) (sqlite.Engine, error) {
		return func(ctx context.Context, s sqlite.Hooks) (sqlite.Engine, error) {
			return openBaseline(ctx, cfg, b, s)
		}
	}
	// Rails opens the file with SQLite's default VFS: pread, and with its
	// mmap_size SQLite's own memory map. Its pool is database.yml's.
	switch name {
	case Naive:
		return onPool(baseline{conns: railsPoolSize, pragmas: railsPragmas, begin: `BEGIN`}), true
	case Enhanced:
		return onPool(baseline{conns: railsPoolSize, pragmas: railsPragmas, begin: `BEGIN IMMEDIATE`, poll: gemRetryInterval}), true
	case Immediate:
		return onPool(baseline{pragmas: productionPragmas, begin: `BEGIN IMMEDIATE`}), true
	case Fair:
		return onPool(baseline{pragmas: productionPragmas, begin: `BEGIN IMMEDIATE`, poll: time.Millisecond, inTurn: true}), true
	case Split:
		return onSqlitedb(nil, sqlite.NewEngine), true
	case Batch:
		return onSqlitedb(nil, func(db *sqlitedb.DB) sqlite.Engine { return batchEngine{sqlite.NewEngine(db)} }), true
	case Durable:
		return onSqlitedb([]sqlitedb.Pragma{{Name: "synchronous", Value: "FULL"}}, sqlite.NewEngine), true
	}
	return nil, false
}

// batchEngine coalesces every write.
type batchEngine struct{ sqlite.Engine }

func (e batchEngine) Write(ctx context.Context, fn func(context.Context, sqlite.Execer) error) error {
	return e.Coalesce(ctx, fn)
}

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

// productionPragmas are the pragmas the immediate and fair baselines set:
// sqlitedb's defaults (WAL, synchronous=NORMAL, foreign keys, a 20 MB
// cache, temporary tables in memory, no memory map of SQLite's own).
var productionPragmas = sqlitedb.DefaultPragmas()
