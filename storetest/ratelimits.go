package storetest

import (
	"context"
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// limitKey is a 32-byte key, as the web layer's digests are.
func limitKey(name string) []byte {
	k := sha256.Sum256([]byte(name))
	return k[:]
}

// testRateLimits: ReserveAttempt takes up to limit attempts in a window
// and refuses the next with the time until the window ends;
// ReleaseAttempt gives one back; a window that has passed starts again;
// keys count apart. Time moves by the now argument, not by sleeping.
func testRateLimits(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const limit, window = 3, 15 * time.Minute
	k, other := limitKey("account"), limitKey("other account")
	reserve := func(key []byte, at time.Time) (bool, time.Duration) {
		t.Helper()
		ok, wait, err := db.ReserveAttempt(ctx, key, limit, window, at)
		if err != nil {
			t.Fatal(err)
		}
		return ok, wait
	}
	for i := range limit {
		if ok, wait := reserve(k, now.Add(time.Duration(i)*time.Minute)); !ok || wait != 0 {
			t.Fatalf("attempt %d of %d: ok %v, wait %v", i+1, limit, ok, wait)
		}
	}
	// The window started at the first attempt: 5 minutes later, 10 are left.
	if ok, wait := reserve(k, now.Add(5*time.Minute)); ok || wait != 10*time.Minute {
		t.Fatalf("attempt past the limit: ok %v, wait %v; want refused for 10m", ok, wait)
	}
	// A refusal takes nothing: the count stays at the limit, and a release
	// frees exactly one.
	if err := db.ReleaseAttempt(ctx, k); err != nil {
		t.Fatal(err)
	}
	if ok, _ := reserve(k, now.Add(6*time.Minute)); !ok {
		t.Fatal("a released attempt was not given back")
	}
	if ok, wait := reserve(k, now.Add(6*time.Minute)); ok || wait != 9*time.Minute {
		t.Fatalf("after the freed attempt was used: ok %v, wait %v; want refused for 9m", ok, wait)
	}
	// Another key has its own count.
	if ok, _ := reserve(other, now.Add(6*time.Minute)); !ok {
		t.Fatal("another key was refused")
	}
	// Releases never go below 0, nor fail on a key with no row.
	for range 5 {
		if err := db.ReleaseAttempt(ctx, other); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.ReleaseAttempt(ctx, limitKey("never reserved")); err != nil {
		t.Fatal(err)
	}
	for i := range limit {
		if ok, _ := reserve(other, now.Add(7*time.Minute)); !ok {
			t.Fatalf("attempt %d after releasing more than was taken: refused", i+1)
		}
	}
	if ok, _ := reserve(other, now.Add(7*time.Minute)); ok {
		t.Fatal("releases below 0 left more than the limit")
	}
	// At the end of the window the key starts again, with a window of its
	// own from that attempt.
	later := now.Add(window)
	for i := range limit {
		if ok, _ := reserve(k, later); !ok {
			t.Fatalf("attempt %d of a new window refused", i+1)
		}
	}
	if ok, wait := reserve(k, later.Add(time.Minute)); ok || wait != window-time.Minute {
		t.Fatalf("the new window: ok %v, wait %v; want refused for %v", ok, wait, window-time.Minute)
	}
	// Windows of different lengths in one table: each row ends by its own.
	long := limitKey("long window")
	if ok, _, err := db.ReserveAttempt(ctx, long, 1, 24*time.Hour, later); err != nil || !ok {
		t.Fatalf("a key with a day's window: ok %v, %v", ok, err)
	}
	if ok, wait, err := db.ReserveAttempt(ctx, long, 1, 24*time.Hour, later.Add(2*window)); err != nil || ok || wait != 24*time.Hour-2*window {
		t.Fatalf("a day's window, half an hour on: ok %v, wait %v, %v", ok, wait, err)
	}
	// A limit below 1 is a caller's mistake, never an unlimited key.
	if ok, _, err := db.ReserveAttempt(ctx, limitKey("no limit"), 0, window, now); ok || err == nil {
		t.Fatalf("limit 0: ok %v, %v; want an error", ok, err)
	}
}

// testConcurrentRateLimits: reserves sent at once from many goroutines
// never take more than the limit, and a refusal takes nothing.
func testConcurrentRateLimits(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	now := time.Now()
	const goroutines, limit = 50, 10
	k := limitKey("contended")
	var (
		wg       sync.WaitGroup
		ok, errs atomic.Int64
		start    = make(chan struct{})
	)
	for range goroutines {
		wg.Go(func() {
			<-start
			got, _, err := db.ReserveAttempt(ctx, k, limit, time.Hour, now)
			switch {
			case err != nil:
				errs.Add(1)
				t.Error(err)
			case got:
				ok.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if ok.Load() != limit || errs.Load() != 0 {
		t.Fatalf("%d of %d concurrent reserves taken (%d failed), want exactly %d", ok.Load(), goroutines, errs.Load(), limit)
	}
	// The refusals took nothing: one release makes room for exactly one.
	if err := db.ReleaseAttempt(ctx, k); err != nil {
		t.Fatal(err)
	}
	var second atomic.Int64
	for range goroutines {
		wg.Go(func() {
			if got, _, err := db.ReserveAttempt(ctx, k, limit, time.Hour, now); err != nil {
				t.Error(err)
			} else if got {
				second.Add(1)
			}
		})
	}
	wg.Wait()
	if second.Load() != 1 {
		t.Fatalf("%d reserves taken after one release, want 1", second.Load())
	}
}
