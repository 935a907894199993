package sqlitedb_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// openTestDB opens a database file in a temporary directory through the
// package's connector, with a table holding every kind of SQLite value.
func openTestDB(tb testing.TB) *sql.DB {
	tb.Helper()
	db := sqlitedb.OpenPoolForTest(filepath.Join(tb.TempDir(), "t.db"))
	tb.Cleanup(func() { closeWithin(tb, db.Close) })
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, i INTEGER, f REAL, s TEXT, b BLOB)`); err != nil {
		tb.Fatal(err)
	}
	rows := []struct {
		i any
		f any
		s any
		b any
	}{
		{int64(0), 0.0, "", []byte{}},
		{int64(math.MaxInt64), math.Inf(1), "héllo, wörld ✓", []byte{0, 1, 2, 255}},
		{int64(math.MinInt64), -1.5e-300, strings.Repeat("long text ", 4000), []byte(strings.Repeat("\x00\xff", 20000))},
		{nil, nil, nil, nil},
		{int64(-1), math.Pi, "a\x00b", []byte("x")},
		{int64(255), 2.0, "'quoted' \"twice\"", nil},
		{int64(256), math.Copysign(0, -1), "line\nbreak", []byte{}},
	}
	for _, r := range rows {
		if _, err := db.Exec(`INSERT INTO t (i, f, s, b) VALUES (?, ?, ?, ?)`, r.i, r.f, r.s, r.b); err != nil {
			tb.Fatal(err)
		}
	}
	return db
}

func conn(tb testing.TB, db *sql.DB) *sql.Conn {
	tb.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// viaDatabaseSQL reads query's rows as database/sql does, each value as
// the driver gives it.
func viaDatabaseSQL(t *testing.T, c *sql.Conn, query string, args ...any) [][]any {
	t.Helper()
	rows, err := c.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// viaHandle reads the same rows through a handle's Query.
func viaHandle(t *testing.T, c *sql.Conn, query string, args ...any) [][]any {
	t.Helper()
	rows, err := sqlitedb.RxForTest(c).Query(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, sqlitedb.ColumnsForTest(rows))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	return out
}

func TestQueryReadsWhatDatabaseSQLReads(t *testing.T) {
	db := openTestDB(t)
	c := conn(t, db)
	for _, tc := range []struct {
		name  string
		query string
		args  []any
	}{
		{"every kind of value", `SELECT id, i, f, s, b FROM t ORDER BY id`, nil},
		{"integer argument", `SELECT id, s FROM t WHERE id > ? ORDER BY id DESC`, []any{int64(2)}},
		{"int and bool arguments", `SELECT id FROM t WHERE id >= ? AND ?`, []any{3, true}},
		{"text argument", `SELECT id, b FROM t WHERE s = ?`, []any{"héllo, wörld ✓"}},
		{"empty text argument", `SELECT id FROM t WHERE s = ?`, []any{""}},
		{"blob argument", `SELECT id FROM t WHERE b = ?`, []any{[]byte{0, 1, 2, 255}}},
		{"NULL argument", `SELECT ? IS NULL, ?`, []any{nil, 1.25}},
		{"expressions", `SELECT count(*), sum(i IS NULL), max(length(s)), 'x' || id FROM t GROUP BY id % 2 ORDER BY 1`, nil},
		{"no rows", `SELECT id FROM t WHERE id < 0`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := viaDatabaseSQL(t, c, tc.query, tc.args...)
			// Twice: the second run reuses the statement the first prepared.
			for range 2 {
				got := viaHandle(t, c, tc.query, tc.args...)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("the handle read\n%v\ndatabase/sql read\n%v", abbreviate(got), abbreviate(want))
				}
			}
		})
	}
}

// abbreviate prints rows with long values cut short.
func abbreviate(rows [][]any) string {
	var b strings.Builder
	for _, r := range rows {
		for _, v := range r {
			s := fmt.Sprintf("%#v", v)
			if len(s) > 40 {
				s = s[:40] + "…"
			}
			b.WriteString(s + " ")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestScanIntoTypedDestinations(t *testing.T) {
	db := openTestDB(t)
	c := conn(t, db)
	rows, err := sqlitedb.RxForTest(c).Query(context.Background(), `SELECT i, i, i, i, f, s, b, s FROM t WHERE id = 5`)
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal("no row")
	}
	var (
		i64  int64
		i    int
		i32  int32
		b    bool
		f    float64
		s    string
		blob []byte
		ns   sql.NullString
	)
	if err := rows.Scan(&i64, &i, &i32, &b, &f, &s, &blob, &ns); err != nil {
		t.Fatal(err)
	}
	if i64 != -1 || i != -1 || i32 != -1 || !b || f != math.Pi || s != "a\x00b" || string(blob) != "x" || ns != (sql.NullString{String: "a\x00b", Valid: true}) {
		t.Fatalf("scanned %v %v %v %v %v %q %q %v", i64, i, i32, b, f, s, blob, ns)
	}
	if rows.Next() {
		t.Fatal("a second row")
	}
}

func TestQueryErrors(t *testing.T) {
	db := openTestDB(t)
	rx := sqlitedb.RxForTest(conn(t, db))
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		query string
		args  []any
		want  string
	}{
		{"syntax", `SELEC 1`, nil, `near "SELEC": syntax error`},
		{"no such table", `SELECT * FROM missing`, nil, "no such table: missing"},
		{"too few arguments", `SELECT ?`, nil, "takes 1 arguments, got 0"},
		{"too many arguments", `SELECT 1`, []any{1}, "takes 0 arguments, got 1"},
		{"unsupported argument", `SELECT ?`, []any{struct{}{}}, "cannot bind a struct {}"},
		{"empty", ` `, nil, "empty query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rx.Query(ctx, tc.query, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	t.Run("scan errors", func(t *testing.T) {
		rows, err := rx.Query(ctx, `SELECT i, s FROM t WHERE id = 4`) // NULLs
		if err != nil {
			t.Fatal(err)
		}
		rows.Next()
		var n int64
		var s string
		if err := rows.Scan(&n); err == nil || !strings.Contains(err.Error(), "wants 2 destinations, got 1") {
			t.Errorf("one destination for two columns: %v", err)
		}
		if err := rows.Scan(&n, &s); err == nil || !strings.Contains(err.Error(), "NULL into *int64") {
			t.Errorf("NULL into an int64: %v", err)
		}
		var ok sql.NullInt64
		var blob []byte = []byte("not reset")
		if err := rows.Scan(&ok, &blob); err != nil || ok.Valid || blob != nil {
			t.Errorf("NULL into sql.NullInt64 and []byte: %v, %v, %q", err, ok, blob)
		}
	})
}

// Queries that fail leave the connection usable, and the statement that
// failed does not hold the database's read lock.
func TestQueryAfterErrorLeavesConnectionUsable(t *testing.T) {
	db := openTestDB(t)
	c := conn(t, db)
	ctx := context.Background()
	// 1/0 is NULL in SQLite; abs(MinInt64) is an integer overflow at step.
	if _, err := sqlitedb.RxForTest(c).Query(ctx, `SELECT abs(i) FROM t ORDER BY id`); err == nil || !strings.Contains(err.Error(), "integer overflow") {
		t.Fatalf("error %v, want integer overflow", err)
	}
	if _, err := db.Exec(`INSERT INTO t (i) VALUES (7)`); err != nil {
		t.Fatalf("write after a failed read: %v", err)
	}
	got := viaHandle(t, c, `SELECT count(*) FROM t`)
	if got[0][0] != int64(8) {
		t.Fatalf("count %v", got[0][0])
	}
}

// Many goroutines, each on its own connection, read at once.
func TestQueryConcurrently(t *testing.T) {
	db := openTestDB(t)
	db.SetMaxOpenConns(4)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for n := range 50 {
				c, err := db.Conn(ctx)
				if err != nil {
					errs <- err
					return
				}
				rows, err := sqlitedb.RxForTest(c).Query(ctx, `SELECT id, s FROM t WHERE id <= ?`, int64(n%7+1))
				c.Close()
				if err != nil {
					errs <- err
					return
				}
				count := 0
				for rows.Next() {
					count++
				}
				if count != n%7+1 {
					errs <- fmt.Errorf("goroutine %d: %d rows, want %d", g, count, n%7+1)
					return
				}
			}
		})
	}
	waitGroup(t, &wg, "the queries")
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Exec and QueryRow read and write what database/sql does, and a query of
// two statements is refused rather than half run.
func TestExecAndQueryRow(t *testing.T) {
	db := openTestDB(t)
	c := conn(t, db)
	tx := sqlitedb.TxForTest(c)
	ctx := context.Background()
	res, err := tx.Exec(ctx, `INSERT INTO t (i, s) VALUES (?, ?)`, int64(42), "x")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.LastInsertId()
	if n, _ := res.RowsAffected(); n != 1 || id != 8 {
		t.Fatalf("inserted: %d rows, id %d; want 1 row, id 8", n, id)
	}
	res, err = tx.Exec(ctx, `UPDATE t SET i = i + 1 WHERE i >= ? RETURNING id`, int64(42))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 4 { // MaxInt64, 255, 256 and 42
		t.Fatalf("updated %d rows, want 4", n)
	}
	var i int64
	var s string
	if err := tx.QueryRow(ctx, `SELECT i, s FROM t WHERE id = ?`, id).Scan(&i, &s); err != nil || i != 43 || s != "x" {
		t.Fatalf("QueryRow: %d %q %v; want 43 \"x\"", i, s, err)
	}
	if err := tx.QueryRow(ctx, `SELECT i FROM t WHERE id = -1`).Scan(&i); err != sql.ErrNoRows {
		t.Fatalf("no row: %v, want sql.ErrNoRows", err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1; -- only a comment follows`); err != nil {
		t.Fatalf("a trailing comment: %v", err)
	}
	for _, q := range []string{`DELETE FROM t; DELETE FROM t`, `SELECT 1; SELECT 2`} {
		if _, err := tx.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "one statement at a time") {
			t.Fatalf("%s: %v, want a refusal", q, err)
		}
	}
	var n int
	if err := c.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 8 {
		t.Fatalf("%d rows after the refused DELETEs (%v), want all 8", n, err)
	}
}

// A time.Time argument is stored as text in UTC (TimeFormat), which
// SQLite's date functions read and which sorts in time order; a time
// column is read back from it, from what those functions write, and from
// Unix seconds, into *time.Time, *sql.NullTime and *sql.Null[time.Time].
func TestTimeArgumentsAndScan(t *testing.T) {
	ctx := context.Background()
	db, _ := openDB(t, nil)
	mustExec(t, db, `CREATE TABLE ev (id INTEGER PRIMARY KEY, at TEXT)`)
	east := time.FixedZone("east", 5*3600+30*60)
	at := time.Date(2026, 3, 1, 4, 5, 6, 7_000_000, east) // 2026-02-28 22:35:06.007 UTC
	times := []time.Time{
		at,
		at.Add(-time.Nanosecond),
		at.Add(time.Second),
		at.Truncate(time.Second),
		time.Date(2026, 2, 28, 22, 35, 6, 0, time.UTC).Add(500 * time.Millisecond),
	}
	err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		for _, v := range times {
			if _, err := tx.Exec(ctx, `INSERT INTO ev (at) VALUES (?)`, v); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO ev (at) VALUES (NULL)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		var text, kind, sqliteSays string
		if err := rx.QueryRow(ctx, `SELECT at, typeof(at), datetime(at, 'subsec') FROM ev WHERE id = 1`).Scan(&text, &kind, &sqliteSays); err != nil {
			return err
		}
		if text != "2026-02-28 22:35:06.007+00:00" || kind != "text" || sqliteSays != "2026-02-28 22:35:06.007" {
			t.Errorf("stored %q (%s), SQLite's datetime reads %q; want 2026-02-28 22:35:06.007+00:00, text, 2026-02-28 22:35:06.007", text, kind, sqliteSays)
		}

		// Read back, in the order the texts sort.
		rows, err := rx.Query(ctx, `SELECT at FROM ev WHERE at IS NOT NULL ORDER BY at`)
		if err != nil {
			return err
		}
		var got []time.Time
		for rows.Next() {
			var v time.Time
			if err := rows.Scan(&v); err != nil {
				return err
			}
			if v.Location() != time.UTC {
				t.Errorf("%v read back in %v, want UTC", v, v.Location())
			}
			got = append(got, v)
		}
		want := slices.Clone(times)
		slices.SortFunc(want, func(a, b time.Time) int { return a.Compare(b) })
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("ORDER BY at read %v, want %v (the same instants, in time order)", got, want)
		}

		// What SQLite's own functions write.
		for _, c := range []struct{ expr, want string }{
			{`'2026-02-28 22:35:06'`, "2026-02-28T22:35:06Z"},
			{`'2026-02-28 22:35:06.5'`, "2026-02-28T22:35:06.5Z"},
			{`strftime('%Y-%m-%dT%H:%M:%fZ', '2026-02-28 22:35:06.25')`, "2026-02-28T22:35:06.25Z"},
			{`'2026-02-28T22:35:06+01:00'`, "2026-02-28T22:35:06+01:00"},
			{`date('2026-02-28 22:35:06')`, "2026-02-28T00:00:00Z"},
			{`'2026-02-28 22:35'`, "2026-02-28T22:35:00Z"},
			{`unixepoch('2026-02-28 22:35:06')`, "2026-02-28T22:35:06Z"},
		} {
			var v time.Time
			if err := rx.QueryRow(ctx, `SELECT `+c.expr).Scan(&v); err != nil {
				t.Errorf("SELECT %s into a time: %v", c.expr, err)
			} else if v.Format(time.RFC3339Nano) != c.want {
				t.Errorf("SELECT %s read %s, want %s", c.expr, v.Format(time.RFC3339Nano), c.want)
			}
		}

		// NULL: an error into *time.Time, not valid in the nullable types.
		var v time.Time
		if err := rx.QueryRow(ctx, `SELECT at FROM ev WHERE at IS NULL`).Scan(&v); err == nil {
			t.Error("NULL into a *time.Time: no error")
		}
		var nt sql.NullTime
		var n sql.Null[time.Time]
		if err := rx.QueryRow(ctx, `SELECT at, at FROM ev WHERE at IS NULL`).Scan(&nt, &n); err != nil || nt.Valid || n.Valid {
			t.Errorf("NULL into sql.NullTime, sql.Null[time.Time]: %v, valid %v %v; want not valid", err, nt.Valid, n.Valid)
		}
		if err := rx.QueryRow(ctx, `SELECT at, at FROM ev WHERE id = 1`).Scan(&nt, &n); err != nil || !nt.Valid || !n.Valid || !nt.Time.Equal(at) || !n.V.Equal(at) {
			t.Errorf("a time into sql.NullTime, sql.Null[time.Time]: %v, %v %v; want %v twice", err, nt, n, at)
		}

		// What is not a time says so.
		for _, expr := range []string{`'yesterday'`, `1.5`, `x'00'`} {
			if err := rx.QueryRow(ctx, `SELECT `+expr).Scan(&v); err == nil {
				t.Errorf("SELECT %s into a time: no error", expr)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
