package sqlitedb_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/loremnews/loremnews/sqlitedb"
)

// endingStatements are statements that would begin, commit or end the
// transaction Read or Write runs, spelled as a program might, and the
// keyword the refusal names.
var endingStatements = []struct{ query, keyword string }{
	{`BEGIN`, "BEGIN"},
	{`COMMIT`, "COMMIT"},
	{`END`, "END"},
	{" -- comment\n commit", "COMMIT"},
	{`/* x */ ROLLBACK`, "ROLLBACK"},
	{`rollback transaction`, "ROLLBACK"},
}

// refused fails the test unless err is the handles' refusal of a statement
// that ends the transaction: an error naming the keyword, from the
// package, not from SQLite (which would mean the statement ran).
func refused(t *testing.T, what string, err error, keyword string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: ran, want it refused", what)
		return
	}
	if code := sqlitedb.ErrorCode(err); code != 0 || !strings.Contains(err.Error(), keyword) {
		t.Errorf("%s: %v (SQLite code %d); want the handle's refusal naming %s", what, err, code, keyword)
	}
}

// A statement that would begin, commit or end the write's transaction is
// refused, by Exec, Query and QueryRow alike, and the transaction goes on
// as if it had not been tried: the write's other statements commit
// together when fn returns nil, and none does when fn returns the
// refusal.
func TestWriteHandleRefusesEndingTheTransaction(t *testing.T) {
	for _, m := range writerModes {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openDB(t, &sqlitedb.Options{})
			createT(t, db)
			for i, st := range endingStatements {
				committed, rolledBack := 2*i, 2*i+1
				// fn goes on past the refusal and returns nil.
				err := m.write(db, ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
					if err := insert(committed)(ctx, tx); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, st.query)
					refused(t, fmt.Sprintf("tx.Exec(%q)", st.query), err, st.keyword)
					_, err = tx.Query(ctx, st.query)
					refused(t, fmt.Sprintf("tx.Query(%q)", st.query), err, st.keyword)
					var n int64
					err = tx.QueryRow(ctx, st.query).Scan(&n)
					refused(t, fmt.Sprintf("tx.QueryRow(%q)", st.query), err, st.keyword)
					return insert(committed)(ctx, tx)
				})
				if err != nil {
					t.Fatalf("%q: a write that went on past the refusal: %v, want nil (committed)", st.query, err)
				}
				// fn returns the refusal: nothing of it is kept.
				var refusal error
				err = m.write(db, ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
					if err := insert(rolledBack)(ctx, tx); err != nil {
						return err
					}
					_, refusal = tx.Exec(ctx, st.query)
					return refusal
				})
				if refusal == nil || !errors.Is(err, refusal) {
					t.Fatalf("%q: a write that returned the refusal (%v) returned %v, want the refusal", st.query, refusal, err)
				}
				got := queryInts(t, db, `SELECT n FROM t WHERE n IN (?, ?) ORDER BY seq`, committed, rolledBack)
				if want := []int64{int64(committed), int64(committed)}; !slices.Equal(got, want) {
					t.Fatalf("%q: rows %v, want %v: the write that went on committed both its rows, the one that failed none", st.query, got, want)
				}
			}
		})
	}
}

// A read's handle refuses them too, and the read goes on in its snapshot.
func TestReadHandleRefusesEndingTheTransaction(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, nil)
	createT(t, db)
	mustExec(t, db, `INSERT INTO t (n) VALUES (1)`)
	err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		var before int64
		if err := rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&before); err != nil {
			return err
		}
		mustExec(t, db, `INSERT INTO t (n) VALUES (2)`) // not in this read's snapshot
		for _, st := range endingStatements {
			_, err := rx.Query(ctx, st.query)
			refused(t, fmt.Sprintf("rx.Query(%q)", st.query), err, st.keyword)
			var n int64
			err = rx.QueryRow(ctx, st.query).Scan(&n)
			refused(t, fmt.Sprintf("rx.QueryRow(%q)", st.query), err, st.keyword)
		}
		// Still the same read transaction: the same snapshot.
		var after int64
		if err := rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&after); err != nil {
			return err
		}
		if before != 1 || after != 1 {
			t.Errorf("the read saw %d rows, then %d after the refusals; want 1 both times, one snapshot", before, after)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Savepoints are the write's own: SAVEPOINT, ROLLBACK TO (with or without
// TRANSACTION and SAVEPOINT), RELEASE, nested, all run, and undo what
// they say.
func TestWriteHandleRunsSavepoints(t *testing.T) {
	for _, m := range writerModes {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openDB(t, &sqlitedb.Options{})
			createT(t, db)
			err := m.write(db, ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
				for _, q := range []string{
					`SAVEPOINT a`,
					`INSERT INTO t (n) VALUES (1)`,
					`ROLLBACK TO a`, // undoes 1; a stays open
					`INSERT INTO t (n) VALUES (2)`,
					`ROLLBACK TRANSACTION TO a`, // undoes 2
					`INSERT INTO t (n) VALUES (3)`,
					`savepoint b`,
					`INSERT INTO t (n) VALUES (4)`,
					`rollback transaction to savepoint b`, // undoes 4
					`RELEASE b`,
					`RELEASE a`, // keeps 3
					`INSERT INTO t (n) VALUES (5)`,
					`SAVEPOINT c`,
					`INSERT INTO t (n) VALUES (6)`,
					`RELEASE SAVEPOINT c`, // keeps 6
				} {
					if _, err := tx.Exec(ctx, q); err != nil {
						return fmt.Errorf("%s: %w", q, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := queryInts(t, db, `SELECT n FROM t ORDER BY seq`); !slices.Equal(got, []int64{3, 5, 6}) {
				t.Fatalf("rows %v, want [3 5 6]", got)
			}
		})
	}
}

// ignoringPanic runs f and answers the error it returned, or an error
// saying it panicked.
func ignoringPanic(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panicked: %v", v)
		}
	}()
	return f()
}

// A handle kept past its function's return fails with an error, not a
// panic, for each of its methods, and touches no later transaction on its
// connection.
func TestHandleUsedAfterItsFunctionReturned(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, &sqlitedb.Options{ReadConns: 1})
	createT(t, db)
	var rx *sqlitedb.Rx
	var tx, coalesced *sqlitedb.Tx
	if err := db.Read(ctx, func(_ context.Context, r *sqlitedb.Rx) error { rx = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Write(ctx, func(_ context.Context, w *sqlitedb.Tx) error { tx = w; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Coalesce(ctx, func(_ context.Context, w *sqlitedb.Tx) error { coalesced = w; return nil }); err != nil {
		t.Fatal(err)
	}

	// Meanwhile the connections serve other transactions: a write holds
	// the write connection, a read the only read connection.
	release := holdWriter(t, db, nil)
	releaseRead := holdReads(t, db, 1)
	for name, h := range map[string]*sqlitedb.Rx{"read": rx, "write": &tx.Rx, "coalesced": &coalesced.Rx} {
		uses := map[string]func() error{
			"Query": func() error { _, err := h.Query(ctx, `SELECT count(*) FROM t`); return err },
			"QueryRow": func() error {
				var n int64
				return h.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
			},
		}
		if name != "read" {
			w := tx
			if name == "coalesced" {
				w = coalesced
			}
			uses["Exec"] = func() error { _, err := w.Exec(ctx, `INSERT INTO t (n) VALUES (99)`); return err }
		}
		for method, use := range uses {
			err := ignoringPanic(use)
			if err == nil || !strings.Contains(err.Error(), "after the function") {
				t.Errorf("%s handle's %s after its function returned: %v, want an error saying so", name, method, err)
			}
		}
	}
	releaseRead()
	release()
	if got := queryInt(t, db, `SELECT count(*) FROM t WHERE n = 99`); got != 0 {
		t.Fatalf("a handle used after its function returned inserted %d rows", got)
	}
}

// Conn, the escape hatch, runs database/sql's statements inside the
// transaction the handle is in: a read's sees its snapshot, a write's sees
// and changes what the write did, and rolls back with it.
func TestConnIsInsideTheTransaction(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, nil)
	createT(t, db)
	mustExec(t, db, `INSERT INTO t (n) VALUES (1)`)

	err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		var before, after int64
		if err := rx.Conn().QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&before); err != nil {
			return err
		}
		mustExec(t, db, `INSERT INTO t (n) VALUES (2)`)
		if err := rx.Conn().QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&after); err != nil {
			return err
		}
		if before != 1 || after != 1 {
			t.Errorf("through Conn, the read saw %d rows, then %d; want 1 both times", before, after)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	errUndo := errors.New("undo")
	year := int16(2024)
	err = db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO t (n) VALUES (3)`); err != nil {
			return err
		}
		// An int16, which the handle does not bind and database/sql does.
		if _, err := tx.Exec(ctx, `INSERT INTO t (n) VALUES (?)`, year); err == nil || !strings.Contains(err.Error(), "int16") {
			t.Errorf("the handle bound an int16 (%v); want it refused", err)
		}
		if _, err := tx.Conn().ExecContext(ctx, `INSERT INTO t (n) VALUES (?)`, year); err != nil {
			return err
		}
		var viaConn, viaHandle int64
		if err := tx.Conn().QueryRowContext(ctx, `SELECT count(*) FROM t WHERE n IN (3, 2024)`).Scan(&viaConn); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM t WHERE n IN (3, 2024)`).Scan(&viaHandle); err != nil {
			return err
		}
		if viaConn != 2 || viaHandle != 2 {
			t.Errorf("inside the write, Conn sees %d and the handle %d of the write's 2 rows", viaConn, viaHandle)
		}
		return errUndo
	})
	if !errors.Is(err, errUndo) {
		t.Fatalf("write: %v, want its function's error", err)
	}
	if got := queryInts(t, db, `SELECT n FROM t ORDER BY seq`); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("rows %v, want [1 2]: what the handle and Conn wrote rolled back together", got)
	}
}

// A read's handle cannot write: its connection is query_only, and SQLite
// refuses the statement (SQLITE_READONLY).
func TestReadHandleCannotWrite(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, nil)
	createT(t, db)
	err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		for _, q := range []string{`INSERT INTO t (n) VALUES (1)`, `INSERT INTO t (n) VALUES (2) RETURNING seq`, `CREATE TABLE u (x)`, `DELETE FROM t`} {
			_, err := rx.Query(ctx, q)
			if code := sqlitedb.ErrorCode(err); code&0xff != 8 { // SQLITE_READONLY
				t.Errorf("%s on a read's handle: %v (SQLite code %d), want SQLITE_READONLY", q, err, code)
			}
		}
		var seq int64
		if err := rx.QueryRow(ctx, `INSERT INTO t (n) VALUES (3) RETURNING seq`).Scan(&seq); sqlitedb.ErrorCode(err)&0xff != 8 {
			t.Errorf("QueryRow of an INSERT on a read's handle: %v, want SQLITE_READONLY", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, db, `SELECT count(*) FROM t`); got != 0 {
		t.Fatalf("%d rows written through a read's handle", got)
	}
	if got := queryInt(t, db, `SELECT count(*) FROM sqlite_schema WHERE name = 'u'`); got != 0 {
		t.Fatal("a read's handle created a table")
	}
}

// countRows is a helper that only reads: it takes an *Rx.
func countRows(ctx context.Context, rx *sqlitedb.Rx) (int64, error) {
	var n int64
	err := rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
	return n, err
}

// &tx.Rx serves a function that only reads, inside the write: it sees the
// write's own rows before they are committed, which a read beside the
// write does not.
func TestWriteHandleServesAReadOnlyHelper(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, nil)
	createT(t, db)
	err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		for i := range 3 {
			res, err := tx.Exec(ctx, `INSERT INTO t (n) VALUES (?)`, i)
			if err != nil {
				return err
			}
			if id, _ := res.LastInsertId(); id != int64(i+1) {
				t.Errorf("insert %d: LastInsertId %d, want %d", i, id, i+1)
			}
		}
		n, err := countRows(ctx, &tx.Rx)
		if err != nil || n != 3 {
			t.Errorf("the helper, given &tx.Rx, counts %d rows (%v); want the write's 3", n, err)
		}
		var outside int64
		if err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) (err error) {
			outside, err = countRows(ctx, rx)
			return err
		}); err != nil || outside != 0 {
			t.Errorf("a read beside the write counts %d rows (%v); want 0, none committed yet", outside, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := queryInt(t, db, `SELECT count(*) FROM t`); got != 3 {
		t.Fatalf("%d rows after the write, want 3", got)
	}
}
