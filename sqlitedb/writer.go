//go:build cgo

package sqlitedb

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
)

// writer owns every write transaction of a DB from beginning to end —
// BEGIN IMMEDIATE and the wait for SQLite's lock, the write functions'
// statements, COMMIT or ROLLBACK, and the void after a failed COMMIT —
// on one goroutine, first come, first served. This file is the whole of
// it: what a write may see and what its caller is told are decided here.
//
// How writes are grouped into transactions:
//   - one transaction per write (Write). A caller hands
//     its write to the writer goroutine and waits for the result. The turn
//     never passes between goroutines: when a write commits, the writer
//     starts the next one at once, instead of waking its caller's
//     goroutine, which would first have to wait for a CPU (on a busy
//     machine, longer than the write itself) while nobody writes;
//   - coalesced writes (Coalesce) queue apart and are committed together,
//     up to maxCoalesced of those waiting, in one transaction of their own,
//     so BEGIN, COMMIT (the WAL append) and the hand-offs are paid once per
//     batch.
//
// What it keeps:
//   - First come, first served: the queues are channels, taken in order;
//     when both have writes waiting, the writer picks one at random (select).
//   - A write reported failed left nothing behind, and one reported done is
//     committed. Each caller waits for its transaction's end. SQLite may
//     roll a transaction back on its own (an interrupted write statement,
//     a full disk, an I/O error): the handle then refuses every further
//     statement (txnMark), the connection's commit hook turns anything
//     that would still commit on it — a statement through the escape hatch
//     — into a rollback (only the writer's own COMMIT passes), and the
//     writes of that transaction are told it was rolled back.
//   - One write's failure does not fail another: in a coalesced batch,
//     the failing write is answered and the others run again without it. When SQLite rolls a shared transaction back during
//     one write's function, that write is answered with its error and the
//     others run once more, in a transaction without it (nothing of theirs
//     was committed, so running them again cannot write anything twice); if
//     that one is lost too, they fail.
//   - A COMMIT that fails with an I/O error or a full disk may leave its
//     frames complete in the WAL, where recovery after a crash would find
//     them; the writer voids them (see voidFailedCommit), waiting for
//     SQLite's lock like a write. Until it has, no write commits: each
//     first tries the void again, and fails if it cannot run.
//   - Writes run with their caller's values but not its cancellation. A
//     write in a transaction of its own whose caller leaves while it runs
//     is interrupted (sqlite3_interrupt) and rolled back; in a shared
//     transaction it is not, since an interrupted write statement rolls
//     back the whole transaction. A caller that leaves, or a write that
//     waited past the timeout, before its turn is skipped and never runs.
//   - A panic in a write's function, or in the wait hook, is recovered, its
//     transaction (or savepoint) rolled back, and the panic handed to its
//     caller's goroutine; a write function that calls runtime.Goexit (as
//     t.FailNow does) ends its transaction the same way, and a new writer
//     goroutine takes over. The writer goes on.
//   - Close runs what is queued, then stops.
type writer struct {
	cfg       writerConfig
	queue     chan *pendingWrite
	coalesced chan *pendingWrite
	stop      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once

	// unvoided, when set, is why the frames of a failed COMMIT may still
	// lie complete in the WAL: no write commits until a void has run.
	// Writer goroutine only.
	unvoided error
	// cur is the transaction the writer goroutine runs now, for a write
	// function that calls runtime.Goexit. Writer goroutine only.
	cur struct {
		conn  *sql.Conn
		batch []*pendingWrite
	}
	// turn is this process's turn among the processes writing the file
	// (turn.go). Writer goroutine only.
	turn procTurn

	// goid is the writer goroutine's id (run sets it); running is the
	// write whose function runs on it now (nil: none). A Write called
	// from that function with the ctx of the write that runs it is found
	// by them (calledFromFn).
	goid    uint64
	running atomic.Pointer[pendingWrite]

	mu    sync.Mutex
	stats WriterStats
}

// writerConfig is what the writer needs of its DB.
type writerConfig struct {
	pool        *sql.DB             // the one write connection
	timeout     time.Duration       // Options.Timeout: the bound of every wait
	owner       any                 // what a write's ctx carries under insideWrite{}
	onWait      func(time.Duration) // Options.OnWriteWait, or nil
	committed   func()              // after each commit, the connection back in the pool
	busyRetries *atomic.Int64       // BEGINs retried while another process held the lock
	// procQueue hands out the turns among the processes writing the file; nil:
	// the writer polls for SQLite's lock alone (queueState says why). The
	// writer goroutine sets it to nil if the queue turns off while it runs
	// (queueFailed).
	procQueue  *processQueue
	queueState string
}

// maxCoalesced bounds the coalesced writes committed together.
const maxCoalesced = 256

// yieldBelow is how many coalesced writes must be queued for the writer to
// commit them without first letting other goroutines run (runCoalesced).
const yieldBelow = 8

// busyInterval is how often a write polls for SQLite's lock while another
// process holds it.
const busyInterval = time.Millisecond

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
	ctx      context.Context
	fn       func(context.Context, *Tx) error
	queued   time.Time
	state    atomic.Int32
	done     chan error // buffered: the writer never blocks on it
	answered bool       // writer goroutine only
	begun    bool       // its wait was counted: writer goroutine only
}

// answer gives w's caller its result, once.
func (w *pendingWrite) answer(err error) {
	if !w.answered {
		w.answered = true
		w.done <- err
	}
}

// batchKind is how the writes of a transaction share it.
type batchKind int

const (
	ownTxn       batchKind = iota // one write, interrupted if its caller leaves
	coalescedTxn                  // coalesced writes
)

// newWriter starts the writer goroutine.
func newWriter(cfg writerConfig) *writer {
	wr := &writer{cfg: cfg, queue: make(chan *pendingWrite, 4096), coalesced: make(chan *pendingWrite, 4096),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	wr.stats.Queue = cfg.queueState
	go wr.run()
	return wr
}

// submit queues fn on queue (wr.queue or wr.coalesced) and waits for its
// result: its own error, its transaction's, or ErrTimeout if its turn did
// not come within the timeout.
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
	timer := time.NewTimer(wr.cfg.timeout)
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
// it runs what is still queued, then returns. If a write's function ended
// the goroutine (runtime.Goexit), call has cleaned up after it, and a new
// goroutine goes on.
func (wr *writer) run() {
	wr.goid = goroutineID()
	returned := false
	defer func() {
		if !returned {
			go wr.run()
			return
		}
		close(wr.stopped)
	}()
	for {
		select {
		case w := <-wr.queue:
			wr.runWrites(w)
		case w := <-wr.coalesced:
			wr.runCoalesced(w)
		case <-wr.stop:
			// Once stop is closed this case is always ready, and select
			// picks at random among the ready ones: what is still
			// queued runs first (only this goroutine takes from the
			// queues, so a length above 0 is a write to take).
			if wr.waiting() > 0 {
				continue
			}
			wr.turn.end()
			returned = true
			return
		}
		if wr.turn.held && wr.turn.over(wr.waiting()) {
			wr.turn.end()
		}
	}
}

// runWrites commits w in a transaction of its own.
func (wr *writer) runWrites(w *pendingWrite) {
	wr.runBatch(wr.gather([]*pendingWrite{w}, wr.queue, 1), ownTxn)
}

// runCoalesced commits w with the coalesced writes queued with it.
//
// When few are queued, the writer first lets the goroutines ready to run
// go ahead of it (runtime.Gosched): a request about to submit its touch
// then joins this commit instead of needing one of its own. A writer woken
// by a single touch would otherwise commit it alone at once, and every
// commit costs its own BEGIN, WAL frames and locks, and empties the read
// connections' page caches. Where many wait already (a busy server), or
// while it holds the turn among processes (others may be waiting for it),
// it commits at once.
func (wr *writer) runCoalesced(w *pendingWrite) {
	if len(wr.coalesced) < yieldBelow && !wr.turn.held {
		runtime.Gosched()
	}
	wr.runBatch(wr.gather([]*pendingWrite{w}, wr.coalesced, maxCoalesced), coalescedTxn)
}

// gather adds to batch what is waiting in queue now, up to max, and
// returns the writes not abandoned meanwhile, marked running. A write
// whose wait hook panicked is answered with the panic and not run.
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
		if !w.state.CompareAndSwap(writeQueued, writeRunning) {
			continue
		}
		wr.count(func(s *WriterStats) { s.Writes++ })
		live = append(live, w)
	}
	return live
}

// begun counts, for each write of batch whose transaction has just begun
// for the first time, how long it waited since Write, and tells the wait
// hook; it returns the writes to run, without those whose hook panicked
// (they are answered with the panic).
func (wr *writer) begun(batch []*pendingWrite) []*pendingWrite {
	live := batch[:0]
	for _, w := range batch {
		if w.begun {
			live = append(live, w)
			continue
		}
		w.begun = true
		waited := time.Since(w.queued)
		wr.count(func(s *WriterStats) { s.Waited += waited; s.MaxWait = max(s.MaxWait, waited) })
		if p := wr.observeWait(waited); p != nil {
			w.answer(p)
			continue
		}
		live = append(live, w)
	}
	return live
}

// observeWait tells the wait hook, if any, how long a write waited; a
// panic in it is answered to that write's caller.
func (wr *writer) observeWait(waited time.Duration) (p *PanicError) {
	if wr.cfg.onWait == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			p = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	wr.cfg.onWait(waited)
	return nil
}

// runBatch commits batch, answering each write. Writes that ran in a
// transaction rolled back for another write's sake run again without it.
func (wr *writer) runBatch(batch []*pendingWrite, kind batchKind) {
	retriedLost := false
	for len(batch) > 0 {
		var lost bool
		batch, lost = wr.transact(batch, kind, retriedLost)
		retriedLost = retriedLost || lost
	}
}

// transact runs batch in one transaction and answers its writes, except
// those it returns: they ran, or were to run, in a transaction rolled back
// for another write's sake, nothing of theirs committed, and they are to
// run again without it. lost reports that SQLite rolled the transaction
// back on its own; after one such (lostBefore), the others fail instead.
func (wr *writer) transact(batch []*pendingWrite, kind batchKind, lostBefore bool) (again []*pendingWrite, lost bool) {
	failAll := func(err error) {
		for _, w := range batch {
			w.answer(err)
		}
	}
	// The wait for the turn among processes and for SQLite's lock ends
	// when the write's caller leaves (an ordinary write's ctx; coalesced
	// writes are shared, and wait for them all), or Options.Timeout after
	// the first write of the batch was submitted: Timeout bounds the
	// whole wait, in this process and the others.
	var leave <-chan struct{}
	if kind == ownTxn {
		leave = batch[0].ctx.Done()
	}
	deadline := batch[0].queued.Add(wr.cfg.timeout)
	if err := wr.takeTurn(leave, deadline); err != nil {
		if errors.Is(err, errTurnGivenUp) {
			err = fmt.Errorf("left while waiting for the write turn among processes: %w", batch[0].ctx.Err())
		}
		failAll(err)
		return nil, false
	}
	if err := wr.voidPending(); err != nil {
		failAll(err)
		return nil, false
	}
	conn, txn, err := wr.begin(leave, deadline)
	if err != nil {
		if errors.Is(err, errTurnGivenUp) {
			err = fmt.Errorf("left while waiting for SQLite's write lock, which another program held: %w", batch[0].ctx.Err())
		}
		failAll(err)
		return nil, false
	}
	if batch = wr.begun(batch); len(batch) == 0 {
		wr.rollback(conn)
		return nil, false
	}
	wr.cur.conn, wr.cur.batch = conn, batch
	defer func() { wr.cur.conn, wr.cur.batch = nil, nil }()
	without := func(i int) []*pendingWrite { return append(batch[:i:i], batch[i+1:]...) }
	for i, w := range batch {
		err := wr.call(w, conn, &txn, kind == ownTxn)
		if txn.ended() {
			// SQLite rolled the transaction back during w's function.
			wr.rollback(conn)
			lost := lostError(w, err, &txn, kind)
			w.answer(lost)
			others := without(i)
			if lostBefore {
				for _, o := range others {
					o.answer(fmt.Errorf("another write in the same transaction: %w", lost))
				}
				return nil, true
			}
			return others, true
		}
		if err != nil {
			// A coalesced write that fails fails alone: the others run
			// again without it.
			wr.rollback(conn)
			if kind == ownTxn {
				w.answer(callerError(w, err))
				return nil, false
			}
			w.answer(err)
			return without(i), false
		}
	}
	if err := wr.commit(conn); err != nil {
		failAll(err)
		return nil, false
	}
	wr.count(func(s *WriterStats) { s.Commits++ })
	wr.cfg.committed()
	for _, w := range batch {
		w.answer(nil)
	}
	return nil, false
}

// lostError is what w's caller is told when SQLite rolled its transaction
// back during w's function, which returned err.
func lostError(w *pendingWrite, err error, txn *txnMark, kind batchKind) error {
	if _, ok := err.(*PanicError); ok {
		return err
	}
	switch {
	case err == nil: // the function went on after the error that ended it
		err = txn.endedError()
	case !errors.Is(err, ErrRolledBack):
		err = fmt.Errorf("%w (%w)", err, ErrRolledBack)
	}
	if kind == ownTxn {
		err = withCtxErr(w.ctx, err)
	}
	return err
}

// callerError is what the caller of a write in a transaction of its own
// is told when its function returned err: err, wrapped with the caller's
// ctx error if it left meanwhile (its statement was interrupted).
func callerError(w *pendingWrite, err error) error {
	if _, ok := err.(*PanicError); ok {
		return err
	}
	return withCtxErr(w.ctx, err)
}

// call runs w's function on conn, in the transaction txn marks, and keeps
// in txn the error after which SQLite ended it, if its handle saw one. A
// panic in the function is recovered and answered as a *PanicError, which
// Write panics with on its caller's goroutine: here it would end the
// program. If the function calls runtime.Goexit, which cannot be stopped,
// the transaction is rolled back and its writes answered before the
// goroutine ends (run starts another). With interrupt, the statement
// running when w's caller leaves is interrupted.
func (wr *writer) call(w *pendingWrite, conn *sql.Conn, txn *txnMark, interrupt bool) (err error) {
	tx := &Tx{Rx{conn: conn, txn: *txn}}
	returned := false
	wr.running.Store(w)
	defer func() {
		wr.running.Store(nil)
		tx.conn = nil
		txn.lost = tx.txn.lost
		if returned {
			return
		}
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
			return
		}
		wr.afterGoexit(w)
	}()
	if interrupt { // deferred after the above, so it runs first
		stop := interruptOnDone(w.ctx, conn)
		defer stop()
	}
	ctx := context.WithValue(context.WithoutCancel(w.ctx), insideWrite{}, wr.cfg.owner)
	err = w.fn(ctx, tx)
	returned = true
	return err
}

// calledFromFn reports whether a Write given ctx is called by the
// function of the write that runs now, with that write's own ctx (or one
// that shares its Done channel: context.WithValue of it), rather than the
// ctx the function was given. The goroutine's id (runtime.Stack's first
// line: 5 to 20 µs, as deep as the stack) is looked up only then, never
// for a write whose ctx has no Done channel or another one.
func (wr *writer) calledFromFn(ctx context.Context) bool {
	w := wr.running.Load()
	if w == nil {
		return false
	}
	done := ctx.Done()
	return done != nil && done == w.ctx.Done() && goroutineID() == wr.goid
}

// goroutineID is the calling goroutine's id, from the first line of its
// stack ("goroutine 42 [running]:").
func goroutineID() uint64 {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// errGoexit answers a write whose function called runtime.Goexit.
var errGoexit = errors.New("sqlitedb: the write's function called runtime.Goexit (as t.FailNow does); its transaction was rolled back")

// afterGoexit rolls back the transaction the writer goroutine was running
// when w's function called runtime.Goexit, and answers its writes: w with
// errGoexit, the others with the rollback.
func (wr *writer) afterGoexit(w *pendingWrite) {
	if wr.cur.conn != nil {
		wr.rollback(wr.cur.conn)
	}
	for _, o := range wr.cur.batch {
		if o == w {
			o.answer(errGoexit)
		} else {
			o.answer(fmt.Errorf("%w: another write in the same transaction called runtime.Goexit", ErrRolledBack))
		}
	}
	w.answer(errGoexit)
}

// begin takes the write connection and starts a write transaction on it,
// BEGIN IMMEDIATE, retrying while another process holds SQLite's write
// lock (up to deadline, or until leave is closed: errTurnGivenUp), and closes the connection's commit gate: from then on only the
// writer's own COMMIT (execCommit) commits on it, until close opens it
// for Close's own statements. The transaction is
// run on the connection itself, not a *sql.Tx: database/sql starts a
// goroutine for every *sql.Tx (to roll it back if its context ends) and
// one for every query inside one, and a write here is never cancelled.
func (wr *writer) begin(leave <-chan struct{}, deadline time.Time) (*sql.Conn, txnMark, error) {
	conn, err := wr.cfg.pool.Conn(context.Background())
	if err != nil {
		return nil, txnMark{}, err
	}
	var txn txnMark
	err = wr.whileBusyUntil(leave, deadline, func() (err error) {
		txn, err = markTxn(conn, `BEGIN IMMEDIATE`)
		return err
	})
	if err != nil {
		conn.Close()
		return nil, txnMark{}, fmt.Errorf("begin: %w", err)
	}
	txn.hooks.allow_commit = 0
	return conn, txn, nil
}

// rollback rolls back the transaction on conn, if SQLite has not already,
// and gives the connection back. It cannot fail in a way worth reporting
// over the error that caused it.
func (wr *writer) rollback(conn *sql.Conn) {
	execOn(conn, `ROLLBACK`)
	conn.Close()
}

// commit commits the transaction on conn and gives the connection back.
// If COMMIT fails, the transaction is rolled back, and after an I/O error
// or a full disk what the COMMIT may have left in the WAL is voided
// first; if the void cannot run, writes stop until it has (voidPending).
func (wr *writer) commit(conn *sql.Conn) error {
	defer conn.Close()
	err := execCommit(conn)
	if err == nil {
		return nil
	}
	execOn(conn, `ROLLBACK`)
	if mayLeaveFrames(err) {
		if verr := voidFailedCommit(conn, wr.whileBusy); verr != nil {
			wr.unvoided = fmt.Errorf("a COMMIT failed (%v) and voiding what it may have left in the WAL failed too (%w)", err, verr)
		}
	}
	return fmt.Errorf("commit: %w", err)
}

// voidPending runs the void a failed COMMIT still needs, if any, and
// answers an error if it cannot: no write may commit above frames a crash
// would bring back.
func (wr *writer) voidPending() error {
	if wr.unvoided == nil {
		return nil
	}
	conn, err := wr.cfg.pool.Conn(context.Background())
	if err == nil {
		err = voidFailedCommit(conn, wr.whileBusy)
		conn.Close()
	}
	if err != nil {
		return fmt.Errorf("sqlitedb: not writing until it is voided: %w; voiding it again: %w", wr.unvoided, err)
	}
	wr.unvoided = nil
	return nil
}

// mayLeaveFrames reports whether a COMMIT that failed with err may have
// written its frames to the WAL: an I/O error or a full disk.
func mayLeaveFrames(err error) bool {
	code := sqlite3.ErrNo(ErrorCode(err) & 0xff)
	return code == sqlite3.ErrIoErr || code == sqlite3.ErrFull
}

// execCommit runs COMMIT on conn with its commit gate open.
func execCommit(conn *sql.Conn) error {
	return runOn(conn, `COMMIT`, func(c *driverConn, query string) error {
		was := c.hooks.allow_commit
		c.hooks.allow_commit = 1
		defer func() { c.hooks.allow_commit = was }()
		return c.exec(query)
	})
}

// voidFailedCommit makes sure a COMMIT that failed with an I/O error
// stays undone after a crash. When the write or sync that fails comes
// after the transaction's commit frame reached the WAL (with
// synchronous=FULL, the WAL's fsync, or the padding written before it),
// SQLite reports the error and rolls back in memory, but the frames stay
// in the file past the last commit it published, and recovery after a
// crash (rebuilding the wal-index from the WAL file) would replay them: a
// write reported failed would be there after kill -9. A transaction that
// changes nothing, committed at once, is appended where those frames
// begin, and its checksums end the chain recovery follows. It is synced
// (synchronous=FULL for it), so a power loss cannot keep the failed frames
// without it. It waits for SQLite's write lock with wait, like a write: if
// another process holds it, that process may be about to commit nothing,
// leaving the frames in place. SQLite's unix VFS behaves the same; this
// is not the package's VFS.
func voidFailedCommit(conn *sql.Conn, wait func(try func() error) error) error {
	ctx := context.Background()
	var sync int64
	if err := conn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		return err
	}
	if sync < 2 {
		if err := execOn(conn, `PRAGMA synchronous = FULL`); err != nil {
			return err
		}
		defer execOn(conn, fmt.Sprintf(`PRAGMA synchronous = %d`, sync))
	}
	if err := wait(func() error { return execOn(conn, `BEGIN IMMEDIATE`) }); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	var v int64
	err := conn.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v)
	if err == nil {
		err = execOn(conn, fmt.Sprintf(`PRAGMA user_version = %d`, v))
	}
	if err == nil {
		err = execCommit(conn)
	}
	if err != nil {
		execOn(conn, `ROLLBACK`)
	}
	return err
}

// whileBusy runs try until it succeeds, fails with anything but a busy
// error, or the timeout has passed, sleeping busyInterval between tries.
// Unlike SQLite's busy handler it does not back off, so the writer that
// has waited longest is not the one that polls least often.
func (wr *writer) whileBusy(try func() error) error {
	return wr.whileBusyUntil(nil, time.Time{}, try)
}

// whileBusyUntil is whileBusy up to deadline (zero: the timeout after the
// first busy error) or until leave is closed (errTurnGivenUp).
func (wr *writer) whileBusyUntil(leave <-chan struct{}, deadline time.Time, try func() error) error {
	var poll *time.Timer
	for {
		err := try()
		if err == nil || !IsBusy(err) {
			return err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(wr.cfg.timeout)
		} else if time.Now().After(deadline) {
			return err
		}
		wr.cfg.busyRetries.Add(1)
		if poll == nil {
			poll = time.NewTimer(busyInterval)
			defer poll.Stop()
		} else {
			poll.Reset(busyInterval)
		}
		select {
		case <-poll.C:
		case <-leave:
			return errTurnGivenUp
		}
	}
}

// timedOut is the error of a write whose turn did not come in time.
func (wr *writer) timedOut() error {
	return fmt.Errorf("waited %v for the writer's turn: %w", wr.cfg.timeout, ErrTimeout)
}

// close stops the writer goroutine once it has run what was queued, and
// answers ErrClosed to any write that slipped in after. Calls after the
// first do nothing.
func (wr *writer) close() {
	wr.closeOnce.Do(func() { close(wr.stop) })
	<-wr.stopped
	// Close's own statements (PRAGMA optimize may commit statistics) pass.
	if conn, err := wr.cfg.pool.Conn(context.Background()); err == nil {
		onOwnConn(conn, "close", func(c *driverConn) error {
			c.hooks.allow_commit = 1
			return nil
		})
		conn.Close()
	}
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
	d := wr.waiting()
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
	s.Depth = wr.waiting()
	return s
}

// insideWrite is the key of the value the writer puts in a write's
// context: the DB it runs on.
type insideWrite struct{}

// waiting is how many writes wait in the queues now.
func (wr *writer) waiting() int { return len(wr.queue) + len(wr.coalesced) }

// takeTurn waits for this process's turn among the processes writing the
// file (procTurn.take), if they queue, up to deadline or until leave is
// closed, and counts the wait; a queue that failed is counted (and turned
// off, if for good), and the write goes on without a turn.
func (wr *writer) takeTurn(leave <-chan struct{}, deadline time.Time) error {
	q := wr.cfg.procQueue
	if q == nil {
		return nil
	}
	waited, queueErr, err := wr.turn.take(q, wr.waiting, leave, deadline, wr.cfg.timeout)
	if waited > 0 {
		wr.count(func(s *WriterStats) {
			s.TurnWaits++
			s.TurnWaited += waited
			s.MaxTurnWait = max(s.MaxTurnWait, waited)
		})
	}
	if queueErr != nil {
		wr.queueFailed(queueErr)
	}
	return err
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
