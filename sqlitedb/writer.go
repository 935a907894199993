//go:build cgo

package sqlitedb

import (
	"context"
	"database/sql"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// writer runs every write of the process on one goroutine, first come,
// first served:
//
//   - one transaction per write (maxBatch 1, the default). A caller hands
//     its write to the writer goroutine and waits for the result. The turn
//     never passes between goroutines: when a write commits, the writer
//     starts the next one at once, instead of waking its caller's
//     goroutine, which would first have to wait for a CPU (on a busy
//     machine, longer than the write itself) while nobody writes;
//   - group commit (maxBatch > 1, Options.GroupCommit): the writes that
//     queued up meanwhile are committed together, one BEGIN IMMEDIATE …
//     COMMIT for a batch, each write inside its own SAVEPOINT, so BEGIN,
//     COMMIT (the WAL append) and the hand-offs are paid once per batch.
//
// Coalesced writes (Coalesce) queue apart and are committed together, up
// to maxCoalesced (256) of those waiting, in one transaction of their own.
//
// What it keeps:
//   - First come, first served: the queues are channels, taken in order;
//     when both have writes waiting, the writer picks one at random (select).
//   - Each caller waits for its commit: submit returns only after COMMIT.
//   - One write's failure cannot undo another's: in a batch a failing write
//     rolls back to its own savepoint and the batch goes on; if anything
//     fails outside a savepoint (COMMIT, or SQLite rolling the whole
//     transaction back), every write of the batch gets the error — none is
//     reported done that was not committed.
//   - Writes run with their caller's values but not its cancellation. A
//     write in a transaction of its own (no group commit) whose caller leaves
//     while it runs is interrupted (sqlite3_interrupt) and rolled back; in
//     a shared transaction (group commit, coalesced) it is not, since an
//     interrupted statement rolls back the whole transaction. A caller that
//     leaves, or a write that waited past Options.Timeout, before its turn
//     is skipped and never runs.
//   - A panic in a write's function is recovered, its transaction (or, in
//     group commit, its savepoint) rolled back, and the panic handed to
//     its caller's goroutine; the writer goes on.
//   - Close runs what is queued, then stops.
type writer struct {
	db        *DB
	maxBatch  int
	queue     chan *pendingWrite
	coalesced chan *pendingWrite
	stop      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once

	mu    sync.Mutex
	stats WriterStats
}

// groupCommitBatch bounds a group commit's batch, so the first write in it
// never waits behind more than this many others before its COMMIT.
const groupCommitBatch = 32

// maxCoalesced bounds the coalesced writes committed together.
const maxCoalesced = 256

// Pending write states: queued until the writer takes it (running) or its
// caller leaves first (abandoned); the one that moves it out of queued
// decides which.
const (
	writeQueued int32 = iota
	writeRunning
	writeAbandoned
)

// pendingWrite is one write waiting in a queue: what to run, with whose
// values, and where its result goes. Its state decides, under a
// compare-and-swap, whether the writer runs it or its caller has left.
type pendingWrite struct {
	ctx    context.Context
	fn     func(context.Context, *Tx) error
	queued time.Time
	state  atomic.Int32
	done   chan error // buffered: the writer never blocks on it
}

// newWriter starts the writer goroutine of db, committing at most maxBatch
// writes in one transaction (1: a transaction each).
func newWriter(db *DB, maxBatch int) *writer {
	wr := &writer{db: db, maxBatch: maxBatch, queue: make(chan *pendingWrite, 4096), coalesced: make(chan *pendingWrite, 4096),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	go wr.run()
	return wr
}

// submit queues fn on queue (wr.queue or wr.coalesced) and waits for its
// result: its own error, its batch's, or ErrTimeout if its turn did not
// come within Options.Timeout.
func (wr *writer) submit(ctx context.Context, fn func(context.Context, *Tx) error, queue chan *pendingWrite) error {
	w := &pendingWrite{ctx: ctx, fn: fn, queued: time.Now(), done: make(chan error, 1)}
	return wr.wait(ctx, w, queue)
}

// wait queues w and waits for its result. A caller that leaves (its
// context ends, the writer timeout passes, the database closes) before its
// turn marks w abandoned, so the writer skips it; once w runs, its result
// is awaited whatever happens, so no caller is told a committed write failed.
func (wr *writer) wait(ctx context.Context, w *pendingWrite, queue chan *pendingWrite) error {
	// A caller that has left already is not queued: select picks at random
	// among ready cases, so the write could be queued, and run.
	if err := ctx.Err(); err != nil {
		return err
	}
	timer := time.NewTimer(wr.db.opts.Timeout)
	defer timer.Stop()
	select {
	case queue <- w:
	case <-wr.stopped:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return wr.timedOut()
	}
	wr.noteDepth()
	var giveUp error
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		giveUp = ctx.Err()
	case <-timer.C:
		giveUp = wr.timedOut()
	case <-wr.stopped:
		giveUp = ErrClosed
	}
	if w.state.CompareAndSwap(writeQueued, writeAbandoned) {
		wr.count(func(s *WriterStats) { s.Abandoned++ })
		return giveUp
	}
	return <-w.done // already running: its result is coming
}

// run is the writer goroutine: until close, it takes a write or a
// coalesced write (at random when both wait, as select does), with
// whatever else of its kind is waiting, and commits them. Once stopped,
// it runs what is still queued, then returns.
func (wr *writer) run() {
	defer close(wr.stopped)
	for {
		select {
		case w := <-wr.queue:
			wr.runWrites(w)
		case w := <-wr.coalesced:
			wr.runCoalesced(w)
		case <-wr.stop:
			wr.drain()
			return
		}
	}
}

// runWrites commits w and, in group commit, what else is queued with it.
func (wr *writer) runWrites(w *pendingWrite) {
	batch := wr.gather([]*pendingWrite{w}, wr.queue, wr.maxBatch)
	if wr.maxBatch == 1 {
		wr.commitOne(batch)
	} else {
		wr.commit(batch)
	}
}

// runCoalesced commits w with the coalesced writes queued with it.
func (wr *writer) runCoalesced(w *pendingWrite) {
	wr.commitCoalesced(wr.gather([]*pendingWrite{w}, wr.coalesced, maxCoalesced))
}

// drain runs the writes queued when Close was called.
func (wr *writer) drain() {
	for {
		select {
		case w := <-wr.queue:
			wr.runWrites(w)
		case w := <-wr.coalesced:
			wr.runCoalesced(w)
		default:
			return
		}
	}
}

// fnContext is the context a write's function runs with: its caller's
// values, no cancellation, and the mark that tells a nested Write.
func (wr *writer) fnContext(w *pendingWrite) context.Context {
	return context.WithValue(context.WithoutCancel(w.ctx), insideWrite{}, wr.db)
}

// timedOut is the error of a write whose turn did not come in time.
func (wr *writer) timedOut() error {
	return fmt.Errorf("waited %v for the writer's turn: %w", wr.db.opts.Timeout, ErrTimeout)
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
			waited := time.Since(w.queued)
			wr.db.observeWriteWait(waited)
			wr.count(func(s *WriterStats) { s.Turns++; s.Waited += waited })
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
		w.done <- err
		return
	}
	// A transaction of its own: interrupting it, if its caller leaves,
	// rolls back nothing but this write.
	stop := interruptOnDone(w.ctx, conn)
	err = wr.call(w, conn)
	stop()
	if err != nil {
		wr.rollback(conn)
		if _, ok := err.(*PanicError); !ok {
			err = stopped(w.ctx, err)
		}
		w.done <- err
		return
	}
	w.done <- wr.commitOn(conn)
}

// call runs w's function on conn. A panic in it is recovered and answered
// as a *PanicError, which Write panics with on its caller's goroutine:
// here it would end the program.
func (wr *writer) call(w *pendingWrite, conn *sql.Conn) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	tx := &Tx{Rx{conn: conn}}
	defer func() { tx.conn = nil }()
	return w.fn(wr.fnContext(w), tx)
}

// begin takes the write connection and starts a write transaction on it,
// retrying while another process holds SQLite's write lock. The
// transaction is run on the connection itself, not a *sql.Tx: database/sql
// starts a goroutine for every *sql.Tx (to roll it back if its context
// ends) and one for every query inside one, and a write here is never
// cancelled.
func (wr *writer) begin() (*sql.Conn, error) {
	bg := context.Background()
	conn, err := wr.db.writeDB.Conn(bg)
	if err != nil {
		return nil, err
	}
	if err := wr.db.begin(bg, conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// commitOn commits the transaction on conn and gives the connection back.
func (wr *writer) commitOn(conn *sql.Conn) error {
	err := commit(conn)
	conn.Close()
	if err != nil {
		return err
	}
	wr.count(func(s *WriterStats) { s.Commits++ })
	wr.committed()
	return nil
}

// rollback rolls back the transaction on conn and gives the connection
// back. It cannot fail in a way worth reporting over the error that caused
// it; if SQLite already rolled back, there is nothing to roll back.
func (wr *writer) rollback(conn *sql.Conn) {
	execOn(conn, `ROLLBACK`)
	conn.Close()
}

// commitCoalesced runs the coalesced writes of batch in one transaction;
// if one fails, all fail.
func (wr *writer) commitCoalesced(batch []*pendingWrite) {
	if len(batch) == 0 {
		return
	}
	fail := func(err error) {
		for _, w := range batch {
			w.done <- err
		}
	}
	conn, err := wr.begin()
	if err != nil {
		fail(err)
		return
	}
	for i, w := range batch {
		if err := wr.call(w, conn); err != nil {
			wr.rollback(conn)
			if p, ok := err.(*PanicError); ok {
				// The panic is its own caller's; the others fail with it
				// as an error, since their transaction was rolled back.
				w.done <- p
				batch = append(batch[:i:i], batch[i+1:]...)
				err = fmt.Errorf("sqlitedb: a coalesced write in the same transaction panicked: %v", p.Value)
			}
			fail(err)
			return
		}
	}
	fail(wr.commitOn(conn))
}

// commit runs a batch in one transaction, each write in a savepoint; see
// writer.
func (wr *writer) commit(live []*pendingWrite) {
	if len(live) == 0 {
		return
	}
	tx, err := wr.begin()
	if err != nil {
		for _, w := range live {
			w.done <- err
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
		if err := execOn(tx, `SAVEPOINT write`); err != nil {
			fail(fmt.Errorf("savepoint: %w", err))
			return
		}
		if err := wr.call(w, tx); err != nil {
			results[i] = err // a *PanicError too: the panic is its caller's alone
			if rerr := execOn(tx, `ROLLBACK TO write`); rerr != nil {
				// SQLite rolled the whole transaction back (it does on
				// some errors, e.g. a full disk): the batch is lost.
				fail(fmt.Errorf("%w (and the batch's transaction was lost: %v)", err, rerr))
				return
			}
		}
		if err := execOn(tx, `RELEASE write`); err != nil {
			fail(fmt.Errorf("release savepoint: %w", err))
			return
		}
	}
	if err := commit(tx); err != nil {
		tx.Close()
		for _, w := range live {
			w.done <- err
		}
		return
	}
	tx.Close()
	wr.count(func(s *WriterStats) { s.Commits++ })
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

// close stops the writer goroutine once it has run what was queued, and
// answers ErrClosed to any write that slipped in after. Calls after the
// first do nothing.
func (wr *writer) close() {
	wr.closeOnce.Do(func() { close(wr.stop) })
	<-wr.stopped
	for { // answer anything still queued
		select {
		case w := <-wr.queue:
			if w.state.CompareAndSwap(writeQueued, writeAbandoned) {
				w.done <- ErrClosed
			}
		case w := <-wr.coalesced:
			if w.state.CompareAndSwap(writeQueued, writeAbandoned) {
				w.done <- ErrClosed
			}
		default:
			return
		}
	}
}

// noteDepth records the queues' length after a write joined them,
// for MaxDepth.
func (wr *writer) noteDepth() {
	d := len(wr.queue) + len(wr.coalesced)
	wr.count(func(s *WriterStats) { s.MaxDepth = max(s.MaxDepth, d) })
}

// count updates the counters under their lock.
func (wr *writer) count(f func(*WriterStats)) {
	wr.mu.Lock()
	f(&wr.stats)
	wr.mu.Unlock()
}

// snapshot returns the counters with the queues' depth now.
func (wr *writer) snapshot() WriterStats {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	s := wr.stats
	s.Depth = len(wr.queue) + len(wr.coalesced)
	return s
}
