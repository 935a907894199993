//go:build unix

package sqlitedb_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/loremnews/loremnews/sqlitedb"
)

// fillBlobs inserts rows from..from+n-1 of 3 KiB of pseudo-random bytes
// each into table b, perTx rows per transaction, so the rows span many
// pages of the file and of the WAL.
func fillBlobs(tb testing.TB, db *sqlitedb.DB, from, n, perTx int) {
	tb.Helper()
	for i := from; i < from+n; i += perTx {
		err := db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
			for j := i; j < min(i+perTx, from+n); j++ {
				sum := sha256.Sum256([]byte(strconv.Itoa(j)))
				blob := []byte(strings.Repeat(string(sum[:]), 96))
				if _, err := tx.Exec(ctx, `INSERT INTO b (id, data) VALUES (?, ?)`, j, blob); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// digest reads every row of b through q (sqlRows or rxRows) and hashes
// them in id order.
func digest(ctx context.Context, q rowQuerier) (string, int, error) {
	rows, err := q(ctx, `SELECT id, data FROM b ORDER BY id`)
	if err != nil {
		return "", 0, err
	}
	defer rows.Close()
	h := sha256.New()
	n := 0
	for rows.Next() {
		var id int64
		var data []byte
		if err := rows.Scan(&id, &data); err != nil {
			return "", 0, err
		}
		fmt.Fprintf(h, "%d:%x;", id, data)
		n++
	}
	return fmt.Sprintf("%x", h.Sum(nil)), n, rows.Err()
}

// mappedKiB is the resident size of this process's memory maps of path,
// from /proc/self/smaps: above 0 once pages were read through a map.
func mappedKiB(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	kib, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) >= 6 && strings.Contains(fields[0], "-") {
			in = fields[len(fields)-1] == path
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			kib += n
		}
	}
	return kib
}

// The package's VFS must read exactly what SQLite's own reads: the same
// rows, read through the package's read pool, its writer and a plain
// connection of SQLite's default VFS, while pages sit both in the WAL and
// in the database file.
func TestMappedReadsSeeWhatPreadSees(t *testing.T) {
	db, path := openDB(t, &sqlitedb.Options{MemoryMap: true})
	mustExec(t, db, `CREATE TABLE b (id INTEGER PRIMARY KEY, data BLOB NOT NULL)`)
	fillBlobs(t, db, 0, 2000, 100)
	// Half the pages to the database file, then more rows and updates
	// that stay in the WAL.
	mustExec(t, db, `UPDATE b SET data = x'00' || data WHERE id % 7 = 0`)
	fillBlobs(t, db, 2000, 500, 100)

	plain, err := sql.Open("sqlite3", "file:"+path+"?vfs=unix&mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(plain.Close))
	want, n, err := digest(context.Background(), sqlRows(plain))
	if err != nil {
		t.Fatal(err)
	}
	if n != 2500 {
		t.Fatalf("plain connection read %d rows, want 2500", n)
	}
	for i := range 8 { // every read connection, most of them twice
		var got string
		err := db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
			var err error
			got, _, err = digest(ctx, rxRows(rx))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("read %d through the map: digest %s, pread: %s", i, got, want)
		}
	}
	err = db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
		got, _, err := digest(ctx, rxRows(&tx.Rx))
		if err == nil && got != want {
			err = fmt.Errorf("writer's digest %s, pread: %s", got, want)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if kib := mappedKiB(t, path); kib == 0 {
		t.Fatalf("no page of %s is resident in a map of this process: reads did not go through the map", path)
	}
	// The checkpointer truncates the WAL once writes have stopped for 2 s,
	// which the reads above (slow under -race) may outlast: write a page
	// again and read it back through the map right before looking at the
	// WAL's.
	mustExec(t, db, `UPDATE b SET data = data || x'01' WHERE id = 2499`)
	err = db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
		var n int
		return rx.QueryRow(ctx, `SELECT length(data) FROM b WHERE id = 2499`).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	if kib := mappedKiB(t, path+"-wal"); kib == 0 {
		t.Fatalf("no page of the WAL is resident in a map of this process")
	}
}

// One map per file, shared by every connection, released with the last.
func TestMapsAreSharedAndReleased(t *testing.T) {
	before := sqlitedb.MappedFiles()
	dir := t.TempDir()
	a, err := sqlitedb.Open(context.Background(), filepath.Join(dir, "a.db"), &sqlitedb.Options{ReadConns: 6, MemoryMap: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sqlitedb.Open(context.Background(), filepath.Join(dir, "b.db"), &sqlitedb.Options{MemoryMap: true})
	if err != nil {
		t.Fatal(err)
	}
	// Each database: its file and its WAL (open from the first
	// transaction on), whatever its connections.
	for _, db := range []*sqlitedb.DB{a, b} {
		mustExec(t, db, `CREATE TABLE t (n)`)
		queryInt(t, db, `SELECT count(*) FROM t`)
	}
	if got := sqlitedb.MappedFiles() - before; got != 4 {
		t.Errorf("two open databases map %d files, want 4", got)
	}
	if s := a.Stats(); !s.MappedDatabase || !s.MappedWAL {
		t.Errorf("Stats() MappedDatabase, MappedWAL = %v, %v; want both files mapped", s.MappedDatabase, s.MappedWAL)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sqlitedb.MappedFiles() - before; got != 2 {
		t.Errorf("after closing one, %d files mapped, want 2", got)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := sqlitedb.MappedFiles() - before; got != 0 {
		t.Errorf("after closing both, %d files mapped, want 0", got)
	}

	c, _ := openDB(t, nil)
	mustExec(t, c, `CREATE TABLE t (n)`)
	if got := sqlitedb.MappedFiles() - before; got != 0 {
		t.Errorf("without MemoryMap, %d files mapped, want 0", got)
	}
	if s := c.Stats(); s.MappedDatabase || s.MappedWAL {
		t.Errorf("without MemoryMap, Stats() MappedDatabase, MappedWAL = %v, %v; want neither file mapped", s.MappedDatabase, s.MappedWAL)
	}
}

// A file that shrinks under readers must never be read past its end
// through the map (that faults, and the read would fail): VACUUM and
// TRUNCATE checkpoints shrink the database file and the WAL while readers
// loop, and every reader must see a whole snapshot, before or after.
// (SQLite's locks already keep a truncation away from bytes a reader still
// needs; the map's size, lowered before each truncation, is a second
// guard. A read past the end of the file would fault, and its pread
// would fail this test.)
func TestMappedReadsSurviveTruncation(t *testing.T) {
	db, path := openDB(t, &sqlitedb.Options{ReadConns: 4, MemoryMap: true})
	mustExec(t, db, `CREATE TABLE b (id INTEGER PRIMARY KEY, data BLOB NOT NULL)`)
	// VACUUM and TRUNCATE checkpoints cannot run in a transaction, so they
	// run on a connection of their own, through the same VFS.
	admin, err := sql.Open("sqlite3", "file:"+path+"?vfs=sqlitedb&_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(admin.Close))
	admin.SetMaxOpenConns(1)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var reads, bad atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				err := db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
					_, n, err := digest(ctx, rxRows(rx))
					if err == nil && n != 0 && n != 100 && n != 1500 {
						err = fmt.Errorf("read %d rows: not a snapshot (0, 100 or 1500)", n)
					}
					return err
				})
				if err != nil {
					bad.Add(1)
					t.Error(err)
					return
				}
				reads.Add(1)
			}
		})
	}
	for round := range 5 {
		// Grow the file to 1,500 rows (some 5 MB) and checkpoint it in, then
		// shrink it to 100 rows with VACUUM and truncate the WAL.
		mustExec(t, db, `DELETE FROM b`)
		fillBlobs(t, db, 0, 1500, 1500)
		for _, q := range []string{`PRAGMA wal_checkpoint(TRUNCATE)`, `DELETE FROM b WHERE id >= 100`, `VACUUM`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
			if _, err := admin.ExecContext(context.Background(), q); err != nil {
				t.Fatalf("round %d: %s: %v", round, q, err)
			}
		}
	}
	cancel()
	waitGroup(t, &wg, "the readers")
	if bad.Load() > 0 {
		t.Fatalf("%d reads failed", bad.Load())
	}
	if reads.Load() == 0 {
		t.Fatal("no read ran while the files shrank")
	}
	// The last checkpoint may have run while a reader held an older
	// snapshot, and then it leaves the file as it is: once more, alone.
	if _, err := admin.ExecContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM b`); n != 100 {
		t.Fatalf("%d rows at the end, want 100", n)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 1<<20 {
		t.Fatalf("the file is %d bytes after VACUUM: it never shrank, so the test proved nothing", st.Size())
	}
}

// A commit that returned is in the WAL file, not only in the VFS's gathered
// writes: a copy of the database file and the WAL, opened elsewhere with
// SQLite's own VFS (which rebuilds the wal-index from the file, checking
// every frame's checksum), holds every committed row. Among the
// transactions is one larger than the page cache, which writes frames
// before its commit and then pages again, so SQLite rewrites frames in
// place and corrects the commit frame's checksum with a write of its own.
//
// The copy is made while a write holds the writer's turn: no one commits,
// and neither the WAL's start over nor a RESTART or TRUNCATE checkpoint
// (which need the write lock) can come between the copy of the file and
// that of the WAL. The package's checkpointer may still copy frames into
// the database file meanwhile, but every frame stays in the WAL.
func TestCommittedWALIsInTheFile(t *testing.T) {
	db, path := openDB(t, &sqlitedb.Options{MemoryMap: true,
		Pragmas: []sqlitedb.Pragma{{Name: "cache_size", Value: "10"}}})
	mustExec(t, db, `CREATE TABLE b (id INTEGER PRIMARY KEY, data BLOB NOT NULL)`)
	check := func(step string) {
		t.Helper()
		release := holdWriter(t, db, nil)
		defer release()
		want := queryInt(t, db, `SELECT sum(length(data)) + count(*) FROM b`)
		dir := t.TempDir()
		for _, suffix := range []string{"", "-wal"} {
			b, err := os.ReadFile(path + suffix)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "copy.db"+suffix), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cp, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "copy.db")+"?vfs=unix")
		if err != nil {
			t.Fatal(err)
		}
		defer closeWithin(t, ignoreError(cp.Close))
		var got int64
		if err := cp.QueryRow(`SELECT sum(length(data)) + count(*) FROM b`).Scan(&got); err != nil {
			t.Fatalf("%s: the copy: %v", step, err)
		}
		if got != want {
			t.Fatalf("%s: the copy of the files holds %d, the database %d: a commit was not in the file", step, got, want)
		}
	}
	fillBlobs(t, db, 0, 20, 20)
	check("20 rows in one transaction")
	mustExec(t, db, `UPDATE b SET data = x'02' WHERE id = 3`)
	check("one row updated")
	err := db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
		for j := 100; j < 400; j++ {
			if _, err := tx.Exec(ctx, `INSERT INTO b (id, data) VALUES (?, randomblob(3000))`, j); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE b SET data = randomblob(2000) WHERE id >= 100`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	check("a transaction larger than the page cache, its pages written twice")
}

// A page the map cannot serve is an error for the statement that read it,
// never a SIGBUS that ends the process: here the WAL is cut short by a
// program outside SQLite's locking while the WAL index and the map still
// hold its frames (the one case the map's size cannot see coming; a
// failing disk's EIO is the other, in the faultfs module's tests). The
// read that meets the missing frames fails, the process lives, and once
// the file is whole again, reads are right again.
func TestAPageTheMapCannotServeIsAnError(t *testing.T) {
	db, path := openDB(t, &sqlitedb.Options{ReadConns: 1, MemoryMap: true})
	mustExec(t, db, `CREATE TABLE b (id INTEGER PRIMARY KEY, data BLOB NOT NULL)`)
	mustExec(t, db, `CREATE TABLE t0 (n INTEGER)`)
	fillBlobs(t, db, 0, 300, 300)
	read := func() (string, int, error) {
		var sum string
		var n int
		err := db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
			var err error
			sum, n, err = digest(ctx, rxRows(rx))
			return err
		})
		return sum, n, err
	}
	want, n, err := read()
	if err != nil || n != 300 {
		t.Fatalf("the first read: %d rows, %v", n, err)
	}
	if !db.Stats().MappedWAL || mappedKiB(t, path+"-wal") == 0 {
		t.Fatal("the WAL is not read through the map: the test would prove nothing")
	}
	// A commit empties the reader's page cache; then the WAL is cut to
	// its header behind SQLite's back.
	mustExec(t, db, `INSERT INTO t0 VALUES (1)`)
	whole, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path+"-wal", 32); err != nil {
		t.Fatal(err)
	}
	if _, n, err := read(); err == nil {
		t.Fatalf("a read of frames cut from the WAL: %d rows and no error, want an error", n)
	} else {
		t.Logf("the read of the cut WAL: %v", err)
	}
	if err := os.WriteFile(path+"-wal", whole, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, n, err := read(); err != nil || got != want {
		t.Fatalf("a read once the WAL is whole again: %d rows, %v (same rows: %v)", n, err, got == want)
	}
}

// faultSink keeps the compiler from leaving out the faulting read.
var faultSink byte

// The SIGBUS handler the map's guarded copy installs passes every other
// SIGBUS to Go's: a fault of Go code on a map of its own is still Go's
// runtime.Error (with debug.SetPanicOnFault), as without the package.
func TestOtherFaultsStillReachGo(t *testing.T) {
	db, path := openDB(t, &sqlitedb.Options{MemoryMap: true})
	mustExec(t, db, `CREATE TABLE t (n INTEGER)`)
	if !db.Stats().MappedDatabase {
		t.Fatalf("%s is not mapped: the package's handler may not be installed", path)
	}
	f, err := os.CreateTemp(t.TempDir(), "fault")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := os.Getpagesize()
	if err := f.Truncate(int64(page)); err != nil {
		t.Fatal(err)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, 2*page, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	fault := func() (r any) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() { r = recover() }()
		faultSink = b[page] // past the end of the file: SIGBUS
		return nil
	}
	r := fault()
	addr, ok := r.(interface{ Addr() uintptr })
	if !ok {
		t.Fatalf("a fault past the end of a mapped file: recovered %v (%T), want Go's runtime.Error with its address", r, r)
	}
	if want := uintptr(unsafe.Pointer(&b[page])); addr.Addr() != want {
		t.Fatalf("the fault's address: %#x, want %#x", addr.Addr(), want)
	}
}
