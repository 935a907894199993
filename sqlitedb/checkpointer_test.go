package sqlitedb_test

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews/sqlitedb"
)

// pageSize is SQLite's default page size, and so the size of a WAL frame
// (plus its 24-byte header).
const pageSize = 4096

// walHardLimit is the WAL's size, in frames, past which the writer
// checkpoints inline: a WAL that reaches it is one the checkpointer did
// not keep small. (How far below it the WAL stays depends on how long a
// checkpoint takes on the machine, while writes go on.)
const walHardLimit = 60000

// readUntilStopped runs read in a loop on n goroutines until the returned
// function is called, which waits for them; a failed read fails the test.
func readUntilStopped(t *testing.T, n int, read func() error) (stop func()) {
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range n {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := read(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	var once sync.Once
	stop = func() { once.Do(func() { close(done); waitGroup(t, &readers, "the readers to stop") }) }
	t.Cleanup(stop)
	return stop
}

// writeRows inserts n rows of about a page each, one write each, and
// returns the largest WAL seen meanwhile and how many times the WAL
// started over from its beginning.
func writeRows(t *testing.T, db *sqlitedb.DB, path string, n int) (largestWAL int64, restarts uint32) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		err := db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO t (n, body) VALUES (?, randomblob(3000))`, i)
			return err
		})
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if i%100 == 0 {
			largestWAL = max(largestWAL, walSize(t, path))
		}
	}
	return max(largestWAL, walSize(t, path)), walRestarts(t, path)
}

// walRestarts reads the checkpoint sequence number in the WAL's header,
// which the writing connection increments each time it starts the WAL
// over from its beginning (https://sqlite.org/fileformat.html#wal_file_format).
func walRestarts(t *testing.T, path string) uint32 {
	t.Helper()
	f, err := os.Open(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var hdr [16]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		t.Fatalf("read the WAL header: %v", err)
	}
	return binary.BigEndian.Uint32(hdr[12:])
}

// With no reader in the way, the background checkpoints keep the WAL
// copied as it grows, and once it holds 40,000 frames the few frames the
// writer copies after the next one complete it, and the next write starts
// the WAL over from its beginning: one finishing step a cycle, and the WAL
// never gets near the hard limit. SQLite's automatic checkpoints are off
// on the write connection; only the package's ran.
func TestCheckpointerStartsTheWALOver(t *testing.T) {
	db, path := openDB(t, nil)
	mustExec(t, db, `CREATE TABLE t (seq INTEGER PRIMARY KEY AUTOINCREMENT, n INTEGER NOT NULL, body BLOB)`)
	// About four frames a write: some 128,000 frames in all, which would
	// make a WAL of 500 MB if it never started over.
	const writes = 32000
	largest, restarts := writeRows(t, db, path, writes)
	s := db.Stats().Checkpoints
	t.Logf("largest WAL seen: %d bytes; started over %d times; checkpoints %+v", largest, restarts, s)
	if s.Background == 0 || s.Errors != 0 {
		t.Errorf("checkpoints %+v; want some in the background, none failed", s)
	}
	if restarts < 2 {
		t.Errorf("the WAL started over %d times in %d writes, want at least 2", restarts, writes)
	}
	// One finishing step a cycle, each after background checkpoints that
	// left it only the frames of their last moments: none that failed to
	// start the WAL over.
	if s.Inline > int64(restarts)+1 || s.Inline == 0 || s.Background < s.Inline {
		t.Errorf("%d background checkpoints and %d finishing steps for %d times the WAL started over; want one finishing step per time, after background ones",
			s.Background, s.Inline, restarts)
	}
	if limit := int64(walHardLimit * (pageSize + 24)); largest >= limit {
		t.Errorf("the WAL grew to %d bytes, to the hard limit's %d", largest, limit)
	}
	if got := autocheckpoint(t, db); got != 0 {
		t.Errorf("wal_autocheckpoint on the write connection is %d, want 0 (the checkpointer's WAL hook replaces it)", got)
	}
}

// With readers busy all along, each holding a snapshot that keeps a
// checkpoint from copying the frames committed since, the WAL still starts
// over again and again, far from the hard limit; once writes stop, it is
// truncated to nothing; and every write is in the database.
//
// The readers pause between reads, as a server's do between requests.
// Readers that never pause can starve checkpoints, SQLite's own too
// (https://sqlite.org/wal.html#avoiding_excessively_large_wal_files): the
// WAL may then grow to the hard limit.
func TestCheckpointerKeepsTheWALSmall(t *testing.T) {
	ctx := context.Background()
	db, path := openDB(t, nil)
	mustExec(t, db, `CREATE TABLE t (seq INTEGER PRIMARY KEY AUTOINCREMENT, n INTEGER NOT NULL, body BLOB)`)
	stopReaders := readUntilStopped(t, 4, func() error {
		err := db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
			var n int
			return rx.QueryRow(ctx, `SELECT count(*) FROM (SELECT n FROM t ORDER BY seq DESC LIMIT 10)`).Scan(&n)
		})
		time.Sleep(100 * time.Microsecond)
		return err
	})
	const writes = 32000
	largest, restarts := writeRows(t, db, path, writes)
	stopReaders()

	s := db.Stats().Checkpoints
	t.Logf("largest WAL seen: %d bytes; started over %d times; checkpoints %+v", largest, restarts, s)
	if s.Background == 0 || s.Errors != 0 {
		t.Errorf("checkpoints %+v; want some in the background, none failed", s)
	}
	if restarts < 2 {
		t.Errorf("the WAL started over %d times in %d writes, want at least 2", restarts, writes)
	}
	if limit := int64(walHardLimit * (pageSize + 24)); largest >= limit {
		t.Errorf("the WAL grew to %d bytes, to the hard limit's %d", largest, limit)
	}
	waitFor(t, "the WAL to be truncated once writes stopped", func() bool {
		return walSize(t, path) == 0 && db.Stats().Checkpoints.Truncates > 0
	})
	if got := queryInt(t, db, `SELECT count(*) FROM t`); got != writes {
		t.Fatalf("%d rows after the checkpoints, want %d", got, writes)
	}
	if got := queryInt(t, db, `SELECT count(*) FROM pragma_integrity_check WHERE integrity_check != 'ok'`); got != 0 {
		t.Fatal("integrity check failed")
	}
}

// autocheckpoint is PRAGMA wal_autocheckpoint on the write connection: 0
// when another WAL hook replaced SQLite's automatic checkpoints.
func autocheckpoint(t *testing.T, db *sqlitedb.DB) int {
	t.Helper()
	var n int
	err := db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
		return tx.QueryRow(ctx, `PRAGMA wal_autocheckpoint`).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Two DBs on one file (as two processes would be) each run a checkpointer
// of their own, signalled by their own writer's count of frames since its
// own last checkpoint. Each looks first at what the other's checkpoints
// copied: a signal that finds the WAL copied already runs none, so the
// file is checkpointed about as often as one DB alone would, not twice as
// often; and the WAL still starts over, far from the hard limit, with
// every write in the database.
func TestTwoDBsOnOneFileCheckpointItOnceForBoth(t *testing.T) {
	a, path := openDB(t, nil)
	b := openMore(t, path, nil)
	mustExec(t, a, `CREATE TABLE t (seq INTEGER PRIMARY KEY AUTOINCREMENT, n INTEGER NOT NULL, body BLOB)`)
	// About four frames a write, in turns of 100 writes each: some 64,000
	// frames, enough for 64 checkpoints of walCheckpointFrames.
	const writes, turn = 16000, 100
	var largest int64
	for i := 0; i < writes; i += turn {
		db := a
		if i/turn%2 == 1 {
			db = b
		}
		l, _ := writeRows(t, db, path, turn)
		largest = max(largest, l)
	}
	restarts := walRestarts(t, path)
	sa, sb := a.Stats().Checkpoints, b.Stats().Checkpoints
	t.Logf("largest WAL seen: %d bytes; started over %d times; checkpoints %+v and %+v", largest, restarts, sa, sb)
	if sa.Errors+sb.Errors != 0 {
		t.Errorf("%d checkpoints failed", sa.Errors+sb.Errors)
	}
	if sa.CopiedElsewhere == 0 || sb.CopiedElsewhere == 0 {
		t.Errorf("signals that found the WAL copied by the other DB: %d and %d; want some for each", sa.CopiedElsewhere, sb.CopiedElsewhere)
	}
	// One DB alone runs about one background checkpoint per
	// walCheckpointFrames frames written (its catch-up passes count as
	// one); two that each counted only their own ran about three times
	// that.
	if runs, most := sa.Background+sb.Background, int64(writes*4/1000*3/2); runs > most {
		t.Errorf("%d background checkpoints for some %d frames; want at most %d", runs, writes*4, most)
	}
	if restarts < 1 {
		t.Errorf("the WAL never started over in %d writes", writes)
	}
	if limit := int64(walHardLimit * (pageSize + 24)); largest >= limit {
		t.Errorf("the WAL grew to %d bytes, to the hard limit's %d", largest, limit)
	}
	if got := queryInt(t, b, `SELECT count(*) FROM t`); got != writes {
		t.Fatalf("%d rows after the checkpoints, want %d", got, writes)
	}
	if got := queryInt(t, a, `SELECT count(*) FROM pragma_integrity_check WHERE integrity_check != 'ok'`); got != 0 {
		t.Fatal("integrity check failed")
	}
}
