package http

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/loremnews/loremnews"
)

// limitKey is what a limiter counts by: the SHA-256 of the parts that name
// a counter (an address, a screen name, …). Fixed-size, so a limiter holds
// 32 bytes per key however long the input it came from.
type limitKey [sha256.Size]byte

// keyOf digests parts, each preceded by its length, so ("ab","c") and
// ("a","bc") are different keys.
func keyOf(parts ...string) limitKey {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var k limitKey
	h.Sum(k[:0])
	return k
}

// limiter counts attempts per key in fixed windows: in this process's
// memory (attemptLimiter), or in the database, shared by every process on
// it and kept across restarts (dbLimiter). The handler keeps every
// account-wide limit in the database: a restart, a deploy (serve replaces
// itself on SIGHUP) or a second process would otherwise hand an attacker
// a fresh allowance of guesses at an account's password. The limits by
// address alone stay in memory (see NewHandler).
type limiter interface {
	// take takes one attempt for key; when the key has used its limit it
	// takes nothing, and says how long until its window ends. An error
	// (the database's) takes nothing either: the caller must refuse the
	// request, not let it through unlimited.
	take(ctx context.Context, key limitKey) (ok bool, retryAfter time.Duration, err error)
	// giveBack gives back an attempt take took.
	giveBack(ctx context.Context, key limitKey)
}

// attemptLimiter allows each key at most limit attempts in a fixed window
// that starts at the key's first attempt. An attempt is taken (reserve)
// before the expensive work it guards, so a burst of simultaneous requests
// is counted as it arrives, not after each has run; an attempt that turns
// out to be legitimate is given back (release).
//
// Memory is bounded: keys whose window has passed are swept on every
// reserve, and at most maxKeys are kept. When a new key arrives at a full
// limiter, the key with the oldest window among those still under their
// limit is forgotten; a key that has used its limit (a locked account or
// address) goes only when every key held is locked. So a flood of new keys
// cannot erase a lockout: it only pushes out other keys of the flood.
//
// The keys are in two min-heaps by window start, open (under the limit)
// and locked: the oldest of either is found in O(1) and moved in
// O(log n).
type attemptLimiter struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	maxKeys int
	entries map[limitKey]*attemptEntry
	open    entryHeap // keys under their limit, oldest window first
	locked  entryHeap // keys that have used their limit, oldest window first
	now     func() time.Time
}

// attemptEntry is one key's count in its window.
type attemptEntry struct {
	key    limitKey
	count  int
	since  time.Time
	index  int  // position in its heap
	isHeld bool // in locked, not open
}

// defaultMaxKeys bounds each limiter to under 10 MB (a key costs under
// 200 bytes with its map slot and heap slot).
const defaultMaxKeys = 50_000

func newAttemptLimiter(limit int, window time.Duration) *attemptLimiter {
	return &attemptLimiter{limit: limit, window: window, maxKeys: defaultMaxKeys,
		entries: map[limitKey]*attemptEntry{}, now: time.Now}
}

// reserve takes one attempt for key. When the key has used its limit it
// takes nothing and says how long until its window ends.
func (l *attemptLimiter) reserve(key limitKey) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.sweep(now)
	e, found := l.entries[key]
	if found && e.count >= l.limit {
		return false, l.window - now.Sub(e.since)
	}
	if !found {
		if len(l.entries) >= l.maxKeys {
			l.evict()
		}
		e = &attemptEntry{key: key, since: now}
		l.entries[key] = e
		heap.Push(&l.open, e)
	}
	e.count++
	l.place(e)
	return true, 0
}

// release gives back an attempt reserve took for key.
func (l *attemptLimiter) release(key limitKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.entries[key]; ok && e.count > 0 {
		e.count--
		l.place(e)
	}
}

// take is reserve, as a limiter: memory never fails.
func (l *attemptLimiter) take(_ context.Context, key limitKey) (bool, time.Duration, error) {
	ok, wait := l.reserve(key)
	return ok, wait, nil
}

// giveBack is release, as a limiter.
func (l *attemptLimiter) giveBack(_ context.Context, key limitKey) { l.release(key) }

// place moves e to the heap its count belongs in.
func (l *attemptLimiter) place(e *attemptEntry) {
	switch locked := e.count >= l.limit; {
	case locked && !e.isHeld:
		heap.Remove(&l.open, e.index)
		e.isHeld = true
		heap.Push(&l.locked, e)
	case !locked && e.isHeld:
		heap.Remove(&l.locked, e.index)
		e.isHeld = false
		heap.Push(&l.open, e)
	}
}

// evict forgets one key to make room: the oldest still under its limit,
// or, when every key is locked, the oldest locked one.
func (l *attemptLimiter) evict() {
	h := &l.open
	if h.Len() == 0 {
		h = &l.locked
	}
	if h.Len() > 0 {
		delete(l.entries, heap.Pop(h).(*attemptEntry).key)
	}
}

// sweep forgets the keys whose window has passed.
func (l *attemptLimiter) sweep(now time.Time) {
	for _, h := range []*entryHeap{&l.open, &l.locked} {
		for h.Len() > 0 && now.Sub((*h)[0].since) >= l.window {
			delete(l.entries, heap.Pop(h).(*attemptEntry).key)
		}
	}
}

// entryHeap is a container/heap of entries, the oldest window first.
type entryHeap []*attemptEntry

// Len, Less and Swap order the heap by window start, keeping each
// entry's index current so heap.Remove can find it.
func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].since.Before(h[j].since) }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

// Push and Pop implement heap.Interface; use heap.Push and heap.Pop.
func (h *entryHeap) Push(x any) {
	e := x.(*attemptEntry)
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

// dbLimiter keeps its counts in the database (loremnews.LimitStore), so
// they hold across every process serving it and across restarts. Each
// reserve and release is one short write transaction. Its rows are keyed
// by the digest of its name and the caller's key: one table holds every
// limiter's counts, and two limiters that count by the same thing (the
// posts, comments and edits of one account) stay apart.
type dbLimiter struct {
	store  loremnews.LimitStore
	name   string
	limit  int
	window time.Duration
	log    *slog.Logger
	now    func() time.Time
}

func newDBLimiter(store loremnews.LimitStore, name string, limit int, window time.Duration, log *slog.Logger) *dbLimiter {
	return &dbLimiter{store: store, name: name, limit: limit, window: window, log: log, now: time.Now}
}

// rowKey is the key of key's row: 32 bytes, nothing in clear.
func (l *dbLimiter) rowKey(key limitKey) []byte {
	k := keyOf("limit", l.name, string(key[:]))
	return k[:]
}

// take reserves an attempt in the database. An error there is a 503
// ("try again"): fail closed, never unlimited, and not a 500 either (the
// database is busy, or the site is going away).
func (l *dbLimiter) take(ctx context.Context, key limitKey) (bool, time.Duration, error) {
	ok, wait, err := l.store.ReserveAttempt(ctx, l.rowKey(key), l.limit, l.window, l.now())
	if err != nil {
		return false, 0, fmt.Errorf("%w (limit %s: %w)", errLimitUnavailable, l.name, err)
	}
	return ok, wait, nil
}

// errLimitUnavailable answers a request whose limit could not be checked.
var errLimitUnavailable = loremnews.Errorf(loremnews.EUNAVAILABLE, "The site cannot check its limits right now. Please try again in a moment.")

// giveBack releases an attempt in the database, even when the request's
// context has ended. A failure is logged: the attempt then stays counted
// until its window ends, which errs on the safe side.
func (l *dbLimiter) giveBack(ctx context.Context, key limitKey) {
	if err := l.store.ReleaseAttempt(context.WithoutCancel(ctx), l.rowKey(key)); err != nil {
		l.log.Warn("release a rate-limit attempt", "limit", l.name, "err", err)
	}
}

// reservation is one attempt taken from one limiter.
type reservation struct {
	l   limiter
	key limitKey
	// countOnly: the attempt is counted if the limit has room, but a full
	// limit does not refuse it.
	countOnly bool
}

// reserveAll takes an attempt from every limiter, or from none: if one
// refuses, or fails, those already taken are given back. A refusal returns
// the limiter that refused (so the answer can name it) and its wait;
// refusedBy is nil when every limiter agreed. A failure returns its error
// (EUNAVAILABLE: the request must be refused with 503). release gives back
// all of them (after a success).
func reserveAll(ctx context.Context, rs ...reservation) (release func(), refusedBy limiter, retryAfter time.Duration, err error) {
	taken := make([]reservation, 0, len(rs))
	giveBack := func() {
		for _, t := range taken {
			t.l.giveBack(ctx, t.key)
		}
	}
	for _, r := range rs {
		ok, wait, err := r.l.take(ctx, r.key)
		switch {
		case err != nil:
			giveBack()
			return nil, nil, 0, err
		case ok:
			taken = append(taken, r)
		case !r.countOnly:
			giveBack()
			return nil, r.l, wait, nil
		}
	}
	return giveBack, nil, 0, nil
}

// accountKey normalises a screen name the way the database compares them.
func accountKey(name string) string { return strings.ToLower(strings.TrimSpace(name)) }
