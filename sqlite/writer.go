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

// writer runs every write of the process on one goroutine, first come,
// first served. Two setups use it:
//
//   - one transaction per write (maxBatch 1: fair, split, durable). A
//     request hands its write to the writer goroutine and waits for the
//     result. The turn never passes between goroutines: when a write
//     commits, the writer starts the next one at once, instead of waking
//     its request's goroutine, which would first have to wait for a CPU
//     (on a busy machine, longer than the write itself) while nobody writes;
//   - group commit (maxBatch > 1: batch): the writes that queued up
//     meanwhile are committed together, one BEGIN IMMEDIATE … COMMIT for a
//     batch, each write inside its own SAVEPOINT, so BEGIN, COMMIT (the WAL
//     append) and the hand-offs are paid once per batch.
//
// Touches (a random user's last_seen_at, which every benchmarking request
// sets) queue apart and are committed together, however many are waiting,
// in one transaction of their own: a touch cannot fail on its own, so
// sharing a commit couples nothing that could fail separately, and the
// writer's turns are halved when half the requests only read.
//
// What it keeps:
//   - First come, first served: the queues are channels, taken in order;
//     the writer takes the touches and the writes by turns.
//   - Each response waits for its commit: submit returns only after COMMIT.
//   - One write's failure cannot undo another's: in a batch a failing write
//     rolls back to its own savepoint and the batch goes on; if anything
//     fails outside a savepoint (COMMIT, or SQLite rolling the whole
//     transaction back), every write of the batch gets the error — none is
//     reported done that was not committed.
//   - Writes run with their request's values but not its cancellation: an
//     interrupted statement (sqlite3_interrupt) can roll back the whole
//     transaction, so a client that leaves mid-write must not interrupt it.
//     A client that leaves, or a write that waited past WriterTimeout,
//     before its turn is skipped and never runs.
type writer struct {
	db       *DB
	maxBatch int
	queue    chan *pendingWrite
	touches  chan *pendingWrite
	stop     chan struct{}
	stopped  chan struct{}

	mu    sync.Mutex
	stats WriterQueueStats
}

// WriterQueueStats is a snapshot of the writer's counters, for /metrics
// (through loremnews.WriterQueueStats) and for tests that watch writes
// queue.
type WriterQueueStats struct {
	Depth     int   // writes and touches waiting now
	MaxDepth  int   // most writes and touches ever waiting at once
	Turns     int64 // writes and touches run
	Abandoned int64 // writes and touches that left before their turn (context ended)
	Commits   int64 // transactions the writer committed
}

// groupCommitBatch bounds a group commit's batch, so the first write in it
// never waits behind more than this many others before its COMMIT.
const groupCommitBatch = 32

// maxTouches bounds the touches committed together.
const maxTouches = 256

// Pending write states: queued until the writer takes it (running) or its
// caller leaves first (abandoned); the one that moves it out of queued
// decides which.
const (
	writeQueued int32 = iota
	writeRunning
	writeAbandoned
)

// pendingWrite is one write or touch waiting in a queue: what to run, with
// whose values, and where its result goes. Its state decides, under a
// compare-and-swap, whether the writer runs it or its caller has left.
type pendingWrite struct {
	ctx    context.Context
	fn     func(context.Context, writeTx) error
	queued time.Time
	state  atomic.Int32
	done   chan error // buffered: the writer never blocks on it
	userID int64      // a touch's result: the user it touched
}

// errClosed answers writes that were queued or submitted after Close.
var errClosed = errors.New("sqlite: database is closed")

// newWriter starts the writer goroutine of db, committing at most maxBatch
// writes in one transaction (1: a transaction each).
func newWriter(db *DB, maxBatch int) *writer {
	wr := &writer{db: db, maxBatch: maxBatch, queue: make(chan *pendingWrite, 4096), touches: make(chan *pendingWrite, 4096),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	go wr.run()
	return wr
}

// submit queues fn and waits for its result: its own error, the batch's,
// or EUNAVAILABLE if its turn did not come within the writer timeout.
func (wr *writer) submit(ctx context.Context, fn func(context.Context, writeTx) error) error {
	w := &pendingWrite{ctx: ctx, fn: fn, queued: time.Now(), done: make(chan error, 1)}
	return wr.wait(ctx, w, wr.queue)
}

// touch queues a touch of a random user and waits until it has committed.
func (wr *writer) touch(ctx context.Context) (int64, error) {
	w := &pendingWrite{ctx: ctx, queued: time.Now(), done: make(chan error, 1)}
	if err := wr.wait(ctx, w, wr.touches); err != nil {
		return 0, err
	}
	return w.userID, nil
}

// wait queues w and waits for its result. A caller that leaves (its
// context ends, the writer timeout passes, the database closes) before its
// turn marks w abandoned, so the writer skips it; once w runs, its result
// is awaited whatever happens, so no caller is told a committed write failed.
func (wr *writer) wait(ctx context.Context, w *pendingWrite, queue chan *pendingWrite) error {
	timer := time.NewTimer(wr.db.writerTimeout)
	defer timer.Stop()
	select {
	case queue <- w:
	case <-wr.stopped:
		return errClosed
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("wait for writer turn: %w", context.DeadlineExceeded)
	}
	wr.noteDepth()
	var giveUp error
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		giveUp = ctx.Err()
	case <-timer.C:
		giveUp = fmt.Errorf("wait for writer turn: %w", context.DeadlineExceeded)
	case <-wr.stopped:
		giveUp = errClosed
	}
	if w.state.CompareAndSwap(writeQueued, writeAbandoned) {
		wr.count(func(s *WriterQueueStats) { s.Abandoned++ })
		return giveUp
	}
	return <-w.done // already running: its result is coming
}

// run is the writer goroutine: until close, it takes a write or a touch
// (at random when both wait, as select does), with whatever else of its
// kind is waiting, and commits them.
func (wr *writer) run() {
	defer close(wr.stopped)
	for {
		select {
		case w := <-wr.queue:
			batch := wr.gather([]*pendingWrite{w}, wr.queue, wr.maxBatch)
			if wr.maxBatch == 1 {
				wr.commitOne(batch)
			} else {
				wr.commit(batch)
			}
		case w := <-wr.touches:
			wr.commitTouches(wr.gather([]*pendingWrite{w}, wr.touches, maxTouches))
		case <-wr.stop:
			return
		}
	}
}

// gather adds to batch what is waiting in queue now, up to max, and
// returns the writes not abandoned meanwhile, marked running.
func (wr *writer) gather(batch []*pendingWrite, queue chan *pendingWrite, max int) []*pendingWrite {
gather:
	for len(batch) < max {
		select {
		case w := <-queue:
			batch = append(batch, w)
		default:
			break gather
		}
	}
	live := batch[:0]
	for _, w := range batch {
		if w.state.CompareAndSwap(writeQueued, writeRunning) {
			wr.db.observeWriteWait(w.queued)
			wr.count(func(s *WriterQueueStats) { s.Turns++ })
			live = append(live, w)
		}
	}
	return live
}

// commitOne runs a write in a transaction of its own.
func (wr *writer) commitOne(batch []*pendingWrite) {
	if len(batch) == 0 {
		return
	}
	w := batch[0]
	conn, err := wr.begin()
	if err != nil {
		w.done <- fmt.Errorf("begin: %w", err)
		return
	}
	if err := w.fn(context.WithoutCancel(w.ctx), conn); err != nil {
		wr.rollback(conn)
		w.done <- err
		return
	}
	if err := wr.commitOn(conn); err != nil {
		w.done <- fmt.Errorf("commit: %w", err)
		return
	}
	w.done <- nil
}

// begin takes the write connection and starts a write transaction on it,
// BEGIN IMMEDIATE, retrying while another process holds SQLite's write lock
// as beginWrite does. The transaction is run on the connection itself, not
// a *sql.Tx: database/sql starts a goroutine for every *sql.Tx (to roll it
// back if its context ends) and one for every query inside one, and a
// write here is never cancelled (see writer).
func (wr *writer) begin() (*sql.Conn, error) {
	bg := context.Background()
	conn, err := wr.db.writeDB.Conn(bg)
	if err != nil {
		return nil, err
	}
	err = wr.db.whileBusy(bg, &wr.db.busyRetries, func() error {
		_, err := conn.ExecContext(bg, `BEGIN IMMEDIATE`)
		return err
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// commitOn commits the transaction on conn and gives the connection back;
// if COMMIT fails, the transaction is rolled back first, so the connection
// never goes back to the pool inside one.
func (wr *writer) commitOn(conn *sql.Conn) error {
	if _, err := conn.ExecContext(context.Background(), `COMMIT`); err != nil {
		wr.rollback(conn)
		return err
	}
	conn.Close()
	wr.count(func(s *WriterQueueStats) { s.Commits++ })
	wr.committed()
	return nil
}

// rollback rolls back the transaction on conn and gives the connection
// back. It cannot fail in a way worth reporting over the error that caused
// it; if SQLite already rolled back, there is nothing to roll back.
func (wr *writer) rollback(conn *sql.Conn) {
	conn.ExecContext(context.Background(), `ROLLBACK`)
	conn.Close()
}

// commitTouches touches a random user for each of batch, in one
// transaction.
func (wr *writer) commitTouches(batch []*pendingWrite) {
	if len(batch) == 0 {
		return
	}
	bg := context.Background()
	fail := func(err error) {
		for _, w := range batch {
			w.done <- err
		}
	}
	conn, err := wr.begin()
	if err != nil {
		fail(fmt.Errorf("begin: %w", err))
		return
	}
	now := wr.db.now()
	for _, w := range batch {
		if w.userID, err = touchOneRandomUser(bg, conn, now); err != nil {
			wr.rollback(conn)
			fail(err)
			return
		}
	}
	if err := wr.commitOn(conn); err != nil {
		fail(fmt.Errorf("commit: %w", err))
		return
	}
	fail(nil)
}

// commit runs a batch in one transaction, each write in a savepoint; see
// writer.
func (wr *writer) commit(live []*pendingWrite) {
	if len(live) == 0 {
		return
	}
	bg := context.Background()
	tx, err := wr.begin()
	if err != nil {
		for _, w := range live {
			w.done <- fmt.Errorf("begin: %w", err)
		}
		return
	}
	results := make([]error, len(live))
	fail := func(err error) {
		wr.rollback(tx)
		for _, w := range live {
			w.done <- err
		}
	}
	for i, w := range live {
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
	if _, err := tx.ExecContext(bg, `COMMIT`); err != nil {
		fail(fmt.Errorf("commit: %w", err))
		return
	}
	tx.Close()
	wr.count(func(s *WriterQueueStats) { s.Commits++ })
	wr.committed()
	for i, w := range live {
		w.done <- results[i]
	}
}

// committed tells the checkpointer, if any, that a transaction committed.
func (wr *writer) committed() {
	if ck := wr.db.checkpointer; ck != nil {
		ck.committed()
	}
}

// close stops the writer goroutine and answers errClosed to every write
// still queued.
func (wr *writer) close() {
	close(wr.stop)
	<-wr.stopped
	for { // answer anything still queued
		select {
		case w := <-wr.queue:
			if w.state.CompareAndSwap(writeQueued, writeAbandoned) {
				w.done <- errClosed
			}
		case w := <-wr.touches:
			if w.state.CompareAndSwap(writeQueued, writeAbandoned) {
				w.done <- errClosed
			}
		default:
			return
		}
	}
}

// noteDepth records the queues' length after a write or touch joined them,
// for MaxDepth.
func (wr *writer) noteDepth() {
	d := len(wr.queue) + len(wr.touches)
	wr.count(func(s *WriterQueueStats) { s.MaxDepth = max(s.MaxDepth, d) })
}

// count updates the counters under their lock.
func (wr *writer) count(f func(*WriterQueueStats)) {
	wr.mu.Lock()
	f(&wr.stats)
	wr.mu.Unlock()
}

// snapshot returns the counters with the queues' depth now.
func (wr *writer) snapshot() WriterQueueStats {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	s := wr.stats
	s.Depth = len(wr.queue) + len(wr.touches)
	return s
}
