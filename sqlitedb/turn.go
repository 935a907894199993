//go:build cgo

package sqlitedb

import (
	"errors"
	"fmt"
	"time"
)

// procTurn is this process's turn among the processes that write the
// file, while it holds one: a ticket of the queue across processes
// (queue_linux.go) taken before a transaction's BEGIN, kept while this
// process has writes waiting and no other process asks, and handed on.
// The writer goroutine alone uses it.
type procTurn struct {
	held   bool
	queue  *processQueue // the queue the turn is of
	ticket int64
	left   int // transactions it may still run before another process's ask ends it
}

// take waits for this process's turn to write, in q, up to deadline or
// until leave is closed; waiting says how many writes of this process
// wait now. A turn, once come, is kept for the transactions of the writes
// that were waiting when it came (those that came during the wait too), and for later ones while no other process
// has asked for it (see over): each process is served in the order it
// asked, and the turn changes hands once per round instead of once per
// transaction, which costs a wake-up of another process each time.
//
// The queue only orders the processes: if it fails (a lock the kernel
// refuses), take returns the failure as queueErr and no error, and the
// write goes on without a turn, polling for SQLite's lock as it would
// without a queue. waited is how long it waited for another process's
// turn to end (0: it did not wait). err is the write's: ErrTimeout when
// the turn did not come by deadline (timeout is Options.Timeout, for the
// message), errTurnGivenUp when leave was closed first.
func (t *procTurn) take(q *processQueue, waiting func() int, leave <-chan struct{}, deadline time.Time, timeout time.Duration) (waited time.Duration, queueErr, err error) {
	if t.held {
		if !q.replaced() {
			t.left--
			return 0, nil, nil
		}
		t.end() // a ticket in the file at the path now, below
	}
	ticket, err := q.take(min(time.Until(deadline), queueLockWait))
	if err != nil {
		return 0, err, nil
	}
	start := time.Now()
	didWait, err := q.wait(ticket, deadline, leave)
	if didWait {
		waited = max(time.Since(start), time.Nanosecond)
	}
	switch {
	case err == nil:
		t.held, t.queue, t.ticket, t.left = true, q, ticket, waiting()
		return waited, nil, nil
	case errors.Is(err, errTurnNotYet):
		q.release(ticket)
		return waited, nil, fmt.Errorf("waited %v for the write turn among the processes on the file (Timeout %v): %w", time.Since(deadline.Add(-timeout)).Round(time.Millisecond), timeout, ErrTimeout)
	case errors.Is(err, errTurnGivenUp):
		q.release(ticket)
		return waited, nil, err
	default:
		q.release(ticket)
		return waited, err, nil
	}
}

// over reports whether the turn is to be handed on, waiting being how
// many writes of this process wait now: none does, or it has run those
// that waited when the turn came and another process has asked for the
// turn since. While no other process asks, the turn stays, and the writes
// that come meanwhile run without taking a ticket each.
func (t *procTurn) over(waiting int) bool {
	if waiting == 0 {
		return true
	}
	return t.left <= 0 && t.queue.waitingAfter(t.ticket)
}

// end gives the turn up, if it is held.
func (t *procTurn) end() {
	if t.held {
		t.queue.release(t.ticket)
		t.held = false
	}
}
