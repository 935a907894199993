package http

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"golang.org/x/crypto/bcrypt"
)

func TestAttemptLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newAttemptLimiter(3, time.Minute)
	l.now = func() time.Time { return now }
	k, other := keyOf("k"), keyOf("other")
	for i := range 3 {
		if ok, _ := l.reserve(k); !ok {
			t.Fatalf("refused attempt %d of 3", i+1)
		}
	}
	if ok, wait := l.reserve(k); ok || wait != time.Minute {
		t.Fatalf("4th attempt: ok %v, wait %v; want refused for 1m", ok, wait)
	}
	if ok, _ := l.reserve(other); !ok {
		t.Fatal("another key is refused")
	}
	// A released attempt is given back.
	l.release(k)
	if ok, _ := l.reserve(k); !ok {
		t.Fatal("a released attempt was not given back")
	}
	now = now.Add(30 * time.Second)
	if ok, wait := l.reserve(k); ok || wait != 30*time.Second {
		t.Fatalf("half-way: ok %v, wait %v", ok, wait)
	}
	// Once the window has passed, the key starts again, and expired keys
	// are swept without being asked about.
	now = now.Add(30 * time.Second)
	if ok, _ := l.reserve(keyOf("third")); !ok || l.len() != 1 {
		t.Fatalf("after the window: %d keys held, want 1 (the new one)", l.len())
	}
	if ok, _ := l.reserve(k); !ok {
		t.Fatal("still refused after the window")
	}

	// Bounded memory: at most maxKeys keys, the oldest forgotten first.
	l.maxKeys = 10
	for i := range 100 {
		now = now.Add(time.Millisecond)
		l.reserve(keyOf(string(rune('a' + i))))
	}
	if l.len() != 10 {
		t.Fatalf("%d keys kept, limit 10", l.len())
	}
	if _, kept := l.entries[keyOf(string(rune('a'+99)))]; !kept {
		t.Fatal("the newest key was evicted")
	}
}

// TestFloodKeepsLockouts: a full limiter makes room by forgetting keys
// still under their limit, so new keys sent to fill it (failed sign-ins
// from thousands of addresses) do not erase a key that is locked. Only
// when every key held is locked does the oldest lockout go.
func TestFloodKeepsLockouts(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newAttemptLimiter(3, time.Hour)
	l.now = func() time.Time { return now }
	l.maxKeys = 10
	victim := keyOf("victim")
	for range 3 {
		l.reserve(victim)
	}
	// A locked key that released an attempt is open again, and may go.
	released := keyOf("released")
	for range 3 {
		l.reserve(released)
	}
	l.release(released)
	for i := range 1000 {
		now = now.Add(time.Millisecond)
		if ok, _ := l.reserve(keyOf(fmt.Sprint("flood-", i))); !ok {
			t.Fatalf("flood key %d refused", i)
		}
	}
	if l.len() != 10 {
		t.Fatalf("%d keys kept, limit 10", l.len())
	}
	if ok, _ := l.reserve(victim); ok {
		t.Fatal("the flood erased the locked key's count")
	}
	if l.count(released) != 0 {
		t.Fatal("a key under its limit outlived a flood of newer keys")
	}
	// Every key locked: the oldest lockout makes room.
	for i := range 10 {
		now = now.Add(time.Millisecond)
		for range 3 {
			l.reserve(keyOf(fmt.Sprint("locked-", i)))
		}
	}
	if l.len() != 10 || l.count(victim) != 0 || l.count(keyOf("locked-9")) != 3 {
		t.Fatalf("all locked: %d keys, victim %d, newest %d; want 10 keys, the oldest gone", l.len(), l.count(victim), l.count(keyOf("locked-9")))
	}
	// Windows still end for both kinds.
	now = now.Add(time.Hour)
	if ok, _ := l.reserve(victim); !ok || l.len() != 1 {
		t.Fatalf("after the window: ok %v, %d keys; want a fresh start", ok, l.len())
	}
}

func TestKeyOfSeparatesParts(t *testing.T) {
	if keyOf("ab", "c") == keyOf("a", "bc") {
		t.Fatal(`keyOf("ab","c") == keyOf("a","bc")`)
	}
}

func TestReserveAllIsAllOrNothing(t *testing.T) {
	a, b := newAttemptLimiter(5, time.Minute), newAttemptLimiter(1, time.Minute)
	k := keyOf("k")
	ctx := context.Background()
	if _, refusedBy, _, err := reserveAll(ctx, reservation{l: a, key: k}, reservation{l: b, key: k}); refusedBy != nil || err != nil {
		t.Fatal("first reservation refused")
	}
	if _, refusedBy, wait, _ := reserveAll(ctx, reservation{l: a, key: k}, reservation{l: b, key: k}); refusedBy != b || wait <= 0 {
		t.Fatal("second reservation allowed past b's limit of 1, or the refusal not named b")
	}
	// a gave back the attempt b refused: it holds only the first one.
	if got := a.count(k); got != 1 {
		t.Fatalf("a counts %d attempts, want 1", got)
	}
}

// brokenLimiter cannot count: its store fails.
type brokenLimiter struct{}

func (brokenLimiter) take(context.Context, limitKey) (bool, time.Duration, error) {
	return false, 0, errLimitUnavailable
}
func (brokenLimiter) giveBack(context.Context, limitKey) {}

// TestReserveAllGivesBackOnError: a limiter that cannot count refuses
// with its error (503), and the attempts already taken are given back.
func TestReserveAllGivesBackOnError(t *testing.T) {
	a := newAttemptLimiter(5, time.Minute)
	k := keyOf("k")
	release, refusedBy, _, err := reserveAll(context.Background(), reservation{l: a, key: k}, reservation{l: brokenLimiter{}, key: k})
	if err == nil || release != nil || refusedBy != nil || loremnews.ErrorCode(err) != loremnews.EUNAVAILABLE {
		t.Fatalf("release %v, refusedBy %v, err %v; want only an EUNAVAILABLE error", release != nil, refusedBy, err)
	}
	if got := a.count(k); got != 0 {
		t.Fatalf("a counts %d attempts, want 0: the one taken was not given back", got)
	}
}

// nopStore is a Store for tests that never reach it.
type nopStore struct{ loremnews.Store }

func TestDummyDigestUsesConfiguredCost(t *testing.T) {
	for _, cost := range []int{bcrypt.MinCost, 6} {
		h, err := NewHandler(nopStore{}, Config{BcryptCost: cost})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := bcrypt.Cost(h.dummyDigest); got != cost {
			t.Fatalf("dummy digest cost %d, configured %d", got, cost)
		}
	}
}

func TestClientAddr(t *testing.T) {
	proxies, err := ParseTrustedProxies("10.0.0.0/8, 192.0.2.1,::1")
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{cfg: Config{TrustedProxies: proxies}}
	for _, tc := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"198.51.100.7:1234", nil, "198.51.100.7"},
		{"198.51.100.7:1234", []string{"203.0.113.9"}, "198.51.100.7"}, // not a trusted peer: header ignored
		{"10.1.2.3:1234", []string{"203.0.113.9"}, "203.0.113.9"},
		{"10.1.2.3:1234", []string{"6.6.6.6, 203.0.113.9, 10.9.9.9"}, "203.0.113.9"},    // right to left, skipping proxies
		{"10.1.2.3:1234", []string{"6.6.6.6", "203.0.113.9, 192.0.2.1"}, "203.0.113.9"}, // several header lines
		{"10.1.2.3:1234", []string{"6.6.6.6, garbage"}, "10.1.2.3"},                     // garbled: believe nothing further
		{"10.1.2.3:1234", []string{"203.0.113.9:4711"}, "203.0.113.9"},                  // with a port
		{"10.1.2.3:1234", []string{"10.4.4.4"}, "10.4.4.4"},                             // only proxies: the leftmost
		{"[::1]:80", []string{"2001:db8::1"}, "2001:db8::1"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.peer
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := h.clientAddr(r).String(); got != tc.want {
			t.Errorf("peer %s, X-Forwarded-For %q: client %s, want %s", tc.peer, tc.xff, got, tc.want)
		}
	}
	if _, err := ParseTrustedProxies("10.0.0.0/8,nonsense"); err == nil || !strings.Contains(err.Error(), `"nonsense" is neither an address nor a CIDR prefix`) {
		t.Fatalf("nonsense: %v, want an error naming it", err)
	}
}

func TestAddrGroup(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.9":               "203.0.113.9",
		"2001:db8:1:2:aaaa::1":      "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff:1:2:3":   "2001:db8:1:2::/64",
		"2001:db8:1:3::1":           "2001:db8:1:3::/64",
		"::ffff:203.0.113.9":        "203.0.113.9",
		"fe80::1%eth0":              "fe80::/64",
		"2001:0db8:0001:0002::0001": "2001:db8:1:2::/64",
	} {
		if got := addrGroup(netip.MustParseAddr(in)); got != want {
			t.Errorf("addrGroup(%s) = %s, want %s", in, got, want)
		}
	}
}

// len is the number of keys held, so a test can see the limiter forget.
func (l *attemptLimiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// count is the attempts key holds in its window (0 when not held), so a
// test can see which key the limiter dropped.
func (l *attemptLimiter) count(key limitKey) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.entries[key]; ok {
		return e.count
	}
	return 0
}
