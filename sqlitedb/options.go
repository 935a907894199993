//go:build cgo

package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Options says how a database is set up. The zero value is the setup
// this package exists for; each field is a production setting.
type Options struct {
	// ReadConns is the number of read connections. 0 means
	// max(4, 2×GOMAXPROCS).
	ReadConns int

	// Timeout bounds each wait: for the writer's turn, for SQLite's write
	// lock held by another process, for a read connection. 0 means 5 s,
	// SQLite's customary busy timeout. A write that has begun is not
	// interrupted for running long.
	Timeout time.Duration

	// Pragmas are run on every connection after the defaults
	// (DefaultPragmas), replacing a default of the same name. A DSN's
	// _pragma=name(value) parameters replace both.
	Pragmas []Pragma

	// StatementCache is how many prepared statements each connection
	// keeps for the statements run through the escape hatch (Rx.Conn) and
	// Setup; 0 means 64, negative none. The handles' own statements are
	// kept apart, up to 128 per connection.
	StatementCache int

	// MemoryMap opens the file through the package's VFS, "sqlitedb",
	// which copies each page a connection reads from one memory map of the
	// database file and one of its WAL per process, instead of SQLite's
	// own reads (a pread per page; the default). It saves those system
	// calls. A read the map cannot serve (a failing disk's EIO, a file cut
	// short outside SQLite) faults with SIGBUS; each copy is guarded, so
	// the fault becomes that page's pread, and its error the statement's,
	// as without the map: the process lives. The guard is a SIGBUS handler
	// for the process, installed at the first open with MemoryMap, that
	// passes every other SIGBUS to the handler before it (Go's). A DSN's
	// vfs parameter (vfs=sqlitedb, vfs=unix) decides instead, if given.
	MemoryMap bool

	// ConnectHook, if set, runs on every connection the package opens,
	// read or write, once its pragmas are set and before any statement of
	// the caller's: the place to register SQL functions, collations or
	// virtual tables (go-sqlite3's RegisterFunc and friends), which SQLite
	// keeps per connection. If it fails, so does opening the connection
	// (and Open, for the first ones). It must not set a commit or rollback
	// hook: those are the package's (its commit gate), and a connection
	// whose hook set one fails to open, saying so.
	ConnectHook func(*sqlite3.SQLiteConn) error

	// Setup, if set, runs once when the database opens, before any read or
	// write, on the write connection and outside any transaction: the
	// place for migrations (see Migrate), including those that need a
	// PRAGMA outside a transaction (foreign_keys=OFF to rebuild a table).
	// SQLite's busy timeout is Timeout while it runs, so its BEGIN waits
	// for another process's write lock. If it fails, Open fails.
	Setup func(ctx context.Context, conn *sql.Conn) error

	// OnWriteWait, if set, is told how long each write waited from asking
	// to write until its transaction began: its turn in this process, its
	// process's turn among those writing the file, SQLite's lock. It runs
	// on the writer's goroutine, so it must be quick.
	OnWriteWait func(time.Duration)
}

// Pragma is one PRAGMA run on every new connection: PRAGMA Name = Value.
type Pragma struct{ Name, Value string }

// DefaultPragmas are run on every connection, in this order, unless
// Options.Pragmas or the DSN replace them.
func DefaultPragmas() []Pragma {
	return []Pragma{
		// Readers never block the writer and the writer never blocks
		// readers. First, so the rest apply to a WAL database.
		{"journal_mode", "WAL"},
		// In WAL mode, NORMAL syncs only at checkpoints: a commit survives
		// the process crashing; a power loss may drop the last commits but
		// never corrupts the file. Set FULL to lose nothing acknowledged.
		{"synchronous", "NORMAL"},
		// SQLite leaves foreign keys off on every new connection unless
		// asked; without this, ON DELETE CASCADE silently does nothing.
		{"foreign_keys", "ON"},
		// When the WAL starts over, cut it back to 256 MiB, so one burst
		// of writes does not leave a huge file behind. Under a steady
		// load the package's checkpointer starts it over at ~157 MiB (see
		// checkpointer.go), so the file is reused, not cut and grown.
		{"journal_size_limit", "268435456"},
		// No memory map of SQLite's own (its default). With one, a
		// connection whose read transaction starts after another
		// connection committed unmaps the file and maps it again; on a
		// server where nearly every request commits, the CPU went to munmap
		// and page faults. The package's VFS can map the file instead, once
		// (see Options.MemoryMap).
		{"mmap_size", "0"},
		// A 20 MB page cache per connection instead of 2 MB (negative: KiB).
		{"cache_size", "-20000"},
		// Sorts and temporary b-trees in memory, not in temporary files.
		{"temp_store", "MEMORY"},
	}
}

// A pragma is checked against these before it is run, so neither Options
// nor a DSN can smuggle SQL into every connection.
var (
	pragmaNameRe  = regexp.MustCompile(`^[a-z_]+$`)
	pragmaValueRe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	pragmaParamRe = regexp.MustCompile(`^([a-z_]+)\(([A-Za-z0-9_-]*)\)$`)
)

// mergePragmas returns base with each override replacing the pragma of the
// same name, or appended if base has none.
func mergePragmas(base []Pragma, overrides ...[]Pragma) []Pragma {
	out := append([]Pragma{}, base...)
	for _, list := range overrides {
	next:
		for _, o := range list {
			for i := range out {
				if out[i].Name == o.Name {
					out[i] = o
					continue next
				}
			}
			out = append(out, o)
		}
	}
	return out
}

// checkPragmas reports the first pragma that is not a plain name and value.
func checkPragmas(ps []Pragma) error {
	for _, p := range ps {
		if !pragmaNameRe.MatchString(p.Name) || !pragmaValueRe.MatchString(p.Value) {
			return fmt.Errorf("sqlitedb: bad pragma %s = %q: want a lower-case name and a plain value", p.Name, p.Value)
		}
	}
	return nil
}

// dsn is a parsed data source name.
type dsn struct {
	path    string
	params  url.Values // for the driver
	pragmas []Pragma   // _pragma=name(value)
	// readOnly: mode=ro or immutable=1 (see Open).
	readOnly bool
	// pollWriters: _writers=poll, no queue across processes (see Open).
	pollWriters bool
}

// parseDSN splits a path or file: URI into the file path, the parameters
// for the driver, and the _pragma=name(value) parameters.
//
// A plain path is the file's name, every character as it is ('#' and '%'
// included), up to a '?' that starts its parameters. A file: URI's path is
// read as SQLite reads it: it ends at '?' or '#', and %xx escapes stand for
// their byte (file:a%23b.db is the file a#b.db); an authority, if any,
// must be empty or localhost (file:///data/app.db).
func parseDSN(s string) (dsn, error) {
	if s == "" {
		return dsn{}, errors.New("sqlitedb: empty database path")
	}
	var path, query string
	if rest, ok := strings.CutPrefix(s, "file:"); ok {
		rest, _, _ = strings.Cut(rest, "#")
		rest, query, _ = strings.Cut(rest, "?")
		if after, ok := strings.CutPrefix(rest, "//"); ok {
			host, p, _ := strings.Cut(after, "/")
			if host != "" && host != "localhost" {
				return dsn{}, fmt.Errorf("sqlitedb: %q names the host %q; a file: URI's authority must be empty or localhost", s, host)
			}
			rest = "/" + p
		}
		var err error
		if path, err = url.PathUnescape(rest); err != nil {
			return dsn{}, fmt.Errorf("sqlitedb: bad escape in the path of %q: %w", s, err)
		}
		if strings.ContainsRune(path, 0) {
			return dsn{}, fmt.Errorf("sqlitedb: the path of %q holds a NUL byte", s)
		}
	} else {
		if scheme, _, ok := strings.Cut(s, "://"); ok && !strings.ContainsAny(scheme, "/?") {
			return dsn{}, fmt.Errorf("sqlitedb: %q is a %s URL, not a SQLite file path or file: URI", s, scheme)
		}
		path, query, _ = strings.Cut(s, "?")
	}
	if path == "" || path == ":memory:" || strings.Contains(query, "mode=memory") {
		// Each pooled connection would get its own empty database.
		return dsn{}, errors.New("sqlitedb: in-memory databases are not supported; give a file path")
	}
	params, err := url.ParseQuery(query)
	if err != nil {
		return dsn{}, fmt.Errorf("sqlitedb: bad parameters in %q: %w", s, err)
	}
	d := dsn{path: path, params: params}
	for _, p := range params["_pragma"] {
		m := pragmaParamRe.FindStringSubmatch(p)
		if m == nil {
			return dsn{}, fmt.Errorf("sqlitedb: bad _pragma %q: want name(value), e.g. _pragma=cache_size(-16000)", p)
		}
		d.pragmas = append(d.pragmas, Pragma{m[1], m[2]})
	}
	params.Del("_pragma")
	if params.Has("_txlock") {
		return dsn{}, errors.New("sqlitedb: parameter _txlock is set by the package: every write begins with BEGIN IMMEDIATE")
	}
	for _, reserved := range []string{"_busy_timeout", "_timeout"} {
		if params.Has(reserved) {
			return dsn{}, fmt.Errorf("sqlitedb: parameter %s is set by the package (waits are bounded by Options.Timeout); for SQLite's busy timeout use _pragma=busy_timeout(ms)", reserved)
		}
	}
	switch mode := params.Get("mode"); mode {
	case "", "rwc":
	case "ro":
		d.readOnly = true
	default:
		return dsn{}, fmt.Errorf("sqlitedb: mode=%s: the package opens a database read-write, creating it if needed (mode=rwc), or read-only with mode=ro", mode)
	}
	if params.Get("immutable") == "1" {
		d.readOnly = true
	}
	switch w := params.Get("_writers"); w {
	case "", "queue":
	case "poll":
		d.pollWriters = true
	default:
		return dsn{}, fmt.Errorf("sqlitedb: _writers=%s: want queue (the writers of all processes take turns in arrival order, the default) or poll", w)
	}
	params.Del("_writers")
	return d, nil
}

// withDefaults returns o with its zero values replaced by the defaults.
func (o Options) withDefaults() Options {
	if o.ReadConns <= 0 {
		o.ReadConns = max(4, 2*runtime.GOMAXPROCS(0))
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.StatementCache == 0 {
		o.StatementCache = 64
	}
	return o
}

// FileURI is the file: URI of the database file at path, with params
// (nil: none): every character of path that a URI would read as its
// syntax ('?', '#', '%') is escaped, so that the URI names that file and
// no other. Open reads it back as path and params.
func FileURI(path string, params url.Values) string {
	if strings.HasPrefix(path, "//") {
		path = filepath.Clean(path) // not an authority
	}
	u := "file:" + (&url.URL{Path: filepath.ToSlash(path)}).EscapedPath()
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	return u
}

// DSNPath is the path of the database file a DSN names (see Open): a plain
// path without its parameters, or a file: URI's path unescaped.
func DSNPath(dsnString string) (string, error) {
	d, err := parseDSN(dsnString)
	return d.path, err
}
