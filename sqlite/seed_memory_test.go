package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews/seed"
)

// TestSeedMemoryIsFlat loads one generated set and then a set with ten
// times the posts and comments, each streamed into a fresh database, and
// samples the Go heap's objects and the process's anonymous resident
// memory throughout (SQLite's memory is outside the Go heap; the pages of
// the database file that sqlitedb reads through a memory map are not the
// process's memory but the kernel's page cache). The larger set must need
// neither a larger heap nor a larger RSS: holding its rows (as building the
// whole set before loading it does) takes some 80 MiB more heap, and one
// UPDATE over a whole table in the load's transaction some 30 MiB more RSS
// (its statement journal). The bounds leave room for the collector's and
// the allocator's own slack. Linux only (/proc/self), as CI is.
func TestSeedMemoryIsFlat(t *testing.T) {
	var rss []uint64
	peak := func(posts int) (uint64, int) {
		set, err := seed.New(seed.Config{Users: 100, Posts: posts, Seed: 1, BcryptCost: 4})
		if err != nil {
			t.Fatal(err)
		}
		// A 2 MB page cache, full in both runs, so SQLite's own memory
		// can only grow with the set by a leak of pages (the statement
		// journal of one UPDATE over a whole table, say).
		db := MustOpenDSN(t, "file:"+filepath.Join(t.TempDir(), "seed.sqlite3")+"?_pragma=cache_size(-2000)")
		runtime.GC()
		stopRSS := sample(func() uint64 { return anonRSS(t) })
		stop := sampleHeap()
		err = db.ImportStream(context.Background(), set.DatasetStream)
		high := stop()
		rss = append(rss, stopRSS())
		if err != nil {
			t.Fatal(err)
		}
		return high, set.Rows()
	}
	// The process's RSS moves with what else ran in it (the package's
	// other tests, the race detector's shadow memory): a pair of runs that
	// grew by chance is measured once more, and a real growth, which
	// every pair shows, fails.
	var grew string
	for attempt := 1; attempt <= 3; attempt++ {
		rss = rss[:0]
		smallPeak, smallRows := peak(600)
		bigPeak, bigRows := peak(6000)
		t.Logf("attempt %d: peak heap: %d KiB for %d rows, %d KiB for %d rows", attempt, smallPeak>>10, smallRows, bigPeak>>10, bigRows)
		t.Logf("attempt %d: peak anonymous RSS: %d KiB for %d rows, %d KiB for %d rows", attempt, rss[0]>>10, smallRows, rss[1]>>10, bigRows)
		if bigRows < 9*smallRows {
			t.Fatalf("the large set has %d rows, the small %d: want about ten times as many", bigRows, smallRows)
		}
		const slack = 8 << 20
		switch {
		case bigPeak > smallPeak+slack:
			grew = fmt.Sprintf("peak heap %d KiB for %d rows, %d KiB for %d rows: memory grows with the set", bigPeak>>10, bigRows, smallPeak>>10, smallRows)
		// SQLite's memory is outside the Go heap: the process's peak
		// anonymous RSS must not grow either (14 MiB of slack; holding
		// the large set's posts pages would add about 30 MiB).
		case rss[1] > rss[0]+14<<20:
			grew = fmt.Sprintf("peak anonymous RSS %d KiB for %d rows, %d KiB for %d rows: memory grows with the set", rss[1]>>10, bigRows, rss[0]>>10, smallRows)
		default:
			return
		}
	}
	t.Fatalf("in every attempt; the last: %s", grew)
}

// sampleHeap samples the heap's object bytes (live and not yet swept)
// every millisecond until stop, which returns the highest sample. It reads
// runtime/metrics, which does not stop the world as ReadMemStats does.
func sampleHeap() (stop func() uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	return sample(func() uint64 {
		metrics.Read(s)
		return s[0].Value.Uint64()
	})
}

// sample calls read every millisecond until stop, which returns the
// highest value read.
func sample(read func() uint64) (stop func() uint64) {
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

// anonRSS is RssAnon from /proc/self/status, in bytes: the process's own
// resident memory (Go's heap and C's malloc, SQLite's included), without
// the pages of files it has mapped, which are the kernel's page cache.
func anonRSS(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Error(err)
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Error(err)
			}
			return kb << 10
		}
	}
	t.Error("no RssAnon in /proc/self/status")
	return 0
}
