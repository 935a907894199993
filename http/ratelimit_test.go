package http

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loremnews/loremnews"
	"golang.org/x/crypto/bcrypt"
)

// memLimits is a loremnews.LimitStore in memory, as the stores keep it,
// that counts the calls that reach it.
type memLimits struct {
	nopStore
	rows  map[string]*memLimit
	calls int
}

type memLimit struct {
	count int
	since time.Time
}

func newMemLimits() *memLimits { return &memLimits{rows: map[string]*memLimit{}} }

func (m *memLimits) ReserveAttempt(_ context.Context, key []byte, limit int, window time.Duration, now time.Time) (bool, time.Duration, error) {
	m.calls++
	r, ok := m.rows[string(key)]
	if !ok || now.Sub(r.since) >= window {
		m.rows[string(key)] = &memLimit{count: 1, since: now}
		return true, 0, nil
	}
	if r.count >= limit {
		return false, window - now.Sub(r.since), nil
	}
	r.count++
	return true, 0, nil
}

func (m *memLimits) ReleaseAttempt(_ context.Context, key []byte) error {
	m.calls++
	if r, ok := m.rows[string(key)]; ok && r.count > 0 {
		r.count--
	}
	return nil
}

// count is the attempts l holds for key in its window.
func (m *memLimits) count(l *dbLimiter, key limitKey) int {
	if r, ok := m.rows[string(l.rowKey(key))]; ok {
		return r.count
	}
	return 0
}

// TestDBLimiterRemembersRefusals: once the database refuses a key, the
// limiter refuses it without asking again until the window ends (a flood
// costs no write past the limit), then asks again; an attempt given back
// in this process forgets the refusal; the memory of refusals is bounded.
func TestDBLimiterRemembersRefusals(t *testing.T) {
	ctx := context.Background()
	store := newMemLimits()
	l := newDBLimiter(store, "test", 3, time.Hour, slog.New(slog.DiscardHandler))
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	k := keyOf("address")
	for i := range 3 {
		if ok, _, err := l.take(ctx, k); !ok || err != nil {
			t.Fatalf("attempt %d of 3: %v, %v", i+1, ok, err)
		}
	}
	now = now.Add(10 * time.Minute)
	if ok, wait, _ := l.take(ctx, k); ok || wait != 50*time.Minute {
		t.Fatalf("the 4th attempt: ok %v, wait %v; want refused for 50m", ok, wait)
	}
	calls := store.calls
	for range 100 {
		if ok, wait, _ := l.take(ctx, k); ok || wait != 50*time.Minute {
			t.Fatalf("an attempt past the limit: ok %v, wait %v; want refused for 50m", ok, wait)
		}
	}
	if store.calls != calls {
		t.Fatalf("100 refused attempts made %d calls to the database, want 0", store.calls-calls)
	}
	// Given back in this process: the database is asked again.
	l.giveBack(ctx, k)
	if ok, _, _ := l.take(ctx, k); !ok {
		t.Fatal("the attempt given back was refused")
	}
	if ok, _, _ := l.take(ctx, k); ok {
		t.Fatal("an attempt past the limit after the one given back was used")
	}
	// The window ends: a new one starts.
	now = now.Add(50 * time.Minute)
	if ok, _, _ := l.take(ctx, k); !ok || store.count(l, k) != 1 {
		t.Fatalf("the first attempt of a new window: ok %v, count %d", ok, store.count(l, k))
	}
	// Bounded: past maxRefused keys the memory starts again.
	one := newDBLimiter(store, "one", 1, time.Hour, slog.New(slog.DiscardHandler))
	one.now = l.now
	for i := range maxRefused + 10 {
		k := keyOf("flood", strconv.Itoa(i))
		one.take(ctx, k)
		one.take(ctx, k)
	}
	if n := len(one.refused); n > maxRefused {
		t.Fatalf("%d refusals remembered, want at most %d", n, maxRefused)
	}
}

func TestKeyOfSeparatesParts(t *testing.T) {
	if keyOf("ab", "c") == keyOf("a", "bc") {
		t.Fatal(`keyOf("ab","c") == keyOf("a","bc")`)
	}
}

func TestReserveAllIsAllOrNothing(t *testing.T) {
	store := newMemLimits()
	a, b := newDBLimiter(store, "a", 5, time.Minute, slog.New(slog.DiscardHandler)), newDBLimiter(store, "b", 1, time.Minute, slog.New(slog.DiscardHandler))
	k := keyOf("k")
	ctx := context.Background()
	if _, refusedBy, _, err := reserveAll(ctx, reservation{l: a, key: k}, reservation{l: b, key: k}); refusedBy != nil || err != nil {
		t.Fatal("first reservation refused")
	}
	if _, refusedBy, wait, _ := reserveAll(ctx, reservation{l: a, key: k}, reservation{l: b, key: k}); refusedBy != b || wait <= 0 {
		t.Fatal("second reservation allowed past b's limit of 1, or the refusal not named b")
	}
	// a gave back the attempt b refused: it holds only the first one.
	if got := store.count(a, k); got != 1 {
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
	store := newMemLimits()
	a := newDBLimiter(store, "a", 5, time.Minute, slog.New(slog.DiscardHandler))
	k := keyOf("k")
	release, refusedBy, _, err := reserveAll(context.Background(), reservation{l: a, key: k}, reservation{l: brokenLimiter{}, key: k})
	if err == nil || release != nil || refusedBy != nil || loremnews.ErrorCode(err) != loremnews.EUNAVAILABLE {
		t.Fatalf("release %v, refusedBy %v, err %v; want only an EUNAVAILABLE error", release != nil, refusedBy, err)
	}
	if got := store.count(a, k); got != 0 {
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
