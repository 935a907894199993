//go:build unix

package sqlitedb_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/loremnews/loremnews/sqlitedb/internal/faultvfs"
)

// A COMMIT whose fsync fails (synchronous=FULL) may leave its frames
// complete in the WAL; the void that keeps recovery from replaying them
// waits for SQLite's write lock like any write, even when another
// connection takes it the moment the COMMIT failed. Such writes are
// reported failed, and none of them is in a copy of the files made right
// after (what kill -9 leaves).
func TestAFailedCommitIsVoidedWhileTheLockIsTaken(t *testing.T) {
	ctx := context.Background()
	db, path := openVoidDB(t)
	other, err := sql.Open("sqlite3", "file:"+path+"?vfs=unix&_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(other.Close))
	other.SetMaxOpenConns(1)
	if err := other.Ping(); err != nil {
		t.Fatal(err)
	}

	// Until three voids found the lock taken (the other connection does not
	// always win the race for it), at most 200 writes.
	hits, writes := 0, 0
	for ; hits < 3 && writes < 200; writes++ {
		k := writes
		retriesBefore := db.Stats().BusyRetries
		var spin sync.WaitGroup
		err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO t (n) VALUES (?)`, k); err != nil {
				return err
			}
			// Another connection asks for the write lock without pause,
			// takes it the moment this transaction lets go of it, and
			// holds it for 20 ms without writing.
			spin.Go(func() {
				deadline := time.Now().Add(within)
				for time.Now().Before(deadline) {
					if _, err := other.Exec(`BEGIN IMMEDIATE`); err == nil {
						time.Sleep(20 * time.Millisecond)
						other.Exec(`ROLLBACK`)
						return
					} else if !sqlitedb.IsBusy(err) {
						t.Errorf("the other connection's BEGIN IMMEDIATE: %v", err)
						return
					}
				}
				t.Errorf("the other connection never got the write lock in %v", within)
			})
			faultvfs.Arm(faultvfs.Sync, 1, false) // the COMMIT's fsync of the WAL
			return nil
		})
		spin.Wait()
		faultvfs.Disarm()
		if code := sqlitedb.ErrorCode(err); code != faultvfs.Sync.Code() {
			t.Fatalf("write %d, whose COMMIT's fsync failed: %v (code %d), want the fsync's error", k, err, code)
		}
		if db.Stats().BusyRetries > retriesBefore {
			hits++
		}
		// What a process killed now would leave (the next write's frames
		// would overwrite these): the write must not be in it.
		if n := faultRowsInCopy(t, path, `SELECT count(*) FROM t`); n != 0 {
			t.Fatalf("write %d, reported failed, is in a copy of the files made right after (%d rows)", k, n)
		}
	}
	if hits < 3 {
		t.Fatalf("in %d writes, %d voids found the lock taken, want 3: the test did not test what it is for", writes, hits)
	}
	// The writer goes on.
	mustExec(t, db, `INSERT INTO t (n) VALUES (100)`)
}

// When the void cannot run (the disk keeps failing), no write commits
// until it has: each is refused, saying why, and none is acknowledged
// above frames a crash would bring back. Once the disk recovers, the next
// write voids them first, then commits.
func TestWritesStopUntilAFailedCommitIsVoided(t *testing.T) {
	ctx := context.Background()
	db, path := openVoidDB(t)
	faultvfs.Arm(faultvfs.Sync, 1, true)
	if err := db.Write(ctx, insert(1)); sqlitedb.ErrorCode(err) != faultvfs.Sync.Code() {
		t.Fatalf("a write whose COMMIT's fsync failed: %v, want the fsync's error", err)
	}
	err := db.Write(ctx, insert(2))
	if err == nil || !strings.Contains(err.Error(), "not writing until it is voided") {
		t.Fatalf("a write while the failed COMMIT is not voided: %v, want a refusal saying so", err)
	}
	faultvfs.Disarm()
	if err := db.Write(ctx, insert(3)); err != nil {
		t.Fatalf("a write once the disk recovered: %v", err)
	}
	if got := queryInts(t, db, `SELECT n FROM t`); len(got) != 1 || got[0] != 3 {
		t.Fatalf("rows %v, want [3]", got)
	}
	if n := faultRowsInCopy(t, path, `SELECT count(*) FROM t WHERE n <> 3`); n != 0 {
		t.Fatalf("%d rows of failed writes in a copy of the files, want 0", n)
	}
}

// openVoidDB opens a database with table t through the fault VFS over
// the package's, with synchronous=FULL (each COMMIT syncs the WAL), closed
// when the test ends.
func openVoidDB(t *testing.T) (*sqlitedb.DB, string) {
	t.Helper()
	faultUse(t, "sqlitedb")
	path := filepath.Join(t.TempDir(), "void.db")
	db, err := sqlitedb.Open(context.Background(), "file:"+path+"?vfs="+faultvfs.Name+"&_pragma=synchronous(FULL)", &sqlitedb.Options{Timeout: within})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(t, ignoreError(db.Close)) })
	createT(t, db)
	return db, path
}

// faultRowsInCopy copies the database at path with its WAL, as a process
// killed now leaves them, opens the copy with SQLite's own VFS (recovery
// rebuilds the WAL's index from the file) and answers count, a query of
// one integer.
func faultRowsInCopy(t *testing.T, path, count string) int64 {
	t.Helper()
	crashed := filepath.Join(t.TempDir(), "crashed.db")
	faultCopy(t, path, crashed)
	check, err := sql.Open("sqlite3", "file:"+crashed+"?vfs=unix")
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(check.Close))
	var n int64
	if err := check.QueryRow(count).Scan(&n); err != nil {
		t.Fatalf("%s in a copy of the files: %v", count, err)
	}
	return n
}

// After one failed sync during a checkpoint, no checkpoint of the DB
// completes — the background ones, the idle truncation, Close's and
// SQLite's own at close — so the WAL keeps every frame for the next open
// to copy again; and this is not silent: Stats says so, and Close returns
// ErrSyncFailed. Writes and reads go on meanwhile, and the file opened
// again holds every acknowledged write.
func TestAFailedSyncStopsEveryCheckpoint(t *testing.T) {
	faultUse(t, "sqlitedb")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "stop.db")
	faultCopy(t, faultTemplate(t, 1200), path)
	db, err := sqlitedb.Open(ctx, "file:"+path+"?vfs="+faultvfs.Name, &sqlitedb.Options{Timeout: within})
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, ignoreError(db.Close))
	db.SetWALFinishFramesForTest(1000)
	// The first sync after this one write is the checkpointer's, which the
	// write wakes: the WAL holds 1,200 frames.
	faultvfs.Arm(faultvfs.Sync, 1, false)
	if err := db.Write(ctx, faultWrite(0)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the checkpoint's failed sync", func() bool { return db.Stats().Checkpoints.Stopped != "" })
	faultvfs.Disarm()
	if s := db.Stats().Checkpoints.Stopped; !strings.Contains(s, "sync") || strings.Contains(s, "counting frames as copied") {
		t.Errorf("Stats().Checkpoints.Stopped = %q, want it to name the failed sync, and the WAL index's count of copied frames set back to zero", s)
	}
	for k := 1; k <= 300; k++ {
		if err := db.Write(ctx, faultWrite(k)); err != nil {
			t.Fatalf("write %d after the failed sync: %v", k, err)
		}
	}
	wal := walSize(t, path)
	time.Sleep(3 * time.Second) // past the idle truncation's 2 s
	if got := walSize(t, path); got < wal || got == 0 {
		t.Fatalf("the WAL went from %d to %d bytes with checkpoints stopped", wal, got)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM t WHERE id >= 10000`); n != 2*301 {
		t.Fatalf("%d rows written, want %d", n, 2*301)
	}
	if err := db.Close(); !errors.Is(err, sqlitedb.ErrSyncFailed) {
		t.Fatalf("Close after a failed sync: %v, want ErrSyncFailed", err)
	}
	if got := walSize(t, path); got < wal {
		t.Fatalf("the WAL is %d bytes after Close, was %d: it was checkpointed or deleted at close", got, wal)
	}
	// Opened again, the whole WAL is copied again, and every write is there.
	db, err = sqlitedb.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM t WHERE id >= 10000`); n != 2*301 {
		t.Fatalf("%d rows after opening again, want %d", n, 2*301)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close after opening again: %v", err)
	}
	if got := walSize(t, path); got != 0 {
		t.Fatalf("the WAL is %d bytes after a clean close, want 0", got)
	}
}
