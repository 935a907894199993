// Package testenv lets a test whose tool (the sqlite3 shell, Python,
// Litestream, a 32-bit C compiler, root to mount a tmpfs) is missing skip,
// and fail instead where every test must run.
package testenv

import (
	"os"
	"testing"
)

// RequireAllVar names the environment variable that turns a missing tool
// into a failure: set it to 1 where every test must run (in CI).
const RequireAllVar = "SQLITEDB_REQUIRE_ALL"

// Missing ends a test that cannot run because what it needs is not here:
// it skips, saying what is missing, or fails with the same message when
// $SQLITEDB_REQUIRE_ALL is 1.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv(RequireAllVar) == "1" {
		tb.Fatalf(format+" ("+RequireAllVar+"=1: every test must run)", args...)
	}
	tb.Skipf(format+" (skipped; "+RequireAllVar+"=1 makes this a failure)", args...)
}
