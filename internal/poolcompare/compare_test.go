package poolcompare_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/mattn/go-sqlite3" // the "sqlite3" driver, for the database/sql setups

	"github.com/loremnews/loremnews/sqlitedb"
)

// The load of these benchmarks runs on a plain schema of its own: accounts
// whose balance a write reads and then raises by one, and the entries that
// record each raise.
const (
	benchAccounts = 1000
	benchEntries  = 20 // seeded per account
	benchSchema   = `
CREATE TABLE accounts (
	id      INTEGER PRIMARY KEY,
	name    TEXT NOT NULL,
	balance INTEGER NOT NULL
);
CREATE TABLE entries (
	id         INTEGER PRIMARY KEY,
	account_id INTEGER NOT NULL REFERENCES accounts (id),
	amount     INTEGER NOT NULL,
	note       TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE INDEX entries_by_account ON entries (account_id, id);`
)

// querier is what the load's SQL needs, whichever way it runs: through
// database/sql (sqlQuerier) or through the package's handles (rxQuerier,
// txQuerier).
type querier interface {
	exec(ctx context.Context, query string, args ...any) error
	queryRow(ctx context.Context, query string, args ...any) scanner
	query(ctx context.Context, query string, args ...any) (resultRows, error)
}

// scanner is a row: *sql.Row, sqlitedb.Row.
type scanner interface{ Scan(dest ...any) error }

// resultRows are a query's rows: *sql.Rows, *sqlitedb.Rows.
type resultRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// sqlQuerier runs the load's SQL through database/sql: on a *sql.Conn, a
// *sql.Tx or a *sql.DB.
type sqlQuerier struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
}

func (s sqlQuerier) exec(ctx context.Context, query string, args ...any) error {
	_, err := s.q.ExecContext(ctx, query, args...)
	return err
}

func (s sqlQuerier) queryRow(ctx context.Context, query string, args ...any) scanner {
	return s.q.QueryRowContext(ctx, query, args...)
}

func (s sqlQuerier) query(ctx context.Context, query string, args ...any) (resultRows, error) {
	r, err := s.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// rxQuerier runs the load's reads on a read's handle.
type rxQuerier struct{ rx *sqlitedb.Rx }

func (h rxQuerier) exec(context.Context, string, ...any) error {
	return errors.New("a read's handle cannot write")
}

func (h rxQuerier) queryRow(ctx context.Context, query string, args ...any) scanner {
	return h.rx.QueryRow(ctx, query, args...)
}

func (h rxQuerier) query(ctx context.Context, query string, args ...any) (resultRows, error) {
	r, err := h.rx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// txQuerier runs the load's SQL on a write's handle.
type txQuerier struct {
	rxQuerier
	tx *sqlitedb.Tx
}

func newTxQuerier(tx *sqlitedb.Tx) txQuerier { return txQuerier{rxQuerier{&tx.Rx}, tx} }

func (h txQuerier) exec(ctx context.Context, query string, args ...any) error {
	_, err := h.tx.Exec(ctx, query, args...)
	return err
}

// seed creates the schema and the accounts (balance 0) with their entries.
func seed(ctx context.Context, q querier) error {
	if err := q.exec(ctx, benchSchema); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	now := time.Now().UnixNano()
	for a := int64(1); a <= benchAccounts; a++ {
		if err := q.exec(ctx, `INSERT INTO accounts (id, name, balance) VALUES (?, ?, 0)`, a, fmt.Sprintf("account %d", a)); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		for range benchEntries {
			if err := q.exec(ctx, `INSERT INTO entries (account_id, amount, note, created_at) VALUES (?, 0, 'opening', ?)`, a, now); err != nil {
				return fmt.Errorf("seed: %w", err)
			}
		}
	}
	return nil
}

// raise is the write: inside one transaction, read an account's balance
// and write it back plus one, and record the raise, as application code
// does. Writing back the value read (not balance + 1) is what would lose
// an update if two transactions interleaved.
func raise(ctx context.Context, q querier, account int64) error {
	var balance int64
	if err := q.queryRow(ctx, `SELECT balance FROM accounts WHERE id = ?`, account).Scan(&balance); err != nil {
		return fmt.Errorf("select: %w", err)
	}
	if err := q.exec(ctx, `UPDATE accounts SET balance = ? WHERE id = ?`, balance+1, account); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if err := q.exec(ctx, `INSERT INTO entries (account_id, amount, note, created_at) VALUES (?, 1, 'raise', ?)`, account, time.Now().UnixNano()); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	return nil
}

// latest is the read: an account's 20 latest entries, joined with the
// account, as a page would list them.
func latest(ctx context.Context, q querier, account int64) error {
	rows, err := q.query(ctx, `SELECT e.id, e.amount, e.note, e.created_at, a.name, a.balance
		FROM entries e JOIN accounts a ON a.id = e.account_id
		WHERE e.account_id = ? ORDER BY e.id DESC LIMIT 20`, account)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			id, amount, at, balance int64
			note, name              string
		)
		if err := rows.Scan(&id, &amount, &note, &at, &name, &balance); err != nil {
			return err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n < benchEntries {
		return fmt.Errorf("read %d entries of account %d, want at least %d", n, account, benchEntries)
	}
	return nil
}

// totals are what the correctness check reads: the sum of the balances and
// the number of entries.
func totals(ctx context.Context, q querier) (balances, entries int64, err error) {
	err = q.queryRow(ctx, `SELECT (SELECT sum(balance) FROM accounts), (SELECT count(*) FROM entries)`).Scan(&balances, &entries)
	return balances, entries, err
}

// setup is one way to run SQLite from Go, opened on a fresh file.
type setup interface {
	write(ctx context.Context, account int64) error
	read(ctx context.Context, account int64) error
	totals(ctx context.Context) (balances, entries int64, err error)
	close() error
}

// pkgSetup is this package.
type pkgSetup struct{ db *sqlitedb.DB }

func openPackage(tb testing.TB, path string, opts *sqlitedb.Options) *pkgSetup {
	tb.Helper()
	o := sqlitedb.Options{}
	if opts != nil {
		o = *opts
	}
	o.Setup = func(ctx context.Context, conn *sql.Conn) error {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := seed(ctx, sqlQuerier{tx}); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	db, err := sqlitedb.Open(context.Background(), path, &o)
	if err != nil {
		tb.Fatal(err)
	}
	return &pkgSetup{db}
}

func (s *pkgSetup) write(ctx context.Context, account int64) error {
	return s.db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error { return raise(ctx, newTxQuerier(tx), account) })
}

func (s *pkgSetup) read(ctx context.Context, account int64) error {
	return s.db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error { return latest(ctx, rxQuerier{rx}, account) })
}

func (s *pkgSetup) totals(ctx context.Context) (balances, entries int64, err error) {
	err = s.db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		balances, entries, err = totals(ctx, rxQuerier{rx})
		return err
	})
	return balances, entries, err
}

func (s *pkgSetup) close() error { return s.db.Close() }

// poolSetup is database/sql by hand: writes in a *sql.Tx on the write
// pool, reads as single statements on the read pool (the same pool, for
// one pool).
type poolSetup struct{ writeDB, readDB *sql.DB }

// commonPragmas are the DSN parameters of the usual advice for SQLite
// behind database/sql.
const commonPragmas = "_journal_mode=WAL&_busy_timeout=5000&_synchronous=NORMAL&_foreign_keys=on"

// poolConns is the size of the pools with several connections: the
// package's default read pool, max(4, 2×GOMAXPROCS).
func poolConns() int { return max(4, 2*runtime.GOMAXPROCS(0)) }

func openPool(tb testing.TB, dsn string, conns int) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db
}

// openPools opens a write pool on writeDSN with writeConns connections and
// seeds it; readDSN, if not empty, is a read pool of readConns beside it.
func openPools(tb testing.TB, writeDSN string, writeConns int, readDSN string, readConns int) *poolSetup {
	tb.Helper()
	s := &poolSetup{writeDB: openPool(tb, writeDSN, writeConns)}
	s.readDB = s.writeDB
	ctx := context.Background()
	tx, err := s.writeDB.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := seed(ctx, sqlQuerier{tx}); err != nil {
		tb.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	if readDSN != "" {
		s.readDB = openPool(tb, readDSN, readConns)
	}
	return s
}

func (s *poolSetup) write(ctx context.Context, account int64) error {
	tx, err := s.writeDB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := raise(ctx, sqlQuerier{tx}, account); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (s *poolSetup) read(ctx context.Context, account int64) error {
	return latest(ctx, sqlQuerier{s.readDB}, account)
}

func (s *poolSetup) totals(ctx context.Context) (balances, entries int64, err error) {
	return totals(ctx, sqlQuerier{s.readDB})
}

func (s *poolSetup) close() error {
	var err error
	if s.readDB != s.writeDB {
		err = s.readDB.Close()
	}
	return errors.Join(err, s.writeDB.Close())
}

// setups are the four ways compared, each opened on a fresh file at path.
var setups = []struct {
	name string
	open func(tb testing.TB, path string) setup
}{
	// (a) This package, default options: a query_only read pool, one
	// write connection and the writer goroutine, BEGIN IMMEDIATE.
	{"sqlitedb", func(tb testing.TB, path string) setup {
		return openPackage(tb, path, nil)
	}},
	// (b) The common advice: one pool of one connection, so reads wait
	// for writes and for each other too.
	{"one-conn", func(tb testing.TB, path string) setup {
		return openPools(tb, path+"?"+commonPragmas, 1, "", 0)
	}},
	// (c) Two pools by hand: one write connection whose transactions
	// begin IMMEDIATE, and a query_only read pool.
	{"two-pools", func(tb testing.TB, path string) setup {
		return openPools(tb, "file:"+path+"?"+commonPragmas+"&_txlock=immediate", 1,
			"file:"+path+"?"+commonPragmas+"&_query_only=true", poolConns())
	}},
	// (d) One pool of several connections, database/sql's default
	// (deferred) transactions: a transaction that reads and then writes
	// fails with SQLITE_BUSY when another committed since its read, and the
	// busy timeout cannot help it.
	{"shared-deferred", func(tb testing.TB, path string) setup {
		return openPools(tb, path+"?"+commonPragmas, poolConns(), "", 0)
	}},
}

// loadResult is what one run of the load measured.
type loadResult struct {
	elapsed           time.Duration // until the last write returned
	writes, reads     int64         // that succeeded
	writeErrors       int64
	readErrors        int64
	busyErrors        int64                   // SQLITE_BUSY or SQLITE_LOCKED, of either
	writeLat, readLat *hdrhistogram.Histogram // µs, successes only
	firstError        error
}

// newLatencies records latencies in microseconds, up to a minute.
func newLatencies() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Minute/time.Microsecond), 3)
}

// runLoad runs total write transactions from writers goroutines (each a
// read-then-write of a random account) while readers goroutines read in a
// loop until the last write returns. A failed read or write is counted and
// the loop goes on. Each goroutine keeps its own histogram, merged at the
// end, so recording costs no lock.
func runLoad(s setup, total, writers, readers int) loadResult {
	ctx := context.Background()
	var (
		left                                    atomic.Int64
		writes, reads, wErrs, rErrs, busyErrors atomic.Int64
		stop                                    atomic.Bool
		mu                                      sync.Mutex
		firstError                              error
	)
	left.Store(int64(total))
	res := loadResult{writeLat: newLatencies(), readLat: newLatencies()}
	fail := func(err error, count *atomic.Int64) {
		count.Add(1)
		if sqlitedb.IsBusy(err) || errors.Is(err, sqlitedb.ErrBusy) {
			busyErrors.Add(1)
		}
		mu.Lock()
		if firstError == nil {
			firstError = err
		}
		mu.Unlock()
	}
	merge := func(into, h *hdrhistogram.Histogram) {
		mu.Lock()
		into.Merge(h)
		mu.Unlock()
	}
	start := time.Now()
	var readWG, writeWG sync.WaitGroup
	for range readers {
		readWG.Go(func() {
			h := newLatencies()
			for !stop.Load() {
				t := time.Now()
				if err := s.read(ctx, 1+rand.Int64N(benchAccounts)); err != nil {
					fail(err, &rErrs)
					continue
				}
				h.RecordValue(time.Since(t).Microseconds())
				reads.Add(1)
			}
			merge(res.readLat, h)
		})
	}
	for range writers {
		writeWG.Go(func() {
			h := newLatencies()
			for left.Add(-1) >= 0 {
				t := time.Now()
				if err := s.write(ctx, 1+rand.Int64N(benchAccounts)); err != nil {
					fail(err, &wErrs)
					continue
				}
				h.RecordValue(time.Since(t).Microseconds())
				writes.Add(1)
			}
			merge(res.writeLat, h)
		})
	}
	writeWG.Wait()
	res.elapsed = time.Since(start)
	stop.Store(true)
	readWG.Wait()
	res.writes, res.reads = writes.Load(), reads.Load()
	res.writeErrors, res.readErrors, res.busyErrors = wErrs.Load(), rErrs.Load(), busyErrors.Load()
	res.firstError = firstError
	return res
}

// checkTotals fails b unless every successful write, and only those, is in
// the database: the balances sum to the writes and each left one entry.
func checkTotals(b *testing.B, s setup, writes int64) {
	b.Helper()
	balances, entries, err := s.totals(context.Background())
	if err != nil {
		b.Fatalf("read the totals: %v", err)
	}
	if balances != writes || entries != benchAccounts*benchEntries+writes {
		b.Fatalf("%d successful writes, but the balances sum to %d and %d entries were added: lost or phantom updates",
			writes, balances, entries-benchAccounts*benchEntries)
	}
}

// walMB is the size of the database's WAL file in MB (0 if there is none):
// how far checkpoints kept up with the writes. A WAL file does not shrink
// when SQLite starts it over, so this is its largest size during the run,
// or journal_size_limit (64 MiB by default in this package) if SQLite
// truncated it to that.
func walMB(tb testing.TB, path string) float64 {
	fi, err := os.Stat(path + "-wal")
	if errors.Is(err, os.ErrNotExist) {
		return 0
	} else if err != nil {
		tb.Fatal(err)
	}
	return float64(fi.Size()) / 1e6
}

func ms(h *hdrhistogram.Histogram, q float64) float64 {
	return float64(h.ValueAtQuantile(q)) / 1000
}

// BenchmarkCompare runs the same load on four ways to run SQLite from Go:
// writers goroutines each running read-then-write transactions in a loop
// (b.N transactions in all, failed ones included), beside readers
// goroutines each reading an account's latest entries in a loop. It
// reports successful writes and reads per second, their latency from call
// to return (waiting included) and the errors; the database must hold
// exactly the successful writes. Use -benchtime Nx: each run opens and
// seeds a fresh file.
func BenchmarkCompare(b *testing.B) {
	for _, size := range []struct{ writers, readers int }{{16, 16}, {64, 64}} {
		b.Run(fmt.Sprintf("w%d-r%d", size.writers, size.readers), func(b *testing.B) {
			for _, st := range setups {
				b.Run(st.name, func(b *testing.B) {
					path := filepath.Join(b.TempDir(), "db.sqlite3")
					s := st.open(b, path)
					defer s.close()
					b.ResetTimer()
					res := runLoad(s, b.N, size.writers, size.readers)
					b.StopTimer()
					checkTotals(b, s, res.writes)
					secs := res.elapsed.Seconds()
					b.ReportMetric(float64(res.writes)/secs, "writes/s")
					b.ReportMetric(float64(res.reads)/secs, "reads/s")
					b.ReportMetric(ms(res.writeLat, 50), "write-p50-ms")
					b.ReportMetric(ms(res.writeLat, 99), "write-p99-ms")
					b.ReportMetric(ms(res.readLat, 50), "read-p50-ms")
					b.ReportMetric(ms(res.readLat, 99), "read-p99-ms")
					b.ReportMetric(float64(res.writeErrors+res.readErrors), "errors")
					b.ReportMetric(float64(res.busyErrors), "busy-errors")
					b.ReportMetric(walMB(b, path), "wal-MB")
					if res.firstError != nil {
						b.Logf("%d write and %d read errors, the first: %v", res.writeErrors, res.readErrors, res.firstError)
					}
				})
			}
		})
	}
}

// openInCommit is the baseline of BenchmarkWritesBesideReads: database/sql
// by hand, one write connection whose transactions begin IMMEDIATE beside a
// query_only read pool (as two-pools), with the package's page cache,
// where SQLite checkpoints inside the commit that takes the WAL past 1,000
// pages (wal_autocheckpoint, SQLite's own behaviour).
func openInCommit(tb testing.TB, path string) setup {
	const pragmas = commonPragmas + "&_cache_size=-20000"
	return openPools(tb, "file:"+path+"?"+pragmas+"&_txlock=immediate", 1,
		"file:"+path+"?"+pragmas+"&_query_only=true", poolConns())
}

// BenchmarkWritesBesideReads measures the latency of writes from 16
// goroutines while 8 others read, with WAL checkpoints inside the commits
// that take the WAL past 1,000 pages (SQLite's own behaviour, on a write
// connection and a read pool of database/sql: openInCommit) and from the
// package's checkpointer: a checkpoint inside a commit stalls every write
// queued behind it, which shows in the tail. b.N is the number of writes.
func BenchmarkWritesBesideReads(b *testing.B) {
	for _, mode := range []struct {
		name string
		open func(tb testing.TB, path string) setup
	}{
		{"in-commit", openInCommit},
		{"checkpointer", func(tb testing.TB, path string) setup { return openPackage(tb, path, nil) }},
	} {
		b.Run(mode.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "db.sqlite3")
			s := mode.open(b, path)
			defer s.close()
			b.ResetTimer()
			res := runLoad(s, b.N, 16, 8)
			b.StopTimer()
			if res.firstError != nil {
				b.Errorf("%d write and %d read errors, the first: %v", res.writeErrors, res.readErrors, res.firstError)
			}
			checkTotals(b, s, res.writes)
			for _, q := range []float64{50, 99, 99.9, 100} {
				b.ReportMetric(ms(res.writeLat, q), fmt.Sprintf("write-p%v-ms", q))
			}
			b.ReportMetric(walMB(b, path), "wal-MB")
			if ps, ok := s.(*pkgSetup); ok {
				ck := ps.db.Stats().Checkpoints
				// Inline and restart: on the writer's path, to finish a
				// background checkpoint, or because the WAL passed the
				// hard limit.
				b.ReportMetric(float64(ck.Background), "bg-checkpoints")
				b.ReportMetric(float64(ck.Inline), "inline-checkpoints")
				b.ReportMetric(float64(ck.Restarts), "restart-checkpoints")
				if ck.Errors > 0 {
					b.Errorf("%d checkpoints failed", ck.Errors)
				}
			}
		})
	}
}

// BenchmarkWriteTail finds where the package's write tail comes from: 16
// writers beside 0, 4 and 16 readers that loop without pause, and beside
// 16 with synchronous=OFF (no fsync at checkpoints). b.N is the number of
// writes.
func BenchmarkWriteTail(b *testing.B) {
	syncOff := &sqlitedb.Options{Pragmas: []sqlitedb.Pragma{{Name: "synchronous", Value: "OFF"}}}
	for _, c := range []struct {
		name    string
		readers int
		opts    *sqlitedb.Options
	}{{"readers-0", 0, nil}, {"readers-4", 4, nil}, {"readers-16", 16, nil}, {"readers-16-sync-off", 16, syncOff}} {
		b.Run(c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "db.sqlite3")
			s := openPackage(b, path, c.opts)
			defer s.close()
			b.ResetTimer()
			res := runLoad(s, b.N, 16, c.readers)
			b.StopTimer()
			if res.firstError != nil {
				b.Errorf("%d write and %d read errors, the first: %v", res.writeErrors, res.readErrors, res.firstError)
			}
			checkTotals(b, s, res.writes)
			b.ReportMetric(float64(res.writes)/res.elapsed.Seconds(), "writes/s")
			b.ReportMetric(ms(res.writeLat, 50), "write-p50-ms")
			b.ReportMetric(ms(res.writeLat, 99), "write-p99-ms")
		})
	}
}
