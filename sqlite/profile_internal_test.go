package sqlite

import (
	"testing"
	"time"
)

// TestGemBusyHandler: the enhanced profile retries exactly as the gem's
// busy handler does: every call until the first multiple of 100 whose
// count × 60 µs exceeds the timeout.
func TestGemBusyHandler(t *testing.T) {
	timeout := 5 * time.Second // database.yml's timeout: 5000
	// 5 s / 60 µs = 83,333.3…; the first multiple of 100 past it is 83,400.
	for _, c := range []struct {
		count int
		retry bool
	}{
		{0, true}, {1, true}, {99, true}, {100, true}, {83_300, true},
		{83_334, true}, {83_399, true}, // past the timeout, but not a 100th call
		{83_400, false}, {83_500, false}, {83_401, true},
	} {
		if got := gemBusyHandler(c.count, timeout); got != c.retry {
			t.Errorf("gemBusyHandler(%d, 5s) = %v, want %v", c.count, got, c.retry)
		}
	}
	if gemRetryInterval != 60*time.Microsecond {
		t.Fatalf("retry interval %v, want the gem's 6e-5 s", gemRetryInterval)
	}
}
