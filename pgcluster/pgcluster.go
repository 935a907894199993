// Package pgcluster starts and stops a throw-away PostgreSQL cluster from
// the server binaries Debian installs (package postgresql), listening only
// on a Unix socket in its own temporary directory: no port to collide on,
// nothing reachable from the network. Tests and `bench` use it when no
// PostgreSQL URL is given.
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Settings are the server settings a cluster starts with, written to its
// postgresql.conf. They are shown in benchmark reports.
type Settings [][2]string

// Tuned is PostgreSQL tuned reasonably for this kind of machine and
// workload (a few cores, plenty of memory, a small hot data set, many short
// transactions), keeping every commit durable like the default.
var Tuned = Settings{
	{"shared_buffers", "1GB"},         // the whole data set and its indexes stay cached
	{"effective_cache_size", "8GB"},   // the OS page cache the planner may count on
	{"work_mem", "16MB"},              // sorts of a listing never spill
	{"maintenance_work_mem", "256MB"}, // faster index builds on bulk load
	{"wal_buffers", "16MB"},
	{"max_wal_size", "4GB"}, // checkpoints by time, not by WAL volume, under load
	{"checkpoint_timeout", "15min"},
	{"checkpoint_completion_target", "0.9"},
	{"synchronous_commit", "on"}, // each commit is flushed before its response: as durable as the default
	{"random_page_cost", "1.1"},  // SSD
	{"jit", "off"},               // JIT only slows down short OLTP queries
	{"max_connections", "200"},
}

// Fast is for tests: a throw-away cluster need not survive a power cut, so
// it skips fsync (much faster on slow disks), and several test binaries
// may each run one at once, so it keeps PostgreSQL's small default memory.
// Later lines of postgresql.conf win, so these override Tuned's.
var Fast = append(append(Settings{}, Tuned...),
	[2]string{"fsync", "off"}, [2]string{"synchronous_commit", "off"}, [2]string{"full_page_writes", "off"},
	[2]string{"shared_buffers", "128MB"}, [2]string{"max_connections", "100"})

// Cluster is a running throw-away cluster.
type Cluster struct {
	Dir      string   // holds data/, the socket and the log
	URL      string   // connection URL of the "postgres" database as superuser "postgres"
	Settings Settings // what it was started with
	bin      string
	asUser   []string // command prefix to run as the postgres user when we are root
}

// FindBin returns the directory with initdb, pg_ctl and postgres: $LOREM_PG_BIN,
// else the newest /usr/lib/postgresql/*/bin (Debian's layout), else the
// directory of initdb on PATH.
func FindBin() (string, error) {
	if dir := os.Getenv("LOREM_PG_BIN"); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pgcluster: PostgreSQL's server programs (initdb, pg_ctl) not found; install Debian's postgresql package (scripts/install-test-deps does) or set LOREM_PG_BIN")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start creates a cluster in a new temporary directory and starts it. The
// caller must Stop it.
func Start(ctx context.Context, settings Settings) (*Cluster, error) {
	bin, err := FindBin()
	if err != nil {
		return nil, err
	}
	// Under /tmp rather than $TMPDIR: the server's user must be able to
	// reach the directory, and its socket path must stay under the
	// 107-byte limit of Unix sockets.
	base := ""
	if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "loremnews-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, bin: bin, Settings: settings}
	// PostgreSQL refuses to run as root; run it as Debian's postgres user.
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, errors.New("pgcluster: running as root and there is no postgres user to run the server as (Debian's postgresql package creates it)")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		c.asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	if err := c.start(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	argv := append(append(append([]string{}, c.asUser...), filepath.Join(c.bin, name)), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgcluster: %s: %w\n%s", name, err, strings.TrimSpace(out.String()))
	}
	return nil
}

func (c *Cluster) start(ctx context.Context) error {
	data := filepath.Join(c.Dir, "data")
	if err := c.run(ctx, "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"); err != nil {
		return err
	}
	var conf strings.Builder
	conf.WriteString("\n# Lorem News throw-away cluster: Unix socket only.\nlisten_addresses = ''\n")
	fmt.Fprintf(&conf, "unix_socket_directories = '%s'\nport = 5432\n", c.Dir)
	for _, s := range c.Settings {
		fmt.Fprintf(&conf, "%s = '%s'\n", s[0], s[1])
	}
	f, err := os.OpenFile(filepath.Join(data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(conf.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := c.run(ctx, "pg_ctl", "-D", data, "-l", filepath.Join(c.Dir, "server.log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.Dir, "server.log"))
		return fmt.Errorf("%w\n%s", err, log)
	}
	c.URL = fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=5432", c.Dir)
	return nil
}

// Stop shuts the server down (fast: rolls back open transactions) and
// removes its directory. It is safe to call more than once.
func (c *Cluster) Stop() error {
	if c.Dir == "" {
		return nil
	}
	var err error
	if _, serr := os.Stat(filepath.Join(c.Dir, "data", "postmaster.pid")); serr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		err = c.run(ctx, "pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-m", "fast", "-w", "stop")
	}
	if rerr := os.RemoveAll(c.Dir); err == nil {
		err = rerr
	}
	c.Dir = ""
	return err
}

// DatabaseURL returns the URL of database name on the same server as base
// (a URL of the kind Cluster.URL is).
func DatabaseURL(base, name string) string {
	path, query, _ := strings.Cut(base, "?")
	i := strings.LastIndex(path, "/")
	if query != "" {
		query = "?" + query
	}
	return path[:i+1] + name + query
}
