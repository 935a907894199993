package sqlitedb_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mattn/go-sqlite3"

	"github.com/loremnews/loremnews/sqlitedb"
)

// A SQL function written in Go, on every connection: ConnectHook runs on
// each one the package opens, so reads, writes and Setup's migrations can
// all call it.
func ExampleOptions_connectHook() {
	dir, err := os.MkdirTemp("", "sqlitedb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	slug := func(s string) string { return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), " ", "-") }
	db, err := sqlitedb.Open(ctx, filepath.Join(dir, "app.db"), &sqlitedb.Options{
		ConnectHook: func(c *sqlite3.SQLiteConn) error {
			return c.RegisterFunc("slug", slug, true) // pure: the same text, the same slug
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	var s string
	err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		return rx.QueryRow(ctx, `SELECT slug(?)`, " Hello SQLite World ").Scan(&s)
	})
	fmt.Println(s, err)
	// Output: hello-sqlite-world <nil>
}

// The hook runs on every connection, read and write, before Setup, and
// a hook that fails fails Open, saying so.
func TestConnectHook(t *testing.T) {
	ctx := context.Background()
	var (
		mu    sync.Mutex
		conns = map[*sqlite3.SQLiteConn]bool{}
	)
	hook := func(c *sqlite3.SQLiteConn) error {
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		return c.RegisterFunc("twice", func(n int64) int64 { return 2 * n }, true)
	}
	db, err := sqlitedb.Open(ctx, filepath.Join(t.TempDir(), "h.db"), &sqlitedb.Options{ReadConns: 3, ConnectHook: hook,
		Setup: func(ctx context.Context, conn *sql.Conn) error {
			_, err := conn.ExecContext(ctx, `CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (twice(21))`)
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(db.Close))
	if err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO t VALUES (twice(4))`)
		return err
	}); err != nil {
		t.Fatalf("a write calling the hook's function: %v", err)
	}
	// Three reads at once, each on a connection of its own.
	var wg sync.WaitGroup
	inside := make(chan struct{})
	letGo := sync.OnceFunc(func() { close(inside) })
	defer letGo() // before Close, if the test fails first
	var arrived sync.WaitGroup
	arrived.Add(3)
	for range 3 {
		wg.Go(func() {
			err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
				var sum int64
				err := rx.QueryRow(ctx, `SELECT sum(twice(n)) FROM t`).Scan(&sum)
				if err == nil && sum != 100 {
					err = fmt.Errorf("sum(twice(n)) = %d, want 100", sum)
				}
				arrived.Done()
				<-inside
				return err
			})
			if err != nil {
				t.Errorf("a read calling the hook's function: %v", err)
			}
		})
	}
	waitGroup(t, &arrived, "three reads inside the hook's function at once")
	letGo()
	waitGroup(t, &wg, "the three reads")
	mu.Lock()
	n := len(conns)
	mu.Unlock()
	if n < 4 { // the write connection and three read connections at least
		t.Errorf("the hook ran on %d connections, want at least 4", n)
	}

	failing := errors.New("no functions today")
	_, err = sqlitedb.Open(ctx, filepath.Join(t.TempDir(), "f.db"), &sqlitedb.Options{ConnectHook: func(*sqlite3.SQLiteConn) error { return failing }})
	if err == nil || !strings.Contains(err.Error(), "ConnectHook: no functions today") {
		t.Fatalf("Open with a failing hook: %v, want it to fail naming the hook", err)
	}
}

// A ConnectHook that sets a commit or rollback hook fails Open, naming
// the hook and why: SQLite keeps one of each per connection, and the
// package's would replace it without a word (the hook would never run).
func TestConnectHookCommitHookRefused(t *testing.T) {
	cases := map[string]func(c *sqlite3.SQLiteConn){
		"commit hook":   func(c *sqlite3.SQLiteConn) { c.RegisterCommitHook(func() int { return 0 }) },
		"rollback hook": func(c *sqlite3.SQLiteConn) { c.RegisterRollbackHook(func() {}) },
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			db, err := sqlitedb.Open(context.Background(), filepath.Join(t.TempDir(), "h.db"), &sqlitedb.Options{
				ConnectHook: func(c *sqlite3.SQLiteConn) error { set(c); return nil }})
			if err == nil {
				db.Close()
				t.Fatalf("Open with a ConnectHook that sets a %s succeeded; the hook would never run", name)
			}
			if !strings.Contains(err.Error(), "ConnectHook set a "+name) {
				t.Fatalf("Open with a ConnectHook that sets a %s: %v; want an error naming it", name, err)
			}
		})
	}
}
