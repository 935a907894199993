//go:build unix

package sqlitedb_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/loremnews/loremnews/sqlitedb/internal/faultvfs"
	"github.com/loremnews/loremnews/sqlitedb/internal/testenv"
)

// faultModes are the writer modes the fault tests run in: a transaction
// per write, and coalesced writes sharing one.
var faultModes = writerModes

// faultTemplateRows is how many rows the template database holds: some 25
// pages of table and a few of index, which a database just opened reads
// from the file as a write touches them.
const faultTemplateRows = 300

// faultUse registers the fault VFS over base.
func faultUse(t *testing.T, base string) {
	t.Helper()
	// The package registers its VFS when it opens its first database.
	openDB(t, nil)
	if err := faultvfs.Register(base); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(faultvfs.Disarm)
}

// faultTemplate makes a database of faultTemplateRows rows (table t: id,
// n, body, and an index on n) with SQLite's own VFS and returns its path.
// With walFrames > 0 a WAL of that many frames, never checkpointed, lies
// beside it, as a process that crashed leaves it: one frame per
// transaction, each rewriting one row's page, so a checkpoint of it copies
// only the few pages of the table.
func faultTemplate(t *testing.T, walFrames int) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "template.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?vfs=unix&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(db.Close))
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER NOT NULL, body BLOB NOT NULL)`,
		`CREATE INDEX t_n ON t (n)`,
		fmt.Sprintf(`INSERT INTO t (id, n, body) WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d)
			SELECT i, i, randomblob(300) FROM c`, faultTemplateRows),
		`PRAGMA wal_checkpoint(TRUNCATE)`,
		`PRAGMA wal_autocheckpoint = 0`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if walFrames == 0 {
		return path
	}
	for i := range walFrames {
		if _, err := db.Exec(`UPDATE t SET body = randomblob(300) WHERE id = ?`, i%faultTemplateRows+1); err != nil {
			t.Fatal(err)
		}
	}
	// Copied while the connection is open, so the WAL is not checkpointed
	// into the file.
	crashed := filepath.Join(t.TempDir(), "template.db")
	faultCopy(t, path, crashed)
	return crashed
}

// faultCopy copies the database file at from, with its WAL if it has one,
// to to.
func faultCopy(t *testing.T, from, to string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal"} {
		src, err := os.Open(from + suffix)
		if os.IsNotExist(err) && suffix != "" {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(to + suffix)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(dst, src)
		src.Close()
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// faultID is the first of the two rows write k inserts; faultRow is the
// template row it marks, setting its n to -(k+1).
func faultID(k int) int64  { return int64(10000 + 2*k) }
func faultRow(k int) int64 { return int64(k*53%faultTemplateRows + 1) }

// faultWrite is write k of the fault tests: three statements (insert a
// row, mark a template row, insert a second row), which the file shows
// committed together or not at all.
func faultWrite(k int) func(context.Context, *sqlitedb.Tx) error {
	return func(ctx context.Context, tx *sqlitedb.Tx) error {
		id := faultID(k)
		if _, err := tx.Exec(ctx, `INSERT INTO t (id, n, body) VALUES (?, ?, randomblob(300))`, id, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE t SET n = ? WHERE id = ?`, -(k + 1), faultRow(k)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO t (id, n, body) VALUES (?, ?, randomblob(300))`, id+1, id+1)
		return err
	}
}

// faultWrites runs writes 0 to 5: write 0 alone, then write 1 holding the
// writer's turn while writes 2 to 5 line up behind it in that order, so
// that coalesced, they commit in one batch. If write 1 cannot begin, 2 to
// 5 run one after the other. Each runs through m. It returns each write's
// result.
func faultWrites(t *testing.T, db *sqlitedb.DB, m writeMode) map[int]error {
	t.Helper()
	ctx := context.Background()
	results := make([]error, 6)
	results[0] = m.write(db, ctx, faultWrite(0))

	waiting := func() int64 { return int64(db.Stats().Writer.Depth) }
	before := waiting()
	running, hold, held := make(chan struct{}), make(chan struct{}), make(chan struct{})
	letGo := sync.OnceFunc(func() { close(hold) })
	defer letGo() // before the test's Close, if a wait below fails
	go func() {
		defer close(held)
		results[1] = m.write(db, ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
			close(running)
			<-hold
			return faultWrite(1)(ctx, tx)
		})
	}()
	select {
	case <-running:
		var wg sync.WaitGroup
		for k := 2; k < 6; k++ {
			wg.Go(func() { results[k] = m.write(db, ctx, faultWrite(k)) })
			waitFor(t, fmt.Sprintf("write %d waiting behind the one holding the turn", k), func() bool { return waiting()-before >= int64(k-1) })
		}
		letGo()
		select {
		case <-held:
		case <-time.After(within):
			t.Fatal("write 1 did not end once let go")
		}
		waitGroup(t, &wg, "the writes")
	case <-held: // its BEGIN failed
		for k := 2; k < 6; k++ {
			results[k] = m.write(db, ctx, faultWrite(k))
		}
	}
	out := make(map[int]error, len(results))
	for k, err := range results {
		out[k] = err
	}
	return out
}

// faultCheckpointWrites runs writes 0 and 1 on a DB opened on a WAL of
// 1,000 frames or more, so that the commit of the first to succeed wakes
// the package's checkpointer, which copies the WAL into the file from its
// own connection, and the commit of the next one, once that checkpoint
// ended, runs the writer's own finishing checkpoint.
//
// With held, a read holds a snapshot of the WAL as it was opened until
// that checkpoint has run, so it cannot copy write 0's frames: the
// checkpointer then flushes the file from its own connection (the step a
// complete checkpoint leaves to SQLite), and write 1's finishing
// checkpoint copies the rest.
func faultCheckpointWrites(t *testing.T, db *sqlitedb.DB, held bool) map[int]error {
	t.Helper()
	results := map[int]error{}
	release := func() {}
	if held {
		release = faultHoldSnapshot(t, db)
	}
	woken := false
	for k := range 2 {
		results[k] = db.Write(context.Background(), faultWrite(k))
		if results[k] == nil && !woken {
			woken = true
			waitFor(t, "the checkpointer's checkpoint", func() bool { return db.Stats().Checkpoints.Background > 0 })
			release()
			release = func() {}
		}
	}
	release()
	return results
}

// faultCheck opens the file at path with SQLite's own VFS, as a process
// started afterwards would, and checks it: PRAGMA integrity_check says
// ok, every template row is there, and each write k of results is in it,
// whole, if its result was nil. It answers the writes that are in it
// although their result was an error; the caller decides.
func faultCheck(t *testing.T, path string, results map[int]error, what string) (returnedErr []int) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?vfs=unix")
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(db.Close))
	var integrity string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("%s: integrity check of the file after the fault: %q, %v", what, integrity, err)
	}
	rows, err := db.Query(`SELECT id, n FROM t`)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	ns := map[int64]int64{}
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		ns[id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	marked := map[int64]bool{}
	for k, werr := range results {
		id := faultID(k)
		_, first := ns[id]
		_, second := ns[id+1]
		mark := ns[faultRow(k)] == int64(-(k + 1))
		marked[faultRow(k)] = true
		switch {
		case first != second || first != mark:
			t.Fatalf("%s: write %d is in the file in part (row %d: %v, row %d: %v, mark on row %d: %v); its result: %v",
				what, k, id, first, id+1, second, faultRow(k), mark, werr)
		case werr == nil && !first:
			t.Fatalf("%s: write %d returned nil and is not in the file", what, k)
		case werr != nil && first:
			returnedErr = append(returnedErr, k)
		}
	}
	for id := int64(1); id <= faultTemplateRows; id++ {
		n, ok := ns[id]
		if !ok || (!marked[id] && n != id) {
			t.Fatalf("%s: template row %d is missing or changed (n = %d, present %v)", what, id, n, ok)
		}
	}
	slices.Sort(returnedErr)
	return returnedErr
}

// faultCase is one position of a sweep.
type faultCase struct {
	mode       writeMode
	modeName   string
	dsn        string // parameters after vfs=faultvfs
	kind       faultvfs.Kind
	n          int  // 0: no fault, only count
	persistent bool // every call from the nth on, not the nth alone
	checkpoint bool // faultCheckpointWrites, and Close, with the fault armed
	held       bool // faultCheckpointWrites with a snapshot held
}

func (c faultCase) String() string {
	if c.n == 0 {
		return c.modeName + " without a fault"
	}
	how := "transient"
	if c.persistent {
		how = "persistent"
	}
	return fmt.Sprintf("%s, %s fault at call %d, %s", c.modeName, c.kind, c.n, how)
}

// faultOutcome is what one position did.
type faultOutcome struct {
	calls    faultvfs.Calls // counted while the fault was armed
	results  map[int]error  // each write's result, the later ones' too
	acked    int            // writes of the workload that returned nil
	failed   int            // and that returned an error
	closeErr error          // Close's, when it ran armed
	ckErrors int64          // the checkpointer's checkpoints that failed
	// crashedIn are the writes that returned an error and are in a copy of
	// the files made right after them, before anything else was written: a
	// process killed then would find them committed.
	crashedIn []int
}

// faultRun runs one position: a fresh copy of template, opened through the
// fault VFS; the fault armed for writes 0 to 5 (faultWrites), or for
// faultCheckpointWrites and Close; then disarmed. Each write that failed
// must have failed with the fault's error. Unless Close ran armed, a copy
// of the files made then must hold every write acknowledged (and those
// that failed and are in it anyway are answered), and the same DB must
// then take a write, show it, and close without an error. The file must
// then hold exactly the writes acknowledged, whole, and a DB opened on it
// again must take a write.
func faultRun(t *testing.T, template string, c faultCase) faultOutcome {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "fault.db")
	faultCopy(t, template, path)
	db, err := sqlitedb.Open(ctx, "file:"+path+"?vfs="+faultvfs.Name+c.dsn, nil)
	if err != nil {
		t.Fatalf("%s: open: %v", c, err)
	}
	defer closeWithin(t, ignoreError(db.Close)) // if the test fails first
	if c.checkpoint {
		// The writer's finishing step once the WAL holds 1,000 frames,
		// not 40,000, so each position copies a small WAL.
		db.SetWALFinishFramesForTest(1000)
	}
	if c.n > 0 {
		faultvfs.Arm(c.kind, c.n, c.persistent)
	} else {
		faultvfs.Reset()
	}
	var results map[int]error
	if c.checkpoint {
		results = faultCheckpointWrites(t, db, c.held)
	} else {
		results = faultWrites(t, db, c.mode)
	}
	var out faultOutcome
	closed := false
	if c.checkpoint {
		out.ckErrors = db.Stats().Checkpoints.Errors
		out.closeErr = db.Close()
		closed = true
	}
	out.calls = faultvfs.Counts()
	faultvfs.Disarm()
	for k, err := range results {
		if err == nil {
			out.acked++
			continue
		}
		out.failed++
		// The error is the disk's, as the fault VFS answered it: never
		// "database disk image is malformed", nor any other.
		if code := sqlitedb.ErrorCode(err); c.n == 0 || code != c.kind.Code() {
			t.Fatalf("%s: write %d failed with %v (SQLite code %d), want the fault's code %d", c, k, err, code, c.kind.Code())
		}
	}

	if !closed {
		// A copy of the files now is what a process that died here would
		// leave: it too must hold exactly the writes acknowledged.
		crashed := filepath.Join(dir, "crashed.db")
		faultCopy(t, path, crashed)
		out.crashedIn = faultCheck(t, crashed, results, c.String()+", a copy made then")

		// The fault has cleared: the same DB takes a write and reads it.
		if err := db.Write(ctx, faultWrite(50)); err != nil {
			t.Fatalf("%s: a write after the fault cleared: %v", c, err)
		}
		if n := queryInt(t, db, `SELECT count(*) FROM t WHERE id = ?`, faultID(50)); n != 1 {
			t.Fatalf("%s: a write after the fault cleared returned nil and is not visible", c)
		}
		results[50] = nil
		if err := db.Close(); err != nil {
			t.Fatalf("%s: close after the fault cleared: %v", c, err)
		}
	}
	if n := faultvfs.OpenFiles(); n != 0 {
		t.Fatalf("%s: %d files still open through the VFS after Close", c, n)
	}
	if in := faultCheck(t, path, results, c.String()); len(in) > 0 {
		t.Fatalf("%s: writes %v returned an error and are in the file", c, in)
	}
	out.results = results

	// Opened again, the file takes writes.
	db, err = sqlitedb.Open(ctx, path, nil)
	if err != nil {
		t.Fatalf("%s: open again: %v", c, err)
	}
	defer closeWithin(t, ignoreError(db.Close))
	if err := db.Write(ctx, faultWrite(60)); err != nil {
		t.Fatalf("%s: a write after opening the file again: %v", c, err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("%s: close after opening the file again: %v", c, err)
	}
	return out
}

// faultSweep runs c at every position of each kind in turn: the nth call
// of the kind failing, transient and persistent, for n from 1 to the
// count of a run without a fault, and one past it. With sameAsUnix, each
// position runs again with the fault VFS over SQLite's own VFS instead of
// the package's, and must end the same: the same calls, and each write the
// same result.
func faultSweep(t *testing.T, template string, c faultCase, kinds []faultvfs.Kind, sameAsUnix bool) {
	t.Helper()
	clean := faultRun(t, template, c)
	if clean.failed > 0 {
		t.Fatalf("%s: %d writes failed without a fault: %v", c, clean.failed, clean.results)
	}
	for _, kind := range kinds {
		total := int(clean.calls.Of(kind))
		if total == 0 {
			t.Logf("%s: no %s calls to fail", c, kind)
			continue
		}
		var fired, acked, failed, closeFailed, ckFailed int
		var crashedIn []string
		for n := 1; n <= total+1; n++ {
			for _, persistent := range []bool{false, true} {
				c := c
				c.kind, c.n, c.persistent = kind, n, persistent
				o := faultRun(t, template, c)
				if o.calls.Injected > 0 {
					fired++
				}
				acked += o.acked
				failed += o.failed
				if o.closeErr != nil {
					closeFailed++
				}
				if o.ckErrors > 0 {
					ckFailed++
				}
				if len(o.crashedIn) > 0 {
					crashedIn = append(crashedIn, fmt.Sprintf("%s: writes %v (%v)", c, o.crashedIn, o.results[o.crashedIn[0]]))
				}
				if sameAsUnix {
					faultCompareUnix(t, template, c, o)
				}
			}
		}
		t.Logf("%s faults at calls 1 to %d: %d of %d positions failed a call; %d writes acknowledged, %d failed; "+
			"the checkpointer's checkpoints failed in %d positions, Close in %d",
			kind, total+1, fired, 2*(total+1), acked, failed, ckFailed, closeFailed)
		if fired < 2*total {
			t.Errorf("%s: %s faults fired in %d of the %d positions within a run's calls", c.modeName, kind, fired, 2*total)
		}
		if c.checkpoint && ckFailed == 0 {
			t.Errorf("%s: no %s fault reached the checkpointer's checkpoints", c.modeName, kind)
		}
		if len(crashedIn) > 0 {
			t.Errorf("%s, %s faults: a write returned an error, yet a copy of the files made right after it (what a process killed then leaves) has it committed, at %d positions:\n\t%s",
				c.modeName, kind, len(crashedIn), strings.Join(crashedIn, "\n\t"))
		}
	}
}

// faultCompareUnix runs c again over SQLite's own VFS and fails the test
// if it did not end as o, the run over the package's VFS, did.
func faultCompareUnix(t *testing.T, template string, c faultCase, o faultOutcome) {
	t.Helper()
	if err := faultvfs.Register("unix"); err != nil {
		t.Fatal(err)
	}
	u := faultRun(t, template, c)
	if err := faultvfs.Register("sqlitedb"); err != nil {
		t.Fatal(err)
	}
	if u.calls != o.calls {
		t.Errorf("%s: calls over the package's VFS %+v, over SQLite's %+v", c, o.calls, u.calls)
	}
	for k, err := range o.results {
		if got, want := sqlitedb.ErrorCode(err), sqlitedb.ErrorCode(u.results[k]); got != want || (err == nil) != (u.results[k] == nil) {
			t.Errorf("%s: write %d over the package's VFS: %v; over SQLite's: %v", c, k, err, u.results[k])
		}
	}
}

// A write returns nil exactly when it committed, whichever call of its
// transactions to the disk fails: every read, write, sync and size query
// in turn, failing once (transient) or from then on (persistent), and every
// write again as a full disk, with and without group commit. The write
// fails with the disk's error; the file is never corrupt and never holds
// part of a write, neither once the DB closed nor in a copy made right
// after the writes (what a process killed then leaves); and the DB takes
// writes again once the fault clears (after a persistent fault too), and
// once opened again. Syncs are swept with synchronous=FULL too, where each
// commit syncs the WAL. Each position ends exactly as it does with
// SQLite's own VFS under the fault layer.
func TestFaultWrites(t *testing.T) {
	faultUse(t, "sqlitedb")
	template := faultTemplate(t, 0)
	kinds := []faultvfs.Kind{faultvfs.Read, faultvfs.Write, faultvfs.Full, faultvfs.Sync, faultvfs.FileSize}
	for _, m := range faultModes {
		t.Run(m.name, func(t *testing.T) {
			t.Run("synchronous=NORMAL", func(t *testing.T) {
				faultSweep(t, template, faultCase{mode: m, modeName: m.name}, kinds, true)
			})
			t.Run("synchronous=FULL", func(t *testing.T) {
				c := faultCase{mode: m, modeName: m.name + ", synchronous=FULL", dsn: "&_pragma=synchronous(FULL)"}
				faultSweep(t, template, c, []faultvfs.Kind{faultvfs.Sync}, true)
			})
		})
	}
}

// Checkpoints lose nothing acknowledged, whichever of their calls to the
// disk fails: the package's checkpointer copying a WAL of 1,000 frames from
// its own connection (and, when a reader's snapshot keeps it from copying
// everything, flushing the file itself), the writer's finishing checkpoint
// after it, and
// Close's, which truncates the WAL, with every read, write, sync,
// truncation and size query failing in turn, transient or persistent. Close
// may report the failure; the file, opened again, holds every acknowledged
// write and none that failed.
func TestFaultCheckpoint(t *testing.T) {
	faultUse(t, "sqlitedb")
	template := faultTemplate(t, 1000)
	kinds := []faultvfs.Kind{faultvfs.Read, faultvfs.Write, faultvfs.Full, faultvfs.Sync, faultvfs.Truncate, faultvfs.FileSize}
	for _, m := range faultModes {
		t.Run(m.name, func(t *testing.T) {
			c := faultCase{mode: m, modeName: m.name, checkpoint: true}
			faultSweep(t, template, c, kinds, false)
			c.modeName, c.dsn = m.name+", synchronous=FULL", "&_pragma=synchronous(FULL)"
			faultSweep(t, template, c, []faultvfs.Kind{faultvfs.Sync, faultvfs.Truncate}, false)
			c = faultCase{mode: m, modeName: m.name + ", a snapshot held", checkpoint: true, held: true}
			faultSweep(t, template, c, []faultvfs.Kind{faultvfs.Sync, faultvfs.Write}, false)
		})
	}
}

// A full disk, a real one: on a tmpfs of 1 MiB, writers insert rows of 2
// KiB until the disk is full and the writes fail, and a checkpoint fails
// for want of room to copy the WAL into the file. Each write that returned
// nil is in the file and no other, both in a copy of the files made while
// the DB is still open (what a process killed then leaves) and in the
// file itself once the disk has room again and the DB took another write
// and closed; the file is never corrupt. Needs root, to mount.
func TestFaultDiskFull(t *testing.T) {
	for _, m := range faultModes {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			dir := faultTmpfs(t)
			path := filepath.Join(dir, "full.db")
			db, err := sqlitedb.Open(ctx, path, &sqlitedb.Options{Setup: func(ctx context.Context, conn *sql.Conn) error {
				_, err := conn.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`)
				return err
			}})
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			t.Cleanup(func() { // before the umount
				if !closed {
					db.Close()
				}
			})

			// Four writers until 40 writes have failed.
			results := map[int64]error{}
			var mu sync.Mutex
			var next, failures atomic.Int64
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for failures.Load() < 40 && next.Load() < 5000 {
						id := next.Add(1)
						err := m.write(db, ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
							_, err := tx.Exec(ctx, `INSERT INTO t (id, body) VALUES (?, randomblob(2000))`, id)
							return err
						})
						if err != nil {
							failures.Add(1)
						}
						mu.Lock()
						results[id] = err
						mu.Unlock()
					}
				})
			}
			waitGroup(t, &wg, "the writers to fill the disk")
			acked := 0
			for id, err := range results {
				if err == nil {
					acked++
				} else if code := sqlitedb.ErrorCode(err); code != 13 { // SQLITE_FULL
					t.Errorf("write of row %d on a full disk failed with %v (SQLite code %d), want SQLITE_FULL", id, err, code)
				}
			}
			if failures.Load() == 0 {
				t.Fatalf("%d writes and the disk is not full", len(results))
			}
			t.Logf("%d writes returned nil, %d failed with SQLITE_FULL", acked, failures.Load())

			// A checkpoint on the full disk, from a connection of another
			// VFS (as another process would run one): copying the WAL into
			// the database file needs room the disk does not have.
			other, err := sql.Open("sqlite3", "file:"+path+"?vfs=unix")
			if err != nil {
				t.Fatal(err)
			}
			_, err = other.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
			other.Close()
			t.Logf("a checkpoint on the full disk: %v", err)

			// A copy of the files while the DB is open. A read holding its
			// snapshot keeps the checkpointer's idle checkpoint from
			// truncating the WAL in the middle of the copy.
			release := faultHoldSnapshot(t, db)
			crashed := filepath.Join(t.TempDir(), "crashed.db")
			faultCopy(t, path, crashed)
			release()
			faultFullCheck(t, crashed, results, "a copy of the full disk's files")

			// Room again: the same DB takes a write, and closes.
			if out, err := asRoot("mount", "-o", "remount,size=4m,mode=1777", dir).CombinedOutput(); err != nil {
				t.Fatalf("remount with 4 MiB: %v: %s", err, out)
			}
			after := next.Add(1)
			err = m.write(db, ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO t (id, body) VALUES (?, randomblob(2000))`, after)
				return err
			})
			if err != nil {
				t.Fatalf("a write once the disk had room again: %v", err)
			}
			results[after] = nil
			if n := queryInt(t, db, `SELECT count(*) FROM t WHERE id = ?`, after); n != 1 {
				t.Fatalf("the write once the disk had room again returned nil and is not visible")
			}
			closed = true
			if err := db.Close(); err != nil {
				t.Fatalf("close once the disk had room again: %v", err)
			}
			faultFullCheck(t, path, results, "the file once the disk had room again")
		})
	}
}

// faultHoldSnapshot starts a read that reads, so it holds a snapshot, and
// keeps it until the returned function is called.
func faultHoldSnapshot(t *testing.T, db *sqlitedb.DB) (release func()) {
	t.Helper()
	inside, hold, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	letGo := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(letGo)
	go func() {
		done <- db.Read(context.Background(), func(ctx context.Context, rx *sqlitedb.Rx) error {
			var n int64
			if err := rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil {
				return err
			}
			close(inside)
			<-hold
			return nil
		})
	}()
	select {
	case <-inside:
	case err := <-done:
		t.Fatalf("a read to hold a snapshot: %v", err)
	}
	return func() {
		letGo()
		if err := receive(t, done, "the read holding a snapshot"); err != nil {
			t.Fatalf("the read holding a snapshot: %v", err)
		}
	}
}

// faultFullCheck opens the file at path with SQLite's own VFS and checks
// that it is intact and holds the rows of table t whose write returned
// nil in results, and no other.
func faultFullCheck(t *testing.T, path string, results map[int64]error, what string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?vfs=unix")
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(db.Close))
	var integrity string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("%s: integrity check: %q, %v", what, integrity, err)
	}
	rows, err := db.Query(`SELECT id FROM t`)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	present := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		present[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for id, err := range results {
		if err == nil && !present[id] {
			t.Errorf("%s: write of row %d returned nil and the row is not there", what, id)
		} else if err != nil && present[id] {
			t.Errorf("%s: write of row %d returned %v and the row is there", what, id, err)
		}
	}
	for id := range present {
		if _, ok := results[id]; !ok {
			t.Errorf("%s: row %d is there and no write inserted it", what, id)
		}
	}
}

// A full disk in the middle of transactions larger than the page cache
// (cache_size=10, so pages spill into the WAL before the commit and are
// read back from it). Each transaction inserts its rows five at a time,
// each group in a savepoint, and goes on past a group that fails (rolled
// back to its savepoint), as a program that skips what does not fit
// would. SQLite then commits the groups that succeeded. This holds only if
// every write that failed was reported by the call that made it: a write
// reported late, by a later read, would fail the wrong statement, and
// SQLite would commit pages whose frames never reached the WAL. Every row
// of a group that succeeded in a transaction whose Write returned nil must
// be in a copy of the files and in the file afterwards. Needs root.
func TestFaultDiskFullMidTransaction(t *testing.T) {
	for _, m := range faultModes {
		t.Run(m.name, func(t *testing.T) {
			ctx := context.Background()
			dir := faultTmpfs(t)
			path := filepath.Join(dir, "full.db")
			db, err := sqlitedb.Open(ctx, path, &sqlitedb.Options{
				Pragmas: []sqlitedb.Pragma{{Name: "cache_size", Value: "10"}},
				Setup: func(ctx context.Context, conn *sql.Conn) error {
					_, err := conn.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`)
					return err
				}})
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			t.Cleanup(func() {
				if !closed {
					db.Close()
				}
			})
			results := map[int64]error{} // by row: its Write's result, for rows whose group succeeded
			failedGroups, failedWrites := 0, 0
			for w := int64(0); w < 60 && failedGroups+failedWrites < 30; w++ {
				var inserted []int64
				err := m.write(db, ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
					inserted = inserted[:0]
					for g := int64(0); g < 20; g++ {
						if _, err := tx.Exec(ctx, `SAVEPOINT g`); err != nil {
							return err
						}
						first := w*1000 + g*5
						_, err := tx.Exec(ctx, `WITH RECURSIVE c(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM c WHERE i < ?)
							INSERT INTO t (id, body) SELECT i, randomblob(1500) FROM c`, first, first+4)
						if err == nil { // read back the transaction's rows: pages spilled to the WAL
							var n int64
							err = tx.QueryRow(ctx, `SELECT count(length(body)) FROM t WHERE id >= ?`, w*1000).Scan(&n)
						}
						if err != nil {
							failedGroups++
							if _, rerr := tx.Exec(ctx, `ROLLBACK TO g`); rerr != nil {
								return err // the whole transaction was rolled back
							}
						} else {
							inserted = append(inserted, first, first+1, first+2, first+3, first+4)
						}
						if _, err := tx.Exec(ctx, `RELEASE g`); err != nil {
							return err
						}
					}
					return nil
				})
				for _, id := range inserted {
					results[id] = err
				}
				if err != nil {
					failedWrites++
				}
			}
			if failedGroups+failedWrites == 0 {
				t.Fatal("the disk never filled")
			}
			acked := 0
			for _, err := range results {
				if err == nil {
					acked++
				}
			}
			t.Logf("%d rows acknowledged, %d groups and %d writes failed", acked, failedGroups, failedWrites)
			release := faultHoldSnapshot(t, db)
			crashed := filepath.Join(t.TempDir(), "crashed.db")
			faultCopy(t, path, crashed)
			release()
			faultFullCheck(t, crashed, results, "a copy of the full disk's files")
			if out, err := asRoot("mount", "-o", "remount,size=4m,mode=1777", dir).CombinedOutput(); err != nil {
				t.Fatalf("remount with 4 MiB: %v: %s", err, out)
			}
			closed = true
			if err := db.Close(); err != nil {
				t.Fatalf("close once the disk had room again: %v", err)
			}
			faultFullCheck(t, path, results, "the file once the disk had room again")
		})
	}
}

// faultTmpfs mounts a tmpfs of 1 MiB on a new directory, unmounted when
// the test ends, and answers the directory. Mounting needs root, or sudo
// without a password.
func faultTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 && exec.Command("sudo", "-n", "true").Run() != nil {
		testenv.Missing(t, "needs root (or sudo without a password), to mount a tmpfs of 1 MiB")
	}
	dir := t.TempDir()
	if out, err := asRoot("mount", "-t", "tmpfs", "-o", "size=1m,mode=1777", "tmpfs", dir).CombinedOutput(); err != nil {
		testenv.Missing(t, "cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := asRoot("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// asRoot is the command name args, run as root: directly when the test
// runs as root, else through sudo -n.
func asRoot(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command(name, args...)
	}
	return exec.Command("sudo", append([]string{"-n", name}, args...)...)
}
