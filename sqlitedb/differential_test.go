//go:build unix

package sqlitedb_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/loremnews/loremnews/sqlitedb/internal/testenv"
)

// diffSeedEnv names the environment variable that replays a run of
// TestDifferentialAgainstUnixVFS: it holds the seed a failure printed.
const diffSeedEnv = "SQLITEDB_DIFF_SEED"

// diffSteps is how many steps a run of TestDifferentialAgainstUnixVFS takes.
const diffSteps = 300

// The package must leave a database exactly as SQLite's own VFS does.
// The same random sequence of transactions is applied to two databases:
// A through the package (Write, on a page cache of 10 pages so that
// transactions spill pages into the WAL before they commit), and B
// through a plain connection of SQLite's default VFS, "unix". On A, other
// writers take turns with the package's writer: a second DB of the package
// on the same file, opened and closed now and then, a plain connection of
// the unix VFS, and the sqlite3 shell in a process of its own; and
// checkpoints (PASSIVE, RESTART, TRUNCATE) and VACUUM come from those
// connections, from a connection of the package's VFS outside any DB, and
// from the shell, while the package's own checkpointer runs too. The
// transactions insert rows with blobs of every size (some spanning
// overflow pages), update many rows in place, delete ranges, nest
// savepoints rolled back to and released, roll back whole, and grow
// larger than the page cache and then roll back: pages spilled into the
// WAL must be ignored once the transaction rolled back, whoever commits
// next.
//
// After each step, a read through the package's read pool (the mapped
// reads) must see exactly what B holds. Every 25 steps, and at the end, a
// copy of A's database file and WAL, taken while the package holds
// SQLite's write lock, must open with the unix VFS, which rebuilds the
// WAL index from the files alone, to the same rows: each commit is whole in
// the files, not only in some process's memory. At the end, both pass the
// integrity check, and A, closed and opened again with the unix VFS, holds
// B's rows.
func TestDifferentialAgainstUnixVFS(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(diffSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", diffSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (%s=%d replays this sequence)", seed, diffSeedEnv, seed)
	shell, err := exec.LookPath("sqlite3")
	if err != nil {
		// The rest runs without the shell; its part is reported apart.
		t.Run("sqlite3 shell", func(t *testing.T) {
			testenv.Missing(t, "writes, checkpoints and VACUUM from another process need the sqlite3 shell (Debian: apt-get install sqlite3): %v", err)
		})
		shell = ""
	}
	d := newDiffRun(t, seed, shell)
	d.run(diffSteps)
}

// diffOp is one statement of a transaction, with its arguments (int64 or
// []byte, so the shell can be given them as literals).
type diffOp struct {
	query string
	args  []any
}

// diffTx is one transaction and the writer that runs it on A.
type diffTx struct {
	via      string // "A", "A2", "plain" or "shell"
	ops      []diffOp
	rollback bool // it ends in ROLLBACK
}

// diffStep is what one step does: transactions, or a statement outside
// any transaction (a checkpoint, VACUUM) from the connection via, or
// opening or closing the second DB.
type diffStep struct {
	kind string
	txs  []diffTx
	via  string // for a statement: "plain", "admin" or "shell"
	stmt string
}

func (s diffStep) String() string {
	if s.stmt != "" {
		return fmt.Sprintf("%s from %s", s.stmt, s.via)
	}
	var vias []string
	for _, tx := range s.txs {
		what := fmt.Sprintf("%d statements by %s", len(tx.ops), tx.via)
		if tx.rollback {
			what += ", rolled back"
		}
		vias = append(vias, what)
	}
	return s.kind + " (" + strings.Join(vias, "; ") + ")"
}

// errDiffRollback is what a write that is to roll back returns.
var errDiffRollback = errors.New("roll back")

// diffRun is one run: the random source, the two databases, and A's other
// connections.
type diffRun struct {
	t        *testing.T
	seed     uint64
	rng      *rand.Rand
	shell    string // the sqlite3 shell, "" if missing
	pathA    string
	a        *sqlitedb.DB
	a2       *sqlitedb.DB // the second DB on A's file, nil while closed
	a2Opened int
	plain    *sql.Conn // A through the unix VFS
	admin    *sql.Conn // A through the package's VFS, outside any DB
	b        *sql.Conn // B through the unix VFS
	nextID   int64     // the next row id an insert uses; never reused
	rows     int       // B's rows after the last step
	step     int
	done     []string // the steps so far, for failure messages
	counts   map[string]int
}

// diffPragmas are A's pragmas beyond the package's defaults: a page cache
// of 10 pages, so transactions spill.
var diffPragmas = []sqlitedb.Pragma{{Name: "cache_size", Value: "10"}}

func newDiffRun(t *testing.T, seed uint64, shell string) *diffRun {
	ctx := context.Background()
	dir := t.TempDir()
	d := &diffRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), shell: shell,
		pathA: filepath.Join(dir, "a.db"), nextID: 1, counts: map[string]int{}}
	var err error
	d.a, err = sqlitedb.Open(ctx, d.pathA, &sqlitedb.Options{Pragmas: diffPragmas, ReadConns: 3, MemoryMap: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d.a2 != nil {
			d.a2.Close()
		}
		d.a.Close()
	})
	open := func(dsn string) *sql.Conn {
		db, err := sql.Open("sqlite3", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeWithin(t, ignoreError(db.Close)) })
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { closeWithin(t, ignoreError(conn.Close)) })
		for _, q := range []string{`PRAGMA journal_mode = WAL`, `PRAGMA synchronous = NORMAL`, `PRAGMA cache_size = 10`} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s on %s: %v", q, dsn, err)
			}
		}
		return conn
	}
	d.plain = open("file:" + d.pathA + "?vfs=unix&_busy_timeout=10000&_txlock=immediate")
	d.admin = open("file:" + d.pathA + "?vfs=sqlitedb&_busy_timeout=10000&_txlock=immediate")
	d.b = open("file:" + filepath.Join(dir, "b.db") + "?vfs=unix&_busy_timeout=10000")

	const schema = `CREATE TABLE r (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, data BLOB NOT NULL);
CREATE INDEX r_k ON r (k)`
	mustExec(t, d.a, schema)
	if _, err := d.b.ExecContext(ctx, schema); err != nil {
		t.Fatal(err)
	}
	return d
}

// fatalf fails the run, naming the seed, the step and the steps before it.
func (d *diffRun) fatalf(format string, args ...any) {
	d.t.Helper()
	d.t.Fatalf("seed %d (%s=%d replays it), step %d: %s\nthe last steps:\n  %s", d.seed, diffSeedEnv, d.seed, d.step,
		fmt.Sprintf(format, args...), strings.Join(d.done[max(0, len(d.done)-12):], "\n  "))
}

func (d *diffRun) run(steps int) {
	ctx := context.Background()
	start := time.Now()
	for d.step = 1; d.step <= steps; d.step++ {
		s := d.next()
		for i := range s.txs {
			if s.txs[i].via == "A2" && d.a2 == nil {
				s.txs[i].via = "A"
			}
		}
		d.done = append(d.done, fmt.Sprintf("%d: %s", d.step, s))
		d.counts[s.kind]++
		d.apply(ctx, s)
		d.compare(ctx, s)
		if d.step%25 == 0 {
			d.checkCopy(ctx)
		}
	}
	d.checkCopy(ctx)
	var resA, resB string
	err := d.a.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		return rx.QueryRow(ctx, `PRAGMA integrity_check`).Scan(&resA)
	})
	if err != nil || resA != "ok" {
		d.fatalf("integrity check of A: %v %s", err, resA)
	}
	if err := d.b.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&resB); err != nil || resB != "ok" {
		d.fatalf("integrity check of B: %v %s", err, resB)
	}

	// A alone, closed and opened again with the unix VFS, holds B's rows.
	want, n, err := diffDigest(ctx, sqlRows(d.b))
	if err != nil {
		d.fatalf("B: %v", err)
	}
	if d.a2 != nil {
		if err := d.a2.Close(); err != nil {
			d.fatalf("close the second DB: %v", err)
		}
		d.a2 = nil
	}
	ck := d.a.Stats().Checkpoints
	d.plain.Close()
	d.admin.Close()
	if err := d.a.Close(); err != nil {
		d.fatalf("close A: %v", err)
	}
	reopened, err := sql.Open("sqlite3", "file:"+d.pathA+"?vfs=unix")
	if err != nil {
		d.fatalf("%v", err)
	}
	defer closeWithin(d.t, ignoreError(reopened.Close))
	got, _, err := diffDigest(ctx, sqlRows(reopened))
	if err != nil || got != want {
		d.fatalf("A, closed and opened again with the unix VFS: digest %s (%v), B's %s", got, err, want)
	}
	var kinds []string
	for k, n := range d.counts {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(kinds)
	d.t.Logf("%d steps in %v, %d rows at the end, second DB opened %d times, A's checkpointer %+v: %s",
		steps, time.Since(start).Round(time.Millisecond), n, d.a2Opened, ck, strings.Join(kinds, ", "))
}

// next draws the next step. What it draws depends only on the random
// source and on B, SQLite's own, so a seed gives the same sequence again.
func (d *diffRun) next() diffStep {
	r := d.rng
	tx := func(ops []diffOp, rollback bool) diffTx {
		return diffTx{via: d.writer(), ops: ops, rollback: rollback}
	}
	deleteBias := 0
	if d.rows > 300 {
		deleteBias = 20
	}
	switch p := r.IntN(100 + deleteBias); {
	case p < 26:
		return diffStep{kind: "insert", txs: []diffTx{tx(d.inserts(1+r.IntN(8), d.blobSize), false)}}
	case p < 34:
		return diffStep{kind: "update many", txs: []diffTx{tx([]diffOp{d.rotate()}, false)}}
	case p < 44:
		return diffStep{kind: "savepoints", txs: []diffTx{tx(d.savepoints(0), false)}}
	case p < 51:
		return diffStep{kind: "rolled back", txs: []diffTx{tx(d.mixed(1+r.IntN(6)), true)}}
	case p < 59:
		// Larger than the page cache: pages spill into the WAL before the
		// transaction rolls back; then another writer commits, and then
		// the first again.
		big := tx(d.large(), true)
		other := tx(d.inserts(1+r.IntN(3), d.blobSize), false)
		for other.via == big.via && r.IntN(4) > 0 {
			other.via = d.writer()
		}
		again := diffTx{via: big.via, ops: d.mixed(1 + r.IntN(4))}
		return diffStep{kind: "spill, roll back, others commit", txs: []diffTx{big, other, again}}
	case p < 64:
		return diffStep{kind: "large commit", txs: []diffTx{tx(d.large(), false)}}
	case p < 78:
		mode := []string{"PASSIVE", "RESTART", "TRUNCATE"}[r.IntN(3)]
		return diffStep{kind: "checkpoint", via: d.outside(), stmt: "PRAGMA wal_checkpoint(" + mode + ")"}
	case p < 80:
		return diffStep{kind: "vacuum", via: d.outside(), stmt: "VACUUM"}
	case p < 83:
		return diffStep{kind: "open or close the second DB"}
	default:
		return diffStep{kind: "delete", txs: []diffTx{tx([]diffOp{d.delete()}, false)}}
	}
}

// writer draws who runs a transaction on A.
func (d *diffRun) writer() string {
	switch p := d.rng.IntN(100); {
	case p < 50:
		return "A"
	case p < 72:
		return "A2" // A while the second DB is closed (see run)
	case p < 93 || d.shell == "":
		return "plain"
	default:
		return "shell"
	}
}

// outside draws who runs a statement outside a transaction on A.
func (d *diffRun) outside() string {
	switch p := d.rng.IntN(100); {
	case p < 45:
		return "plain"
	case p < 85 || d.shell == "":
		return "admin"
	default:
		return "shell"
	}
}

// blobSize draws a blob's size: mostly small, some a few to a page, and
// some larger than a page (4 KiB), which spill into overflow pages.
func (d *diffRun) blobSize() int {
	switch p := d.rng.IntN(100); {
	case p < 60:
		return d.rng.IntN(400)
	case p < 88:
		return 400 + d.rng.IntN(2600)
	default:
		return 4100 + d.rng.IntN(9000)
	}
}

func (d *diffRun) blob(n int) []byte {
	b := make([]byte, n+8)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], d.rng.Uint64())
	}
	return b[:n]
}

// inserts are n new rows, with blobs of size(), and now and then a new
// blob, of another size, for an older row.
func (d *diffRun) inserts(n int, size func() int) []diffOp {
	var ops []diffOp
	for range n {
		ops = append(ops, diffOp{`INSERT INTO r (id, k, data) VALUES (?, ?, ?)`, []any{d.nextID, d.rng.Int64N(1000), d.blob(size())}})
		d.nextID++
		if d.rng.IntN(4) == 0 {
			ops = append(ops, diffOp{`UPDATE r SET data = ? WHERE id = ?`, []any{d.blob(size()), 1 + d.rng.Int64N(d.nextID)}})
		}
	}
	return ops
}

// rotated is a row's blob rotated left by the bytes of its two
// arguments (the same number): substr of an empty blob is NULL, so an
// empty one is left alone.
const rotated = `CASE length(data) WHEN 0 THEN data ELSE CAST(substr(data, ? + 1) || substr(data, 1, ?) AS BLOB) END`

// rotate updates a third to all of the rows in place: a new k, and their
// blob rotated, the same size, so the file does not grow.
func (d *diffRun) rotate() diffOp {
	m, n := 1+d.rng.Int64N(3), 1+d.rng.Int64N(50)
	return diffOp{`UPDATE r SET k = (k * 7 + ?) % 1000, data = ` + rotated + ` WHERE id % ? = ?`,
		[]any{d.rng.Int64N(1000), n, n, m, d.rng.Int64N(m)}}
}

// delete deletes a range of ids, every m-th row, or the rows of a range
// of k (through the index).
func (d *diffRun) delete() diffOp {
	switch d.rng.IntN(3) {
	case 0:
		from := 1 + d.rng.Int64N(d.nextID)
		return diffOp{`DELETE FROM r WHERE id BETWEEN ? AND ?`, []any{from, from + d.rng.Int64N(max(d.nextID/8, 1))}}
	case 1:
		m := 3 + d.rng.Int64N(8)
		return diffOp{`DELETE FROM r WHERE id % ? = ?`, []any{m, d.rng.Int64N(m)}}
	default:
		from := d.rng.Int64N(1000)
		return diffOp{`DELETE FROM r WHERE k BETWEEN ? AND ?`, []any{from, from + d.rng.Int64N(100)}}
	}
}

// mixed is n statements of every kind.
func (d *diffRun) mixed(n int) []diffOp {
	var ops []diffOp
	for range n {
		switch d.rng.IntN(5) {
		case 0, 1, 2:
			ops = append(ops, d.inserts(1, d.blobSize)...)
		case 3:
			ops = append(ops, d.rotate())
		default:
			ops = append(ops, d.delete())
		}
	}
	return ops
}

// large is a transaction much larger than the page cache: 40 to 120 new
// rows of 1 to 5 KB, every row updated, a range deleted.
func (d *diffRun) large() []diffOp {
	ops := d.inserts(40+d.rng.IntN(80), func() int { return 1000 + d.rng.IntN(4000) })
	ops = append(ops, diffOp{`UPDATE r SET k = k + 1, data = ` + rotated, []any{int64(1), int64(1)}})
	return append(ops, d.delete())
}

// savepoints is a savepoint with statements, nested savepoints (depth
// below 3), rolled back to or released, in random order.
func (d *diffRun) savepoints(depth int) []diffOp {
	name := fmt.Sprintf("sp%d", depth)
	ops := []diffOp{{`SAVEPOINT ` + name, nil}}
	for range 1 + d.rng.IntN(3) {
		if depth < 2 && d.rng.IntN(3) == 0 {
			ops = append(ops, d.savepoints(depth+1)...)
		} else {
			ops = append(ops, d.mixed(1+d.rng.IntN(3))...)
		}
		if d.rng.IntN(3) == 0 {
			// ROLLBACK TO keeps the savepoint open; statements go on in it.
			ops = append(ops, diffOp{`ROLLBACK TO ` + name, nil})
		}
	}
	if d.rng.IntN(4) == 0 {
		ops = append(ops, diffOp{`ROLLBACK TO ` + name, nil})
	}
	return append(ops, diffOp{`RELEASE ` + name, nil})
}

// apply runs s on A, through whom it names, and on B.
func (d *diffRun) apply(ctx context.Context, s diffStep) {
	if s.kind == "open or close the second DB" {
		d.toggleA2(ctx)
		return
	}
	if s.stmt != "" {
		d.outsideA(ctx, s.via, s.stmt)
		if _, err := d.b.ExecContext(ctx, s.stmt); err != nil {
			d.fatalf("%s on B: %v", s.stmt, err)
		}
		return
	}
	for i, tx := range s.txs {
		if err := d.onA(ctx, tx); err != nil {
			d.fatalf("transaction %d of %s on A: %v", i+1, s, err)
		}
		if err := applyTx(ctx, d.b, tx); err != nil {
			d.fatalf("transaction %d of %s on B: %v", i+1, s, err)
		}
	}
}

// onA runs tx on A through its writer.
func (d *diffRun) onA(ctx context.Context, tx diffTx) error {
	db := d.a
	switch tx.via {
	case "plain":
		return applyTx(ctx, d.plain, tx)
	case "shell":
		return d.shellTx(ctx, tx)
	case "A2":
		db = d.a2
	}
	err := db.Write(ctx, func(ctx context.Context, wtx *sqlitedb.Tx) error {
		if err := runOps(ctx, wtx.Exec, tx.ops); err != nil {
			return err
		}
		if tx.rollback {
			return errDiffRollback
		}
		return nil
	})
	if tx.rollback {
		if !errors.Is(err, errDiffRollback) {
			return fmt.Errorf("Write of a transaction to roll back returned %v, want its function's error", err)
		}
		return nil
	}
	return err
}

// diffExec runs one statement: a write handle's Exec, or database/sql's
// ExecContext.
type diffExec func(ctx context.Context, query string, args ...any) (sql.Result, error)

func runOps(ctx context.Context, exec diffExec, ops []diffOp) error {
	for _, op := range ops {
		if _, err := exec(ctx, op.query, op.args...); err != nil {
			return fmt.Errorf("%s: %w", op.query, err)
		}
	}
	return nil
}

// applyTx runs tx in a transaction of conn's.
func applyTx(ctx context.Context, conn *sql.Conn, tx diffTx) error {
	stx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := runOps(ctx, stx.ExecContext, tx.ops); err != nil {
		stx.Rollback()
		return err
	}
	if tx.rollback {
		return stx.Rollback()
	}
	return stx.Commit()
}

// shellTx runs tx on A in the sqlite3 shell, its arguments written out as
// literals.
func (d *diffRun) shellTx(ctx context.Context, tx diffTx) error {
	var script strings.Builder
	script.WriteString(".timeout 10000\nBEGIN IMMEDIATE;\n")
	for _, op := range tx.ops {
		script.WriteString(inlineArgs(op))
		script.WriteString(";\n")
	}
	end, said := "COMMIT", "committed"
	if tx.rollback {
		end, said = "ROLLBACK", "rolled back"
	}
	fmt.Fprintf(&script, "%s;\nSELECT '%s';\n", end, said)
	out, err := d.runShell(ctx, script.String())
	if err == nil && !hasLine(out, said) {
		err = fmt.Errorf("the shell did not say %q: %q", said, out)
	}
	return err
}

func (d *diffRun) runShell(ctx context.Context, script string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	return runOther(ctx, script, nil, d.shell, "-batch", "-bail", d.pathA)
}

// inlineArgs writes op's arguments into its query as SQL literals.
func inlineArgs(op diffOp) string {
	var b strings.Builder
	args := op.args
	for _, c := range op.query {
		if c != '?' {
			b.WriteRune(c)
			continue
		}
		switch v := args[0].(type) {
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case []byte:
			b.WriteString("X'" + hex.EncodeToString(v) + "'")
		default:
			panic(fmt.Sprintf("no literal for %T", v))
		}
		args = args[1:]
	}
	return b.String()
}

// outsideA runs a statement that needs no transaction of its own (a
// checkpoint, VACUUM) on A from via. A checkpoint that finds a reader or
// another checkpoint in its way reports it in its result, not as an error.
func (d *diffRun) outsideA(ctx context.Context, via, stmt string) {
	switch via {
	case "shell":
		out, err := d.runShell(ctx, ".timeout 10000\n"+stmt+";\nSELECT 'done';\n")
		if err != nil || !hasLine(out, "done") {
			d.fatalf("%s from the sqlite3 shell: %v\n%s", stmt, err, out)
		}
	case "plain", "admin":
		conn := d.plain
		if via == "admin" {
			conn = d.admin
		}
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			d.fatalf("%s from %s: %v", stmt, via, err)
		}
	}
}

// toggleA2 opens the second DB on A's file, with group commit every other
// time, or closes it (which checkpoints and truncates the WAL while A
// stays open).
func (d *diffRun) toggleA2(ctx context.Context) {
	if d.a2 != nil {
		if err := d.a2.Close(); err != nil {
			d.fatalf("close the second DB: %v", err)
		}
		d.a2 = nil
		return
	}
	a2, err := sqlitedb.Open(ctx, d.pathA, &sqlitedb.Options{Pragmas: diffPragmas, ReadConns: 2, MemoryMap: true})
	if err != nil {
		d.fatalf("open the second DB: %v", err)
	}
	d.a2 = a2
	d.a2Opened++
}

// compare fails the run unless A, read through the package's read pool
// (and the second DB's, when open), holds what B holds.
func (d *diffRun) compare(ctx context.Context, s diffStep) {
	want, n, err := diffDigest(ctx, sqlRows(d.b))
	if err != nil {
		d.fatalf("B: %v", err)
	}
	d.rows = n
	for _, db := range []*sqlitedb.DB{d.a, d.a2} {
		if db == nil {
			continue
		}
		var got string
		var gotN int
		err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
			var err error
			got, gotN, err = diffDigest(ctx, rxRows(rx))
			return err
		})
		if err != nil {
			d.fatalf("read A after %s: %v", s, err)
		}
		if got != want {
			d.fatalf("after %s, A read through the package holds %d rows (digest %s), B %d (%s)%s",
				s, gotN, got[:12], n, want[:12], d.explain(ctx, db))
		}
	}
}

// explain says how A differs from B, row by row, as the package's read
// pool and a plain connection of the unix VFS see it.
func (d *diffRun) explain(ctx context.Context, db *sqlitedb.DB) string {
	b, err := diffRowSums(ctx, sqlRows(d.b))
	if err != nil {
		return fmt.Sprintf("; B: %v", err)
	}
	var mapped map[int64]string
	err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		var err error
		mapped, err = diffRowSums(ctx, rxRows(rx))
		return err
	})
	if err != nil {
		return fmt.Sprintf("; A again: %v", err)
	}
	plain, err := diffRowSums(ctx, sqlRows(d.plain))
	if err != nil {
		return fmt.Sprintf("; A through the unix VFS: %v", err)
	}
	return fmt.Sprintf("\nthrough the package's reads, rows that differ from B: %s\nthrough a unix VFS connection: %s", rowDiff(mapped, b), rowDiff(plain, b))
}

// rowDiff names the rows of got that are missing, extra, or different
// from want.
func rowDiff(got, want map[int64]string) string {
	var missing, extra, changed []int64
	for id, sum := range want {
		if g, ok := got[id]; !ok {
			missing = append(missing, id)
		} else if g != sum {
			changed = append(changed, id)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			extra = append(extra, id)
		}
	}
	if len(missing)+len(extra)+len(changed) == 0 {
		return "none"
	}
	for _, s := range [][]int64{missing, extra, changed} {
		slices.Sort(s)
	}
	return fmt.Sprintf("%d missing %v, %d extra %v, %d changed %v", len(missing), head(missing, 10), len(extra), head(extra, 10), len(changed), head(changed, 10))
}

// checkCopy copies A's database file and WAL while the package holds
// SQLite's write lock on A (so no one can commit, or start the WAL over,
// meanwhile; a checkpoint may still copy frames into the database file,
// but every frame stays in the WAL), and opens the copy elsewhere with
// the unix VFS: it must hold what A holds, and pass the integrity check.
func (d *diffRun) checkCopy(ctx context.Context) {
	release := holdWriter(d.t, d.a, nil)
	defer release()
	var want string
	err := d.a.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		var err error
		want, _, err = diffDigest(ctx, rxRows(rx))
		return err
	})
	if err != nil {
		d.fatalf("read A: %v", err)
	}
	// The copy is made by another process: opening and closing the file
	// here would drop every POSIX lock this process holds on it, SQLite's
	// SHARED lock among them, and let another process delete the WAL.
	copyPath := filepath.Join(d.t.TempDir(), "copy.db")
	walBytes := int64(-1)
	for _, suffix := range []string{"-wal", ""} { // the WAL first: see above
		if _, err := os.Stat(d.pathA + suffix); errors.Is(err, os.ErrNotExist) && suffix == "-wal" {
			continue
		}
		if out, err := exec.CommandContext(ctx, "cp", d.pathA+suffix, copyPath+suffix).CombinedOutput(); err != nil {
			d.fatalf("copy A%s: %v: %s", suffix, err, out)
		}
		if suffix == "-wal" {
			fi, err := os.Stat(copyPath + suffix)
			if err != nil {
				d.fatalf("%v", err)
			}
			walBytes = fi.Size()
		}
	}
	cp, err := sql.Open("sqlite3", "file:"+copyPath+"?vfs=unix")
	if err != nil {
		d.fatalf("open the copy: %v", err)
	}
	defer closeWithin(d.t, ignoreError(cp.Close))
	got, _, err := diffDigest(ctx, sqlRows(cp))
	if err != nil {
		d.fatalf("the copy of A's files (WAL of %d bytes): %v", walBytes, err)
	}
	if got != want {
		d.fatalf("the copy of A's files (WAL of %d bytes) holds digest %s, A %s: a commit is not whole in the files", walBytes, got[:12], want[:12])
	}
	var res string
	if err := cp.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		d.fatalf("integrity check of the copy of A's files (WAL of %d bytes): %v %s", walBytes, err, res)
	}
}

// diffRows are the rows a query returned: database/sql's *sql.Rows, or a
// handle's *sqlitedb.Rows.
type diffRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// rowQuerier runs a query: through database/sql (sqlRows) or a read's
// handle (rxRows).
type rowQuerier func(ctx context.Context, query string) (diffRows, error)

// sqlRows queries through database/sql: *sql.DB, *sql.Conn, *sql.Tx.
func sqlRows(q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}) rowQuerier {
	return func(ctx context.Context, query string) (diffRows, error) {
		rows, err := q.QueryContext(ctx, query)
		if err != nil {
			return nil, err
		}
		return rows, nil
	}
}

// rxRows queries through a read's handle.
func rxRows(rx *sqlitedb.Rx) rowQuerier {
	return func(ctx context.Context, query string) (diffRows, error) {
		rows, err := rx.Query(ctx, query)
		if err != nil {
			return nil, err
		}
		return rows, nil
	}
}

// diffDigest hashes every row of r in id order, and counts them.
func diffDigest(ctx context.Context, q rowQuerier) (string, int, error) {
	h := sha256.New()
	n := 0
	err := diffScan(ctx, q, func(id, k int64, data []byte) {
		var buf [24]byte
		binary.LittleEndian.PutUint64(buf[0:], uint64(id))
		binary.LittleEndian.PutUint64(buf[8:], uint64(k))
		binary.LittleEndian.PutUint64(buf[16:], uint64(len(data)))
		h.Write(buf[:])
		h.Write(data)
		n++
	})
	return hex.EncodeToString(h.Sum(nil)), n, err
}

// diffRowSums hashes each row of r.
func diffRowSums(ctx context.Context, q rowQuerier) (map[int64]string, error) {
	sums := map[int64]string{}
	err := diffScan(ctx, q, func(id, k int64, data []byte) {
		sum := sha256.Sum256(data)
		sums[id] = fmt.Sprintf("%d/%d/%x", k, len(data), sum[:6])
	})
	return sums, err
}

func diffScan(ctx context.Context, q rowQuerier, row func(id, k int64, data []byte)) error {
	rows, err := q(ctx, `SELECT id, k, data FROM r ORDER BY id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, k int64
		var data []byte
		if err := rows.Scan(&id, &k, &data); err != nil {
			return err
		}
		row(id, k, data)
	}
	return rows.Err()
}
