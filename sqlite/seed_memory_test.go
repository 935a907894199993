package sqlite_test

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/loremnews/loremnews/seed"
)

// TestSeedMemoryIsFlat loads one generated set and then a set with ten
// times the posts and comments, each streamed into a fresh database, and
// samples the Go heap's live and unswept objects throughout. The larger
// set must not need a larger heap: holding its rows (as building the whole
// set before loading it does) would take tens of MiB more. The bound is
// generous, for the garbage collector's own slack.
func TestSeedMemoryIsFlat(t *testing.T) {
	peak := func(posts int) (uint64, int) {
		set, err := seed.New(seed.Config{Users: 100, Posts: posts, Seed: 1, BcryptCost: 4})
		if err != nil {
			t.Fatal(err)
		}
		db := MustOpenDB(t, "")
		runtime.GC()
		stop := sampleHeap()
		err = db.ImportStream(context.Background(), set.DatasetStream)
		high := stop()
		if err != nil {
			t.Fatal(err)
		}
		return high, set.Rows()
	}
	smallPeak, smallRows := peak(300)
	bigPeak, bigRows := peak(3000)
	t.Logf("peak heap: %d KiB for %d rows, %d KiB for %d rows", smallPeak>>10, smallRows, bigPeak>>10, bigRows)
	if bigRows < 9*smallRows {
		t.Fatalf("the large set has %d rows, the small %d: want about ten times as many", bigRows, smallRows)
	}
	const slack = 8 << 20
	if bigPeak > smallPeak+slack {
		t.Fatalf("peak heap %d KiB for %d rows, %d KiB for %d rows: memory grows with the set", bigPeak>>10, bigRows, smallPeak>>10, smallRows)
	}
}

// sampleHeap samples the heap's object bytes (live and not yet swept)
// every millisecond until stop, which returns the highest sample. It reads
// runtime/metrics, which does not stop the world as ReadMemStats does.
func sampleHeap() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	done := make(chan struct{})
	result := make(chan uint64)
	go func() {
		high := read()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				high = max(high, read())
			case <-done:
				result <- max(high, read())
				return
			}
		}
	}()
	return func() uint64 { close(done); return <-result }
}
