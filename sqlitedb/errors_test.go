package sqlitedb_test

import (
	"fmt"
	"testing"

	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/mattn/go-sqlite3"
)

// A locked database is busy whichever way its error came: from the driver
// or from the row reader, wrapped or not, with any extended code.
func TestIsBusy(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"driver SQLITE_BUSY", sqlite3.Error{Code: sqlite3.ErrBusy}, true},
		{"driver SQLITE_LOCKED, wrapped", fmt.Errorf("read: %w", sqlite3.Error{Code: sqlite3.ErrLocked}), true},
		{"driver constraint", sqlite3.Error{Code: sqlite3.ErrConstraint}, false},
		{"row reader SQLITE_BUSY", &sqlitedb.Error{Code: 5}, true},
		{"row reader SQLITE_BUSY_SNAPSHOT, wrapped", fmt.Errorf("page: %w", &sqlitedb.Error{Code: 517}), true},
		{"row reader SQLITE_LOCKED_SHAREDCACHE", &sqlitedb.Error{Code: 262}, true},
		{"row reader SQLITE_ERROR", &sqlitedb.Error{Code: 1}, false},
		{"marked ErrBusy by a read or write", fmt.Errorf("%w: %w", sqlitedb.ErrBusy, sqlite3.Error{Code: sqlite3.ErrBusy}), true},
		{"something else", fmt.Errorf("no"), false},
	} {
		if got := sqlitedb.IsBusy(c.err); got != c.want {
			t.Errorf("%s: IsBusy = %v, want %v", c.name, got, c.want)
		}
	}
}
