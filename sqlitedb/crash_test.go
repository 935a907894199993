package sqlitedb_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// crashChildEnv names the environment variable that makes the test binary
// a writer to be killed: it holds the database's path.
const crashChildEnv = "SQLITEDB_CRASH_CHILD_DB"

// Acknowledged writes survive kill -9. A child process (this test binary
// again) writes rows through Write from a few goroutines and prints each
// row's id once Write has returned nil; the parent kills it with SIGKILL
// mid-stream, opens the file again, and finds it intact with every
// acknowledged row in it.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	if testing.Short() {
		t.Skip("starts and kills a process")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashKeepsAcknowledgedWrites$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	// Read acknowledgements until there are enough, then kill the child
	// while it is still writing.
	const enough = 2000
	var acked []int64
	lines := bufio.NewScanner(stdout)
	for len(acked) < enough && lines.Scan() {
		id, err := strconv.ParseInt(lines.Text(), 10, 64)
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("the child wrote %q, want a row id", lines.Text())
		}
		acked = append(acked, id)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9: %v", err)
	}
	// Acknowledgements the child printed before it died count too.
	for lines.Scan() {
		if id, err := strconv.ParseInt(lines.Text(), 10, 64); err == nil {
			acked = append(acked, id)
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, want killed by SIGKILL (%d rows acknowledged; the deadline is 30 s)", err, len(acked))
	}
	if len(acked) < enough {
		t.Fatalf("only %d rows acknowledged before the child ended", len(acked))
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("no WAL after kill -9 (%v): the child did not die mid-stream", err)
	}

	db, err := sqlitedb.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("open after kill -9: %v", err)
	}
	defer db.Close()
	var integrity string
	var ids []int64
	err = db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
		if err := rx.QueryRow(ctx, `PRAGMA integrity_check`).Scan(&integrity); err != nil {
			return err
		}
		rows, err := rx.Query(ctx, `SELECT id FROM t`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if integrity != "ok" {
		t.Fatalf("integrity check after kill -9: %s", integrity)
	}
	present := make(map[int64]bool, len(ids))
	for _, id := range ids {
		present[id] = true
	}
	for _, id := range acked {
		if !present[id] {
			t.Fatalf("row %d was acknowledged before kill -9 and is lost (%d acknowledged, %d in the file)", id, len(acked), len(ids))
		}
	}
	t.Logf("kill -9 after %d acknowledged writes: all in the file, which holds %d rows", len(acked), len(ids))
}

// crashChild is the process to be killed: it writes rows through Write
// from four goroutines and prints each one's id after Write returned nil,
// until it is killed, or for at most 30 s or 200,000 rows.
func crashChild(path string) {
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, path, &sqlitedb.Options{Setup: func(ctx context.Context, conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`)
		return err
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50000 {
				if time.Now().After(deadline) {
					return
				}
				var id int64
				err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
					return tx.QueryRow(ctx, `INSERT INTO t (body) VALUES (randomblob(500)) RETURNING id`).Scan(&id)
				})
				if err != nil {
					fmt.Fprintln(os.Stderr, "crash child: write:", err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Fprintln(out, id)
				out.Flush() // acknowledged: the parent may count on it now
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	os.Exit(3) // never killed: the parent reports it
}
