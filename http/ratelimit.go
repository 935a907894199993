package http

import (
	"container/list"
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
// reserve, and at most maxKeys are kept, the oldest forgotten first when a
// new one arrives. Windows start when a key is first seen, so insertion
// order is expiry order and both are O(1) from the front of one list.
type attemptLimiter struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	maxKeys int
	entries map[limitKey]*list.Element // of *attemptEntry
	order   *list.List                 // oldest window first
	now     func() time.Time
}

type attemptEntry struct {
	key   limitKey
	count int
	since time.Time
}

// defaultMaxKeys bounds each limiter to under 10 MB (a key costs under
// 200 bytes with its map slot and list element).
const defaultMaxKeys = 50_000

func newAttemptLimiter(limit int, window time.Duration) *attemptLimiter {
	return &attemptLimiter{limit: limit, window: window, maxKeys: defaultMaxKeys,
		entries: map[limitKey]*list.Element{}, order: list.New(), now: time.Now}
}

// reserve takes one attempt for key. When the key has used its limit it
// takes nothing and says how long until its window ends.
func (l *attemptLimiter) reserve(key limitKey) (ok bool, retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.sweep(now)
	if el, found := l.entries[key]; found {
		e := el.Value.(*attemptEntry)
		if e.count >= l.limit {
			return false, l.window - now.Sub(e.since)
		}
		e.count++
		return true, 0
	}
	if len(l.entries) >= l.maxKeys {
		l.remove(l.order.Front())
	}
	l.entries[key] = l.order.PushBack(&attemptEntry{key: key, count: 1, since: now})
	return true, 0
}

// release gives back an attempt reserve took for key.
func (l *attemptLimiter) release(key limitKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.entries[key]; ok {
		if e := el.Value.(*attemptEntry); e.count > 0 {
			e.count--
		}
	}
}

// sweep forgets the keys whose window has passed.
func (l *attemptLimiter) sweep(now time.Time) {
	for el := l.order.Front(); el != nil && now.Sub(el.Value.(*attemptEntry).since) >= l.window; el = l.order.Front() {
		l.remove(el)
	}
}

func (l *attemptLimiter) remove(el *list.Element) {
	delete(l.entries, el.Value.(*attemptEntry).key)
	l.order.Remove(el)
}

// len is the number of keys held.
func (l *attemptLimiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// reservation is one attempt taken from one limiter.
type reservation struct {
	l   *attemptLimiter
	key limitKey
}

// reserveAll takes an attempt from every limiter, or from none: if one
// refuses, those already taken are given back and the refusal's wait is
// returned. release gives back all of them (after a success).
func reserveAll(rs ...reservation) (release func(), ok bool, retryAfter time.Duration) {
	for i, r := range rs {
		if ok, wait := r.l.reserve(r.key); !ok {
			for _, taken := range rs[:i] {
				taken.l.release(taken.key)
			}
			return nil, false, wait
		}
	}
	return func() {
		for _, r := range rs {
			r.l.release(r.key)
		}
	}, true, 0
}

// accountKey normalises a screen name the way the database compares them.
func accountKey(name string) string { return strings.ToLower(strings.TrimSpace(name)) }
