package http

import (
	"testing"
	"time"
)

func TestFailureLimiter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newFailureLimiter(3, time.Minute)
	l.now = func() time.Time { return now }
	for i := range 3 {
		if b, _ := l.blocked("k"); b {
			t.Fatalf("blocked after %d failures", i)
		}
		l.fail("k")
	}
	if b, left := l.blocked("k"); !b || left != time.Minute {
		t.Fatalf("not blocked after 3 failures (%v, %v)", b, left)
	}
	if b, _ := l.blocked("other"); b {
		t.Fatal("another key is blocked")
	}
	now = now.Add(time.Minute)
	if b, _ := l.blocked("k"); b {
		t.Fatal("still blocked after the window")
	}
	l.fail("k")
	l.reset("k")
	if b, _ := l.blocked("k"); b || len(l.entries) != 0 {
		t.Fatal("reset did not forget the key")
	}
	// Bounded memory: at most maxKeys keys.
	l.maxKeys = 10
	for i := range 100 {
		l.fail(string(rune('a' + i)))
	}
	if len(l.entries) > 10 {
		t.Fatalf("%d keys kept, limit 10", len(l.entries))
	}
}
