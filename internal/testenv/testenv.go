// Package testenv holds what tests need from their surroundings: a way to
// skip a test whose tool (PostgreSQL, Chromium, Litestream) is missing that
// still fails in CI, and a wait that always ends.
package testenv

import (
	"os"
	"testing"
	"time"
)

// RequireAllVar names the environment variable that turns a missing tool
// into a failure. `make test` (and so CI) sets it to 1: there every test
// must run, and a machine without a tool must not pass by skipping.
const RequireAllVar = "LOREM_REQUIRE_ALL"

// Missing ends a test that cannot run because what it needs is not here:
// it skips, saying what is missing and how to get it, or fails with the
// same message when $LOREM_REQUIRE_ALL is 1.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv(RequireAllVar) == "1" {
		tb.Fatalf(format+" ("+RequireAllVar+"=1: every test must run)", args...)
	}
	tb.Skipf(format+" (skipped; "+RequireAllVar+"=1 makes this a failure)", args...)
}

// WaitFor polls cond every few milliseconds until it is true, and fails
// the test, naming what it waited for, if that takes longer than within.
func WaitFor(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("waited %s for %s; gave up", within, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
