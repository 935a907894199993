package sqlite

import (
	"context"
	"sync"
	"time"
)

// writerQueue lets one writer at a time through, strictly in arrival order.
//
// Why not a sync.Mutex or the pool's own wait? A Mutex wakes waiters in no
// promised order (and lets a newcomer barge ahead of a woken waiter), and
// database/sql hands a freed connection to a random waiter. Either way the
// unlucky request waits for many turns: that is the long tail the talk
// measured. A FIFO bounds every writer's wait by the work queued before it.
//
// A waiter whose context ends (its client went away, or WriterTimeout
// passed) leaves the queue at once, so an abandoned request never holds up
// the ones behind it.
type writerQueue struct {
	mu      sync.Mutex
	busy    bool            // a writer holds the turn
	waiters []chan struct{} // FIFO; closed to hand the turn over

	// counters, guarded by mu
	acquired  int64
	timedOut  int64
	waitTotal time.Duration
	maxDepth  int
}

// WriterQueueStats is a snapshot of the queue's counters.
type WriterQueueStats struct {
	Depth     int           // writers waiting now
	MaxDepth  int           // most writers ever waiting at once
	Acquired  int64         // turns taken
	Abandoned int64         // waiters that left before their turn (context ended)
	WaitTotal time.Duration // sum of all waits
}

func newWriterQueue() *writerQueue {
	return &writerQueue{}
}

// acquire waits for the writer's turn and returns the function that ends it.
func (q *writerQueue) acquire(ctx context.Context) (release func(), err error) {
	q.mu.Lock()
	if !q.busy && len(q.waiters) == 0 {
		q.busy = true
		q.acquired++
		q.mu.Unlock()
		return q.release, nil
	}
	ch := make(chan struct{})
	start := time.Now()
	q.waiters = append(q.waiters, ch)
	q.maxDepth = max(q.maxDepth, len(q.waiters))
	q.mu.Unlock()

	select {
	case <-ch:
		wait := time.Since(start)
		q.mu.Lock()
		q.acquired++
		q.waitTotal += wait
		q.mu.Unlock()
		return q.release, nil
	case <-ctx.Done():
		q.mu.Lock()
		for i, w := range q.waiters {
			if w == ch {
				q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
				q.timedOut++
				q.mu.Unlock()
				return nil, ctx.Err()
			}
		}
		q.mu.Unlock()
		// Not in the queue any more: release handed us the turn just as
		// the context ended. Pass it on rather than leak it.
		<-ch
		q.release()
		q.mu.Lock()
		q.timedOut++
		q.mu.Unlock()
		return nil, ctx.Err()
	}
}

// release hands the turn to the oldest waiter, or frees it.
func (q *writerQueue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) == 0 {
		q.busy = false
		return
	}
	next := q.waiters[0]
	q.waiters[0] = nil
	q.waiters = q.waiters[1:]
	close(next) // busy stays true: the turn passes directly
}

func (q *writerQueue) stats() WriterQueueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return WriterQueueStats{
		Depth:     len(q.waiters),
		MaxDepth:  q.maxDepth,
		Acquired:  q.acquired,
		Abandoned: q.timedOut,
		WaitTotal: q.waitTotal,
	}
}
