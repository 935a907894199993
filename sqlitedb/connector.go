package sqlitedb

import (
	"context"
	"database/sql/driver"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/mattn/go-sqlite3"
)

// connector opens go-sqlite3 connections that the row reader can use.
type connector struct {
	dsn    string
	driver *sqlite3.SQLiteDriver
}

// newConnector returns a connector for sql.OpenDB that opens d's file with
// the given busy timeout, runs the pragmas on each new connection, and
// hands out connections that Query can read from. stmtCache < 0 keeps no
// prepared statements for database/sql's calls.
func newConnector(d dsn, busyTimeout time.Duration, pragmas []Pragma, stmtCache int, sqliteVFS bool) *connector {
	p := url.Values{}
	for k, v := range d.params {
		p[k] = v
	}
	var stmts []string
	for _, pr := range pragmas {
		if pr.Name == "busy_timeout" { // an override of the options' timeout
			if ms, err := strconv.Atoi(pr.Value); err == nil {
				busyTimeout = time.Duration(ms) * time.Millisecond
			}
			continue
		}
		stmts = append(stmts, fmt.Sprintf("PRAGMA %s = %s", pr.Name, pr.Value))
	}
	// The driver sets busy_timeout before anything else on a new
	// connection, which matters: setting journal_mode=WAL needs a lock, and
	// without a timeout it fails at once if another connection is
	// mid-write.
	p.Set("_busy_timeout", strconv.FormatInt(busyTimeout.Milliseconds(), 10))
	// database/sql never shares a connection between goroutines, so
	// SQLite's per-connection mutex is pure overhead (multi-thread mode).
	if !p.Has("_mutex") {
		p.Set("_mutex", "no")
	}
	// The package's VFS (mapvfs.c), unless asked for another.
	if !p.Has("vfs") && !sqliteVFS && mapVFS != "" {
		p.Set("vfs", mapVFS)
	}
	if stmtCache > 0 && !p.Has("_stmt_cache_size") {
		p.Set("_stmt_cache_size", strconv.Itoa(stmtCache))
	}
	hook := func(c *sqlite3.SQLiteConn) error {
		for _, s := range stmts {
			if _, err := c.Exec(s, nil); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	}
	return &connector{dsn: "file:" + d.path + "?" + p.Encode(), driver: &sqlite3.SQLiteDriver{ConnectHook: hook}}
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
	return conn, nil
}

func (c *connector) Driver() driver.Driver { return c.driver }
