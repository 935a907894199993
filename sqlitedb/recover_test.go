package sqlitedb_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// recovered runs f and answers what it panicked with (nil if it returned).
func recovered(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// A panic in Read's fn reaches Read's caller, and the connection it ran on
// goes back to the pool outside any transaction: every later read works,
// and no read transaction is left pinning the WAL (a checkpoint then
// empties it).
func TestPanicInReadLeavesConnectionsUsable(t *testing.T) {
	db, path := openDB(t, &sqlitedb.Options{ReadConns: 2})
	createT(t, db)
	for i := range 10 {
		v := recovered(func() {
			db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
				var n int
				if err := rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil {
					return err
				}
				panic("read panic")
			})
		})
		if v != "read panic" {
			t.Fatalf("panic %d: Read's caller recovered %v, want the panic of fn", i, v)
		}
	}
	for i := range 20 {
		mustExec(t, db, `INSERT INTO t (n) VALUES (?)`, i)
		if n := queryInt(t, db, `SELECT count(*) FROM t`); n != int64(i+1) {
			t.Fatalf("after the panics, a read sees %d rows, want %d", n, i+1)
		}
	}
	other, err := sql.Open("sqlite3", "file:"+path+"?vfs=unix")
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(other.Close))
	var busy, frames, done int
	if err := other.QueryRow(`PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil || busy != 0 {
		t.Fatalf("PRAGMA wal_checkpoint(TRUNCATE) from another connection: busy %d, %v: a read transaction was left open", busy, err)
	}
	if n := walSize(t, path); n != 0 {
		t.Errorf("the WAL holds %d bytes after a TRUNCATE checkpoint: a read transaction was left open", n)
	}
}

// A panic in a write's fn reaches Write's (or Coalesce's) caller as a
// *sqlitedb.PanicError instead of ending the program on the writer
// goroutine; the write is rolled back, the writer goes on, and the writes
// beside it in a batch are unaffected (group commit) or told why they
// failed (Coalesce).
func TestPanicInWriteReachesTheCaller(t *testing.T) {
	for _, m := range writerModes {
		t.Run(m.name, func(t *testing.T) {
			db, _ := openDB(t, &sqlitedb.Options{Timeout: 5 * time.Second})
			createT(t, db)
			for i := range 5 {
				v := recovered(func() {
					db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
						if err := insert(-1)(ctx, tx); err != nil {
							return err
						}
						panic(errors.New("write panic"))
					})
				})
				err, _ := v.(error)
				if err == nil || err.Error() != "write panic" && !strings.Contains(err.Error(), "write panic") {
					t.Fatalf("panic %d: Write's caller recovered %v, want the write's panic", i, v)
				}
				var pe *sqlitedb.PanicError
				if !errors.As(err, &pe) || !strings.Contains(string(pe.Stack), "recover_test.go") {
					t.Fatalf("recovered %T, want a *PanicError with the stack of the panic", v)
				}
				if err := db.Write(context.Background(), insert(i)); err != nil {
					t.Fatalf("the write after a panic: %v", err)
				}
			}
			if n := queryInt(t, db, `SELECT count(*) FROM t WHERE n < 0`); n != 0 {
				t.Errorf("%d rows of the panicking writes were committed", n)
			}
			if n := queryInt(t, db, `SELECT count(*) FROM t`); n != 5 {
				t.Errorf("%d rows, want the 5 written after the panics", n)
			}

			// Coalesced: the panic is its caller's; the others in its
			// transaction fail with an error saying so.
			errc := make(chan error, 3)
			panics := make(chan any, 1)
			release := holdWriter(t, db, nil)
			for i := range 3 {
				go func() {
					if i == 1 {
						panics <- recovered(func() {
							db.Coalesce(context.Background(), func(context.Context, *sqlitedb.Tx) error { panic("coalesced panic") })
						})
						return
					}
					errc <- db.Coalesce(context.Background(), insert(100+i))
				}()
			}
			time.Sleep(50 * time.Millisecond) // let them queue behind the held writer
			release()
			v := <-panics
			if v == nil || !strings.Contains(errorText(v), "coalesced panic") {
				t.Fatalf("Coalesce's caller recovered %v, want its fn's panic", v)
			}
			for range 2 {
				if err := receive(t, errc, "a coalesced write"); err != nil && !strings.Contains(err.Error(), "panicked") {
					t.Errorf("a coalesced write beside the panic: %v, want nil or an error naming the panic", err)
				}
			}
			if err := db.Write(context.Background(), insert(7)); err != nil {
				t.Fatalf("the write after the coalesced panic: %v", err)
			}
		})
	}
}

func errorText(v any) string {
	if err, ok := v.(error); ok {
		return err.Error()
	}
	s, _ := v.(string)
	return s
}

// runaway is a query that runs for minutes unless interrupted.
const runaway = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c`

// A ctx that ends while a statement runs interrupts it: Read, Query, Exec
// and Write return an error wrapping ctx.Err() soon after the deadline,
// not when the statement would have ended, and the connection is usable
// afterwards. Read's ctx interrupts the handle's statements and those of
// the escape hatch (database/sql) alike.
func TestContextInterruptsStatements(t *testing.T) {
	db, _ := openDB(t, &sqlitedb.Options{ReadConns: 1, Timeout: 10 * time.Second})
	createT(t, db)
	deadline := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 100*time.Millisecond)
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s with a 100 ms deadline: %v, want an error wrapping context.DeadlineExceeded", what, err)
		}
	}
	for _, c := range []struct {
		name  string
		query func(ctx context.Context, rx *sqlitedb.Rx) error
	}{
		{"Query", func(ctx context.Context, rx *sqlitedb.Rx) error {
			_, err := rx.Query(ctx, runaway)
			return err
		}},
		{"database/sql", func(ctx context.Context, rx *sqlitedb.Rx) error {
			var n int
			return rx.Conn().QueryRowContext(ctx, runaway).Scan(&n)
		}},
	} {
		ctx, cancel := deadline()
		check("Read running "+c.name, db.Read(ctx, c.query))
		cancel()
	}
	// The handles' Query and Exec watch their own ctx too. (An
	// interrupted SELECT leaves the write's transaction as it was.)
	err := db.Read(context.Background(), func(_ context.Context, rx *sqlitedb.Rx) error {
		ctx, cancel := deadline()
		defer cancel()
		_, err := rx.Query(ctx, runaway)
		check("Query", err)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Write(context.Background(), func(_ context.Context, tx *sqlitedb.Tx) error {
		ctx, cancel := deadline()
		defer cancel()
		_, err := tx.Exec(ctx, runaway)
		check("Exec", err)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := deadline()
	err = db.Write(ctx, func(_ context.Context, tx *sqlitedb.Tx) error {
		if err := insert(-1)(context.Background(), tx); err != nil {
			return err
		}
		_, err := tx.Exec(context.Background(), `INSERT INTO t (n) `+strings.Replace(runaway, "count(*)", "x", 1))
		return err
	})
	cancel()
	check("Write", err)
	// The connections are usable, and nothing of the interrupted write was kept.
	mustExec(t, db, `INSERT INTO t (n) VALUES (1)`)
	if n := queryInt(t, db, `SELECT count(*) FROM t`); n != 1 {
		t.Fatalf("%d rows after the interrupted write and one more, want 1", n)
	}
}

// Open reads back the pragmas whose value SQLite reports, and refuses a
// database on which one did not take: SQLite ignores a journal mode it
// does not know, so a typo would run the database in its rollback journal.
func TestOpenRefusesAPragmaThatDidNotTake(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, value string }{{"journal_mode", "WALL"}, {"synchronous", "FULLY"}, {"temp_store", "RAM"}} {
		path := filepath.Join(dir, c.name+".db")
		db, err := sqlitedb.Open(context.Background(), path, &sqlitedb.Options{Pragmas: []sqlitedb.Pragma{{Name: c.name, Value: c.value}}})
		if err == nil {
			db.Close()
			t.Errorf("%s = %s: Open succeeded, want an error naming the pragma", c.name, c.value)
			continue
		}
		if !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s = %s: %v, want an error naming the pragma", c.name, c.value, err)
		}
		os.Remove(path)
	}
	// What SQLite takes is accepted, in its words or its numbers.
	db, err := sqlitedb.Open(context.Background(), filepath.Join(dir, "ok.db"), &sqlitedb.Options{Pragmas: []sqlitedb.Pragma{
		{Name: "synchronous", Value: "FULL"}, {Name: "temp_store", Value: "2"}, {Name: "cache_size", Value: "-4000"}}})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
}
