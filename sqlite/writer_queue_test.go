package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loremnews/loremnews/internal/testenv"
)

// waitDepth waits until n writers are queued.
func waitDepth(t *testing.T, q *writerQueue, n int) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, fmt.Sprintf("a writer queue %d deep", n), func() bool { return q.stats().Depth == n })
}

func TestWriterQueueIsFIFO(t *testing.T) {
	q := newWriterQueue()
	release, err := q.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, err := q.acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			rel()
		}()
		waitDepth(t, q, i+1) // enqueue strictly one after another
	}
	release()
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("turns taken in order %v, want 0..%d", order, n-1)
		}
	}
	if s := q.stats(); s.Acquired != n+1 || s.MaxDepth != n || s.Depth != 0 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestWriterQueueCancelledWaiterLeaves(t *testing.T) {
	q := newWriterQueue()
	release, _ := q.acquire(context.Background())

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error)
	go func() {
		_, err := q.acquire(ctx)
		gaveUp <- err
	}()
	waitDepth(t, q, 1)
	got := make(chan struct{})
	go func() {
		rel, err := q.acquire(context.Background())
		if err == nil {
			rel()
		}
		close(got)
	}()
	waitDepth(t, q, 2)
	cancel()
	select {
	case err := <-gaveUp:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled waiter: %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a cancelled waiter did not leave within a minute")
	}
	waitDepth(t, q, 1)
	release()
	select {
	case <-got:
	case <-time.After(time.Minute):
		t.Fatal("the writer behind a cancelled one did not get its turn within a minute")
	}
	if s := q.stats(); s.Abandoned != 1 || s.Depth != 0 {
		t.Fatalf("stats = %+v", s)
	}
	// The turn is free again.
	rel, err := q.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rel()
}

// TestWriterQueueMutualExclusion hammers the queue with cancellations and
// checks that no two holders ever overlap and the turn is never lost.
func TestWriterQueueMutualExclusion(t *testing.T) {
	q := newWriterQueue()
	var (
		holders int
		mu      sync.Mutex
		wg      sync.WaitGroup
	)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*50*time.Microsecond)
			defer cancel()
			rel, err := q.acquire(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			holders++
			if holders != 1 {
				t.Errorf("%d holders at once", holders)
			}
			mu.Unlock()
			time.Sleep(20 * time.Microsecond)
			mu.Lock()
			holders--
			mu.Unlock()
			rel()
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rel, err := q.acquire(ctx)
	if err != nil {
		t.Fatal("turn lost: no turn within a minute:", err)
	}
	rel()
}
