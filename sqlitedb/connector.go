//go:build cgo

package sqlitedb

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
)

// connector opens go-sqlite3 connections that the handles can use.
type connector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
	// stopped is the DB's fail-stop, given to each connection it opens
	// (nil outside a DB).
	stopped *failStop
}

// connectorConfig is how a connector's connections are set up.
type connectorConfig struct {
	// busyTimeout is SQLite's busy timeout once a connection is set up;
	// 0 for connections that poll for the lock themselves (the writer's)
	// or never wait for one (the checkpointer's).
	busyTimeout time.Duration
	// openTimeout is how long a new connection waits for a lock while it
	// sets its pragmas.
	openTimeout time.Duration
	pragmas     []Pragma
	// stmtCache is how many prepared statements each connection keeps for
	// database/sql's calls; noStatementCache for none.
	stmtCache int
	memoryMap bool // Options.MemoryMap
	// connectHook is Options.ConnectHook.
	connectHook func(*sqlite3.SQLiteConn) error
}

// noStatementCache keeps no prepared statements for database/sql's calls,
// on connections that run a few statements once (checkpoints, a backup).
const noStatementCache = -1

// newConnector returns a connector for sql.OpenDB that opens d's file as
// cfg says, runs the pragmas on each new connection, and hands out
// connections the handles can query.
func newConnector(d dsn, cfg connectorConfig) *connector {
	busyTimeout, openTimeout, pragmas, stmtCache, memoryMap := cfg.busyTimeout, cfg.openTimeout, cfg.pragmas, cfg.stmtCache, cfg.memoryMap
	p := url.Values{}
	for k, v := range d.params {
		p[k] = v
	}
	var stmts []string
	var set []Pragma
	for _, pr := range pragmas {
		if pr.Name == "busy_timeout" { // an override of the options' timeout
			if ms, err := strconv.Atoi(pr.Value); err == nil {
				busyTimeout = time.Duration(ms) * time.Millisecond
			}
			continue
		}
		stmts = append(stmts, fmt.Sprintf("PRAGMA %s = %s", pr.Name, pr.Value))
		set = append(set, pr)
	}
	// The driver sets busy_timeout before anything else on a new
	// connection, which matters: setting journal_mode=WAL needs a lock, and
	// without a timeout it fails at once if another connection is
	// mid-write.
	// While a new connection sets its pragmas, it waits up to openTimeout
	// for a lock (the first connection to a new file switches it to WAL,
	// which takes an exclusive lock: another process opening the same new
	// file at once waits for it instead of failing), then busyTimeout.
	p.Set("_busy_timeout", strconv.FormatInt(max(busyTimeout, openTimeout).Milliseconds(), 10))
	// database/sql never shares a connection between goroutines, so
	// SQLite's per-connection mutex is pure overhead (multi-thread mode).
	if !p.Has("_mutex") {
		p.Set("_mutex", "no")
	}
	// The package's VFS (mapvfs.c) if asked for, and registered in any
	// case, so that a DSN's vfs=sqlitedb finds it.
	if name := mapVFS(); !p.Has("vfs") && memoryMap && name != "" {
		p.Set("vfs", name)
	}
	if stmtCache > 0 && !p.Has("_stmt_cache_size") {
		p.Set("_stmt_cache_size", strconv.Itoa(stmtCache))
	}
	hook := func(c *sqlite3.SQLiteConn) error {
		for i, s := range stmts {
			if err := execWhileBusy(c, s, openTimeout); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
			if err := checkPragma(c, set[i]); err != nil {
				return err
			}
		}
		if openTimeout > busyTimeout {
			if _, err := c.Exec(fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeout.Milliseconds()), nil); err != nil {
				return err
			}
		}
		if cfg.connectHook != nil {
			if err := cfg.connectHook(c); err != nil {
				return fmt.Errorf("ConnectHook: %w", err)
			}
		}
		return nil
	}
	return &connector{dsn: FileURI(d.path, p), driver: &sqlite3.SQLiteDriver{ConnectHook: hook}}
}

// execWhileBusy runs the statement s on c, again while it fails with
// SQLITE_BUSY, up to within. SQLite's busy handler does not cover every
// such failure: a connection switching a new file to WAL while another
// connection of a process opening it at the same moment reads its header
// gets SQLITE_BUSY at once (SQLite gives up rather than risk a deadlock).
func execWhileBusy(c *sqlite3.SQLiteConn, s string, within time.Duration) error {
	for deadline := time.Now().Add(within); ; {
		_, err := c.Exec(s, nil)
		if err == nil || !IsBusy(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

func (c *connector) Connect(context.Context) (driver.Conn, error) {
	if err := installOnce(); err != nil {
		return nil, err
	}
	dc, err := c.driver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	conn, err := newDriverConn(dc.(*sqlite3.SQLiteConn))
	if err != nil {
		dc.Close()
		return nil, err
	}
	if stopped := c.stopped; stopped != nil {
		conn.syncFailed = func() bool { return stopped.err() != nil }
	}
	return conn, nil
}

func (c *connector) Driver() driver.Driver { return c.driver }

// pragmaWords are the names SQLite accepts for the values of the pragmas
// checkPragma reads back, by the number SQLite reports them as.
var pragmaWords = map[string]map[string]string{
	"synchronous":  {"off": "0", "normal": "1", "full": "2", "extra": "3"},
	"temp_store":   {"default": "0", "file": "1", "memory": "2"},
	"auto_vacuum":  {"none": "0", "full": "1", "incremental": "2"},
	"foreign_keys": boolWords, "query_only": boolWords, "recursive_triggers": boolWords,
	"trusted_schema": boolWords, "cell_size_check": boolWords, "automatic_index": boolWords,
	"defer_foreign_keys": boolWords, "ignore_check_constraints": boolWords, "reverse_unordered_selects": boolWords,
}

var boolWords = map[string]string{"on": "1", "yes": "1", "true": "1", "off": "0", "no": "0", "false": "0"}

// readBack are the pragmas whose value SQLite reports back exactly as set
// (after pragmaWords): checkPragma reads these, and answers an error when
// SQLite did not take the value. SQLite ignores a value it does not know
// without an error (journal_mode=WALL leaves the database in its rollback
// journal), so a typo would otherwise open a database that is not what was
// asked for. Others (page_size, mmap_size: SQLite may adjust them) are not
// read back.
var readBack = map[string]bool{
	"journal_mode": true, "locking_mode": true, "cache_size": true, "journal_size_limit": true,
	"wal_autocheckpoint": true, "secure_delete": true,
}

// checkPragma reads back p on c, if it is one SQLite reports exactly, and
// answers an error naming it if SQLite did not take its value.
func checkPragma(c *sqlite3.SQLiteConn, p Pragma) error {
	words, known := pragmaWords[p.Name]
	if !known && !readBack[p.Name] {
		return nil
	}
	rows, err := c.Query("PRAGMA "+p.Name, nil)
	if err != nil {
		return fmt.Errorf("read back PRAGMA %s: %w", p.Name, err)
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return fmt.Errorf("read back PRAGMA %s: %w", p.Name, err)
	}
	got := strings.ToLower(fmt.Sprint(v[0]))
	if b, ok := v[0].([]byte); ok {
		got = strings.ToLower(string(b))
	}
	want := strings.ToLower(strings.Trim(p.Value, `'"`))
	if w, ok := words[want]; ok {
		want = w
	}
	if got != want {
		return fmt.Errorf("PRAGMA %s = %s did not take: SQLite reports %s (a value it does not know is ignored without an error)", p.Name, p.Value, got)
	}
	return nil
}
