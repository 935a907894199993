package http

import (
	"strings"
	"sync"
	"time"
)

// failureLimiter counts failed sign-ins per key (an IP address, or a screen
// name) in a fixed window and says when a key has had too many, so that
// guessing passwords is slow from one address and for one account. It
// forgets a key once its window has passed, and keeps at most maxKeys keys
// (oldest first out), so a flood of made-up names cannot grow it forever.
type failureLimiter struct {
	mu      sync.Mutex
	limit   int
	window  time.Duration
	maxKeys int
	entries map[string]*failureEntry
	now     func() time.Time
}

type failureEntry struct {
	count int
	since time.Time
}

func newFailureLimiter(limit int, window time.Duration) *failureLimiter {
	return &failureLimiter{limit: limit, window: window, maxKeys: 100_000, entries: map[string]*failureEntry{}, now: time.Now}
}

// blocked reports whether key has reached the limit, and for how much longer.
func (l *failureLimiter) blocked(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.entries[key]
	if !ok {
		return false, 0
	}
	left := l.window - l.now().Sub(e.since)
	if left <= 0 {
		delete(l.entries, key)
		return false, 0
	}
	return e.count >= l.limit, left
}

// fail records a failure for key.
func (l *failureLimiter) fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	e, ok := l.entries[key]
	if !ok || now.Sub(e.since) >= l.window {
		if len(l.entries) >= l.maxKeys {
			l.evictOldest(now)
		}
		l.entries[key] = &failureEntry{count: 1, since: now}
		return
	}
	e.count++
}

// reset forgets key (after a successful sign-in).
func (l *failureLimiter) reset(key string) {
	l.mu.Lock()
	delete(l.entries, key)
	l.mu.Unlock()
}

// evictOldest drops expired entries, or else the oldest one.
func (l *failureLimiter) evictOldest(now time.Time) {
	var oldestKey string
	var oldest time.Time
	for k, e := range l.entries {
		if now.Sub(e.since) >= l.window {
			delete(l.entries, k)
			continue
		}
		if oldestKey == "" || e.since.Before(oldest) {
			oldestKey, oldest = k, e.since
		}
	}
	if len(l.entries) >= l.maxKeys {
		delete(l.entries, oldestKey)
	}
}

// accountKey normalises a screen name the way the database compares them.
func accountKey(name string) string { return strings.ToLower(strings.TrimSpace(name)) }
