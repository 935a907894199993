package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/sqlite"
)

// BenchmarkWritesBesideReads measures the wait of writes (comment creation
// by a random user) from 16 goroutines while 8 others read post pages,
// with checkpoints inside the commits (SQLite's default) and from the
// checkpointer. It reports the writes' latency percentiles: a checkpoint
// in a commit stalls every write queued behind it.
func BenchmarkWritesBesideReads(b *testing.B) {
	for _, mode := range []struct {
		name string
		on   bool
	}{{"in-commit", false}, {"checkpointer", true}} {
		b.Run(mode.name, func(b *testing.B) {
			restore := sqlite.SetCheckpointer(mode.on)
			db := benchDB(b)
			restore()
			ctx := context.Background()
			hist := hdrhistogram.New(1, int64(10*time.Second/time.Microsecond), 3)
			var mu sync.Mutex
			var left atomic.Int64
			left.Store(int64(b.N))
			stopReaders := readUntilStopped(b, 8, func() error { _, _, err := db.Benchmark().ShowPost(ctx); return err })
			b.ResetTimer()
			var writers sync.WaitGroup
			for range 16 {
				writers.Go(func() {
					for left.Add(-1) >= 0 {
						start := time.Now()
						if _, err := db.Benchmark().CreateComment(ctx, loremnews.CommentInput{Body: "Bench comment"}); err != nil {
							b.Error(err)
							return
						}
						d := time.Since(start)
						mu.Lock()
						hist.RecordValue(d.Microseconds())
						mu.Unlock()
					}
				})
			}
			writers.Wait()
			b.StopTimer()
			stopReaders()
			for _, q := range []float64{50, 99, 99.9, 100} {
				b.ReportMetric(float64(hist.ValueAtQuantile(q))/1000, fmt.Sprintf("p%v-ms", q))
			}
			runs, inline, truncates, errs := db.CheckpointStats()
			b.ReportMetric(float64(runs), "checkpoints")
			if inline+truncates+errs > 0 {
				b.Logf("inline %d, truncates %d, errors %d", inline, truncates, errs)
			}
		})
	}
}

// walSize is the size of the database's WAL file, 0 if there is none.
func walSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if errors.Is(err, os.ErrNotExist) {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// With readers always busy, which keep a checkpoint from another
// connection from ever copying the last frames, the WAL still starts over
// and stays small; once writes stop, it is truncated to nothing; and every
// write is in the database.
func TestCheckpointerKeepsTheWALSmall(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wal.sqlite3")
	db := MustOpenDSN(t, path, sqlite.ProfileSplit)
	MustSeed(t, db, 20, 100)
	before, err := db.CheckConsistency(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stopReaders := readUntilStopped(t, 4, func() error { _, err := db.PostsBefore(ctx, 1<<40, 50); return err })
	const writes = 6000
	var largest int64
	for i := range writes {
		if _, err := db.Benchmark().CreateComment(ctx, loremnews.CommentInput{Body: "Checkpoint me"}); err != nil {
			t.Fatal(err)
		}
		if i%500 == 0 {
			largest = max(largest, walSize(t, path))
		}
	}
	stopReaders()
	runs, _, _, errs := db.CheckpointStats()
	if runs == 0 || errs != 0 {
		t.Errorf("%d checkpoints, %d failed; want some, none failed", runs, errs)
	}
	// SQLite's automatic checkpoints would keep the WAL near 1,000 pages
	// (4 MiB) too; the hard limit is twenty times that.
	t.Logf("largest WAL seen: %d bytes", largest)
	if limit := int64(10 * 1000 * 4096); largest > limit {
		t.Errorf("the WAL grew to %d bytes, want at most %d", largest, limit)
	}
	deadline := time.Now().Add(10 * time.Second)
	for walSize(t, path) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the WAL still holds %d bytes 10 s after the last write; want it truncated once idle", walSize(t, path))
		}
		time.Sleep(50 * time.Millisecond)
	}
	c, err := db.CheckConsistency(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !c.OK() || c.Comments != before.Comments+writes {
		t.Fatalf("after the checkpoints: %+v, want consistent with %d comments", c, before.Comments+writes)
	}
}

// readUntilStopped runs read in a loop on n goroutines until the returned
// function is called, which waits for them; a failed read fails tb.
func readUntilStopped(tb testing.TB, n int, read func() error) (stop func()) {
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
					tb.Error(err)
					return
				}
			}
		})
	}
	return func() {
		close(done)
		readers.Wait()
	}
}
