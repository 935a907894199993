package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// groupCommitter runs every write of the process on one goroutine, and
// commits the writes that queued up meanwhile together: one BEGIN IMMEDIATE
// … COMMIT for a batch, each write inside its own SAVEPOINT.
//
// Why: with one writer at a time, every write used to wait for its turn,
// then for a CPU, then BEGIN, its statements, COMMIT, then hand the turn on.
// A batch pays BEGIN, COMMIT (the WAL append) and the hand-offs once.
//
// What it keeps:
//   - First come, first served: the queue is a channel, taken in order.
//   - Each response waits for its commit: write returns only after COMMIT.
//   - One write's failure cannot undo another's: a failing write rolls
//     back to its own savepoint and the batch goes on; if anything fails
//     outside a savepoint (COMMIT, or SQLite rolling the whole transaction
//     back), every write of the batch gets the error — none is reported
//     done that was not committed.
//   - Writes run with their request's values but not its cancellation: an
//     interrupted statement (sqlite3_interrupt) can roll back the whole
//     transaction, so a client that leaves mid-write must not interrupt it.
//     A client that leaves, or a write that waited past WriterTimeout,
//     before its turn is skipped and never runs.
type groupCommitter struct {
	db      *DB
	queue   chan *pendingWrite
	stop    chan struct{}
	stopped chan struct{}

	mu    sync.Mutex
	stats WriterQueueStats
}

// maxBatch bounds a batch, so the first write in it never waits behind
// more than this many others before its COMMIT.
const maxBatch = 32

// Pending write states.
const (
	writeQueued int32 = iota
	writeRunning
	writeAbandoned
)

type pendingWrite struct {
	ctx    context.Context
	fn     func(context.Context, *sql.Tx) error
	queued time.Time
	state  atomic.Int32
	done   chan error // buffered: the committer never blocks on it
}

var errClosed = errors.New("sqlite: database is closed")

func newGroupCommitter(db *DB) *groupCommitter {
	c := &groupCommitter{db: db, queue: make(chan *pendingWrite, 4096), stop: make(chan struct{}), stopped: make(chan struct{})}
	go c.run()
	return c
}

// submit queues fn and waits for its result: its own error, the batch's,
// or EUNAVAILABLE if its turn did not come within the writer timeout.
func (c *groupCommitter) submit(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	w := &pendingWrite{ctx: ctx, fn: fn, queued: time.Now(), done: make(chan error, 1)}
	timer := time.NewTimer(c.db.writerTimeout)
	defer timer.Stop()
	select {
	case c.queue <- w:
	case <-c.stopped:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("wait for writer turn: %w", context.DeadlineExceeded)
	}
	c.noteDepth()
	var giveUp error
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		giveUp = ctx.Err()
	case <-timer.C:
		giveUp = fmt.Errorf("wait for writer turn: %w", context.DeadlineExceeded)
	case <-c.stopped:
		giveUp = errClosed
	}
	if w.state.CompareAndSwap(writeQueued, writeAbandoned) {
		c.count(func(s *WriterQueueStats) { s.Abandoned++ })
		return giveUp
	}
	return <-w.done // already running: its result is coming
}

func (c *groupCommitter) run() {
	defer close(c.stopped)
	for {
		select {
		case w := <-c.queue:
			batch := []*pendingWrite{w}
		gather:
			for len(batch) < maxBatch {
				select {
				case w := <-c.queue:
					batch = append(batch, w)
				default:
					break gather
				}
			}
			c.commit(batch)
		case <-c.stop:
			return
		}
	}
}

// commit runs a batch in one transaction; see groupCommitter.
func (c *groupCommitter) commit(batch []*pendingWrite) {
	live := batch[:0]
	for _, w := range batch {
		if w.state.CompareAndSwap(writeQueued, writeRunning) {
			live = append(live, w)
		}
	}
	if len(live) == 0 {
		return
	}
	bg := context.Background()
	tx, err := c.db.beginWrite(bg, time.Now().Add(c.db.writerTimeout))
	if err != nil {
		for _, w := range live {
			c.db.observeWriteWait(w.queued)
			w.done <- fmt.Errorf("begin: %w", err)
		}
		return
	}
	results := make([]error, len(live))
	fail := func(err error) {
		tx.Rollback()
		for _, w := range live {
			w.done <- err
		}
	}
	for i, w := range live {
		c.db.observeWriteWait(w.queued)
		wait := time.Since(w.queued)
		c.count(func(s *WriterQueueStats) { s.Acquired++; s.WaitTotal += wait })
		if _, err := tx.ExecContext(bg, `SAVEPOINT write`); err != nil {
			fail(fmt.Errorf("savepoint: %w", err))
			return
		}
		if err := w.fn(context.WithoutCancel(w.ctx), tx); err != nil {
			results[i] = err
			if _, rerr := tx.ExecContext(bg, `ROLLBACK TO write`); rerr != nil {
				// SQLite rolled the whole transaction back (it does on
				// some errors, e.g. a full disk): the batch is lost.
				fail(fmt.Errorf("%w (and the batch's transaction was lost: %v)", err, rerr))
				return
			}
		}
		if _, err := tx.ExecContext(bg, `RELEASE write`); err != nil {
			fail(fmt.Errorf("release savepoint: %w", err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		fail(fmt.Errorf("commit: %w", err))
		return
	}
	for i, w := range live {
		w.done <- results[i]
	}
}

func (c *groupCommitter) close() {
	close(c.stop)
	<-c.stopped
	for { // answer anything still queued
		select {
		case w := <-c.queue:
			if w.state.CompareAndSwap(writeQueued, writeAbandoned) {
				w.done <- errClosed
			}
		default:
			return
		}
	}
}

func (c *groupCommitter) noteDepth() {
	d := len(c.queue)
	c.count(func(s *WriterQueueStats) { s.MaxDepth = max(s.MaxDepth, d) })
}

func (c *groupCommitter) count(f func(*WriterQueueStats)) {
	c.mu.Lock()
	f(&c.stats)
	c.mu.Unlock()
}

func (c *groupCommitter) snapshot() WriterQueueStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Depth = len(c.queue)
	return s
}
