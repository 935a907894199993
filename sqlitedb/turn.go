//go:build cgo

package sqlitedb

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// The writer's turn among the processes that write the file: it takes a
// ticket of the queue across processes (queue_linux.go) before its
// transaction's BEGIN, keeps the turn while this process has writes
// waiting and no other process asks, and hands it on.

// takeTurn waits for this process's turn to write among the processes
// using the package on the file, if they queue (see processQueue), up to
// deadline or until leave is closed. A turn, once come, is kept for the
// transactions of the writes that were waiting in this process when it
// came, and for later ones while no other process has asked for it (run
// ends it when neither is left; see turnOver): each process is served in
// the order it asked, and the turn changes hands once per round instead
// of once per transaction, which costs a wake-up of another process each
// time. The queue only orders the processes: if it fails (a
// lock the kernel refuses), the write goes on without a turn, polling for
// SQLite's lock as it would without a queue, and QueueErrors counts it.
func (wr *writer) takeTurn(leave <-chan struct{}, deadline time.Time) error {
	q := wr.cfg.procQueue
	if q == nil {
		return nil
	}
	if wr.turn.held {
		if !q.replaced() {
			wr.turn.left--
			return nil
		}
		wr.endTurn() // a ticket in the file at the path now, below
	}
	t, err := q.take(min(time.Until(deadline), queueLockWait))
	if err != nil {
		wr.queueFailed(err)
		return nil
	}
	start := time.Now()
	waited, err := q.wait(t, deadline, leave)
	if waited {
		d := time.Since(start)
		wr.count(func(s *WriterStats) { s.TurnWaits++; s.TurnWaited += d; s.MaxTurnWait = max(s.MaxTurnWait, d) })
	}
	switch {
	case err == nil:
		wr.turn.held, wr.turn.queue, wr.turn.ticket, wr.turn.left = true, q, t, len(wr.queue)+len(wr.coalesced)
		return nil
	case errors.Is(err, errTurnNotYet):
		q.release(t)
		return fmt.Errorf("waited %v for the write turn among the processes on the file (Timeout %v): %w", time.Since(deadline.Add(-wr.cfg.timeout)).Round(time.Millisecond), wr.cfg.timeout, ErrTimeout)
	case errors.Is(err, errTurnGivenUp):
		q.release(t)
		return err
	default:
		q.release(t)
		wr.queueFailed(err)
		return nil
	}
}

// queueFailed counts a transaction that goes on without a turn because
// the queue failed (err), and turns the queue off if err says it is off
// for good: the writer polls for SQLite's lock from then on, and Stats
// and the log say why.
func (wr *writer) queueFailed(err error) {
	off := errors.Is(err, errQueueOff)
	if off {
		wr.cfg.procQueue = nil
		slog.Warn("sqlitedb: the queue across processes turned off; the writers poll for the lock", "err", err)
	}
	wr.count(func(s *WriterStats) {
		s.QueueErrors++
		if off {
			s.Queue = "off: " + err.Error()
		}
	})
}

// The ends of a wait for the turn among processes (processQueue.wait):
// errTurnNotYet, the turn did not come before the wait's deadline;
// errTurnGivenUp, the waiter's caller left before it came.
var (
	errTurnNotYet  = errors.New("the turn did not come")
	errTurnGivenUp = errors.New("gave up the turn")
)

// turnOver reports whether the turn is to be handed on: this process has
// no write waiting, or it has run those that waited when the turn came
// and another process has asked for the turn since. While no other
// process asks, the turn stays, and the writes that come meanwhile run
// without taking a ticket each.
func (wr *writer) turnOver() bool {
	if len(wr.queue)+len(wr.coalesced) == 0 {
		return true
	}
	return wr.turn.left <= 0 && wr.turn.queue.waitingAfter(wr.turn.ticket)
}

// endTurn gives this process's turn up, if it holds one.
func (wr *writer) endTurn() {
	if wr.turn.held {
		wr.turn.queue.release(wr.turn.ticket)
		wr.turn.held = false
	}
}
