package http

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"maps"
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

// limiter counts attempts per key in fixed windows. The handler keeps
// every limit in the database (dbLimiter), shared by every process serving
// it (serve --workers N) and kept across restarts and reloads: counted in
// a process's memory, a limit would be N times itself with N workers, and
// a restart, a deploy (serve replaces itself on SIGHUP) or a worker
// restarted after a crash would hand an attacker a fresh allowance of
// guesses, or of accounts.
type limiter interface {
	// take takes one attempt for key; when the key has used its limit it
	// takes nothing, and says how long until its window ends. An error
	// (the database's) takes nothing either: the caller must refuse the
	// request, not let it through unlimited.
	take(ctx context.Context, key limitKey) (ok bool, retryAfter time.Duration, err error)
	// giveBack gives back an attempt take took.
	giveBack(ctx context.Context, key limitKey)
}

// dbLimiter keeps its counts in the database (loremnews.LimitStore), so
// they hold across every process serving it and across restarts. Each
// reserve and release is one short write transaction. Its rows are keyed
// by the digest of its name and the caller's key: one table holds every
// limiter's counts, and two limiters that count by the same thing (the
// posts, comments and edits of one account) stay apart.
//
// A key the database refused is refused in this process until its window
// ends without asking again (refused): a flood from one address, or at one
// account, costs a write per attempt only up to the limit, in each
// process. That memory is bounded (maxRefused keys: past it, it starts
// again empty, and the database refuses them again) and only ever refuses
// what the database refused: an attempt given back meanwhile by another
// process can leave this one refusing a key with one attempt free until
// the window ends, never the other way round.
type dbLimiter struct {
	store  loremnews.LimitStore
	name   string
	limit  int
	window time.Duration
	log    *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	refused map[limitKey]time.Time // until when the database refuses the key
}

// maxRefused bounds each limiter's memory of refused keys: some 64 bytes
// each with their map slot, 3 MB at most.
const maxRefused = 50_000

func newDBLimiter(store loremnews.LimitStore, name string, limit int, window time.Duration, log *slog.Logger) *dbLimiter {
	return &dbLimiter{store: store, name: name, limit: limit, window: window, log: log, now: time.Now,
		refused: map[limitKey]time.Time{}}
}

// rowKey is the key of key's row: 32 bytes, nothing in clear.
func (l *dbLimiter) rowKey(key limitKey) []byte {
	k := keyOf("limit", l.name, string(key[:]))
	return k[:]
}

// take reserves an attempt in the database, unless the database refused
// the key already and its window has not ended. An error there is a 503
// ("try again"): fail closed, never unlimited, and not a 500 either (the
// database is busy, or the site is going away).
func (l *dbLimiter) take(ctx context.Context, key limitKey) (bool, time.Duration, error) {
	now := l.now()
	if wait := l.refusedFor(key, now); wait > 0 {
		return false, wait, nil
	}
	ok, wait, err := l.store.ReserveAttempt(ctx, l.rowKey(key), l.limit, l.window, now)
	if err != nil {
		return false, 0, fmt.Errorf("%w (limit %s: %w)", errLimitUnavailable, l.name, err)
	}
	if !ok && wait > 0 {
		l.remember(key, now.Add(wait))
	}
	return ok, wait, nil
}

// refusedFor is how long the database still refuses key, as far as this
// process knows (0: ask it).
func (l *dbLimiter) refusedFor(key limitKey, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	until, ok := l.refused[key]
	if !ok {
		return 0
	}
	if !now.Before(until) {
		delete(l.refused, key)
		return 0
	}
	return until.Sub(now)
}

// remember notes that the database refuses key until until.
func (l *dbLimiter) remember(key limitKey, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.refused) >= maxRefused {
		now := l.now()
		maps.DeleteFunc(l.refused, func(_ limitKey, u time.Time) bool { return !now.Before(u) })
		if len(l.refused) >= maxRefused {
			clear(l.refused)
		}
	}
	l.refused[key] = until
}

// errLimitUnavailable answers a request whose limit could not be checked.
var errLimitUnavailable = loremnews.Errorf(loremnews.EUNAVAILABLE, "The site cannot check its limits right now. Please try again in a moment.")

// giveBack releases an attempt in the database, even when the request's
// context has ended. A failure is logged: the attempt then stays counted
// until its window ends, which errs on the safe side.
func (l *dbLimiter) giveBack(ctx context.Context, key limitKey) {
	l.mu.Lock()
	delete(l.refused, key)
	l.mu.Unlock()
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
