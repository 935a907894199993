package http

import (
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"sync"
	"time"
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

// reservation is one attempt taken from one limiter.
type reservation struct {
	l   *attemptLimiter
	key limitKey
}

// reserveAll takes an attempt from every limiter, or from none: if one
// refuses, those already taken are given back, and the limiter that
// refused (so the answer can name it) and its wait are returned; refusedBy
// is nil when every limiter agreed. release gives back all of them (after
// a success).
func reserveAll(rs ...reservation) (release func(), refusedBy *attemptLimiter, retryAfter time.Duration) {
	for i, r := range rs {
		if ok, wait := r.l.reserve(r.key); !ok {
			for _, taken := range rs[:i] {
				taken.l.release(taken.key)
			}
			return nil, r.l, wait
		}
	}
	return func() {
		for _, r := range rs {
			r.l.release(r.key)
		}
	}, nil, 0
}

// accountKey normalises a screen name the way the database compares them.
func accountKey(name string) string { return strings.ToLower(strings.TrimSpace(name)) }
