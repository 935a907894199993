// Package storetest is the test suite every loremnews.Database must pass:
// the SQLite and PostgreSQL stores run the same tests (sqlite/store_test.go,
// postgres/store_test.go), so the two backends behave the same.
package storetest

import (
	"slices"
	"testing"

	"github.com/loremnews/loremnews"
)

// Opener opens a fresh, empty, migrated database that is closed (and
// removed) when the test ends.
type Opener func(tb testing.TB) loremnews.Database

// Run runs the whole suite against the databases open returns, but for the
// tests named in except.
func Run(t *testing.T, open Opener, except ...string) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"Users", testUsers},
		{"Posts", testPosts},
		{"Comments", testComments},
		{"Renames", testRenames},
		{"Sessions", testSessions},
		{"SessionLimits", testSessionLimits},
		{"RevokedDevices", testRevokedDevices},
		{"ChangePassword", testChangePassword},
		{"RehashPassword", testRehashPassword},
		{"KeysetPaging", testKeysetPaging},
		{"PostComments", testPostComments},
		{"SeedLoad", testSeedLoad},
		{"ExportLoadRoundTrip", testExportLoad},
		{"ImportStream", testImportStream},
		{"BenchmarkOperations", testBenchmarkOperations},
		{"ConcurrentWriters", testConcurrentWriters},
		{"LookAlikes", testLookAlikes},
		{"ConcurrentLookAlikes", testConcurrentLookAlikes},
		{"ImportLookAlikes", testImportLookAlikes},
		{"RateLimits", testRateLimits},
		{"ConcurrentRateLimits", testConcurrentRateLimits},
	} {
		if slices.Contains(except, tc.name) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}
