package sqlite

// This file builds each connection: the DSN, the pragmas every pooled
// connection runs when it opens, and the connector that applies them.

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/mattn/go-sqlite3"
)

// A _pragma=name(value) DSN parameter is checked against these before it
// is run, so a DSN cannot smuggle arbitrary SQL into every connection.
var (
	pragmaNameRe  = regexp.MustCompile(`^[a-z_]+$`)
	pragmaValueRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	pragmaParamRe = regexp.MustCompile(`^([a-z_]+)\(([A-Za-z0-9_-]*)\)$`)
)

// pragma is one PRAGMA statement run on every new connection.
type pragma struct{ name, value string }

// mergePragmas returns base with each override replacing the pragma of the
// same name, or appended if base has none.
func mergePragmas(base, overrides []pragma) []pragma {
	out := append([]pragma{}, base...)
next:
	for _, o := range overrides {
		for i := range out {
			if out[i].name == o.name {
				out[i] = o
				continue next
			}
		}
		out = append(out, o)
	}
	return out
}

// parseDSN splits a path or file: URI into the file path, the parameters for
// the driver, and the _pragma=name(value) parameters.
func parseDSN(dsn string) (path string, params url.Values, pragmas []pragma, err error) {
	if dsn == "" {
		return "", nil, nil, errors.New("sqlite: empty database path")
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return "", nil, nil, fmt.Errorf("sqlite: %q is a PostgreSQL URL; open it with the postgres package", dsn)
	}
	path, query, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	if path == "" || path == ":memory:" || strings.Contains(query, "mode=memory") {
		// Each pooled connection would get its own empty database.
		return "", nil, nil, errors.New("sqlite: in-memory databases are not supported; give a file path")
	}
	params, err = url.ParseQuery(query)
	if err != nil {
		return "", nil, nil, fmt.Errorf("sqlite: bad parameters in %q: %w", dsn, err)
	}
	for _, p := range params["_pragma"] {
		m := pragmaParamRe.FindStringSubmatch(p)
		if m == nil || !pragmaNameRe.MatchString(m[1]) || !pragmaValueRe.MatchString(m[2]) {
			return "", nil, nil, fmt.Errorf("sqlite: bad _pragma %q: want name(value), e.g. _pragma=cache_size(-16000)", p)
		}
		pragmas = append(pragmas, pragma{m[1], m[2]})
	}
	params.Del("_pragma")
	for _, reserved := range []string{"_txlock", "_busy_timeout", "_timeout", "mode"} {
		if params.Has(reserved) {
			return "", nil, nil, fmt.Errorf("sqlite: parameter %s is set by the profile; use --profile (or _pragma=busy_timeout(ms))", reserved)
		}
	}
	return path, params, pragmas, nil
}

// newConnector opens connections with the given settings; sql.OpenDB calls it
// for every new pooled connection, so every connection gets the pragmas.
func newConnector(path string, params url.Values, busyTimeout time.Duration, txlock string, pragmas []pragma) driver.Connector {
	p := url.Values{}
	for k, v := range params {
		p[k] = v
	}
	for _, pr := range pragmas {
		if pr.name == "busy_timeout" { // user override of the profile's timeout
			fmt.Sscan(pr.value, &busyTimeout)
			busyTimeout *= time.Millisecond
		}
	}
	// The driver runs busy_timeout before anything else on a new connection,
	// which matters: setting journal_mode=WAL needs a lock, and without a
	// timeout it fails at once if another connection is mid-write.
	p.Set("_busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()))
	p.Set("_txlock", txlock)
	// database/sql never shares a connection between goroutines, so
	// SQLite's per-connection mutex is pure overhead (multi-thread mode).
	if !p.Has("_mutex") {
		p.Set("_mutex", "no")
	}
	var stmts []string
	for _, pr := range pragmas {
		if pr.name != "busy_timeout" {
			stmts = append(stmts, fmt.Sprintf("PRAGMA %s = %s", pr.name, pr.value))
		}
	}
	hook := func(c *sqlite3.SQLiteConn) error {
		for _, s := range stmts {
			if _, err := c.Exec(s, nil); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	}
	return sqlitedb.NewConnector("file:"+path+"?"+p.Encode(), hook)
}
