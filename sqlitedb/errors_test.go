package sqlitedb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/loremnews/loremnews/sqlitedb"
	"github.com/mattn/go-sqlite3"
)

// A locked database is busy whichever way its error came: from the driver
// or from a handle's statement, wrapped or not, with any extended code.
func TestIsBusy(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"driver SQLITE_BUSY", sqlite3.Error{Code: sqlite3.ErrBusy}, true},
		{"driver SQLITE_LOCKED, wrapped", fmt.Errorf("read: %w", sqlite3.Error{Code: sqlite3.ErrLocked}), true},
		{"driver constraint", sqlite3.Error{Code: sqlite3.ErrConstraint}, false},
		{"handle SQLITE_BUSY", &sqlitedb.Error{Code: 5}, true},
		{"handle SQLITE_BUSY_SNAPSHOT, wrapped", fmt.Errorf("page: %w", &sqlitedb.Error{Code: 517}), true},
		{"handle SQLITE_LOCKED_SHAREDCACHE", &sqlitedb.Error{Code: 262}, true},
		{"handle SQLITE_ERROR", &sqlitedb.Error{Code: 1}, false},
		{"marked ErrBusy by a read or write", fmt.Errorf("%w: %w", sqlitedb.ErrBusy, sqlite3.Error{Code: sqlite3.ErrBusy}), true},
		{"something else", fmt.Errorf("no"), false},
	} {
		if got := sqlitedb.IsBusy(c.err); got != c.want {
			t.Errorf("%s: IsBusy = %v, want %v", c.name, got, c.want)
		}
	}
}

// Each broken constraint is told by name, from a handle's statement and
// from the escape hatch's database/sql alike, and by no other name.
func TestConstraintsByName(t *testing.T) {
	db, _ := openDB(t, nil)
	mustExec(t, db, `CREATE TABLE parent (id INTEGER PRIMARY KEY)`)
	mustExec(t, db, `CREATE TABLE c (id INTEGER PRIMARY KEY, u TEXT UNIQUE, n TEXT NOT NULL, k INTEGER CHECK (k > 0),
		p INTEGER REFERENCES parent (id))`)
	mustExec(t, db, `INSERT INTO c (id, u, n, k) VALUES (1, 'taken', 'x', 1)`)
	predicates := map[string]func(error) bool{
		"unique": sqlitedb.IsUniqueViolation, "foreign key": sqlitedb.IsForeignKeyViolation,
		"not null": sqlitedb.IsNotNullViolation, "check": sqlitedb.IsCheckViolation,
	}
	for broken, stmt := range map[string]string{
		"unique":      `INSERT INTO c (u, n, k) VALUES ('taken', 'x', 1)`,
		"foreign key": `INSERT INTO c (n, k, p) VALUES ('x', 1, 99)`,
		"not null":    `INSERT INTO c (k) VALUES (1)`,
		"check":       `INSERT INTO c (n, k) VALUES ('x', 0)`,
	} {
		viaHandle := db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
			_, err := tx.Exec(ctx, stmt)
			return err
		})
		var viaSQL error
		err := db.Write(context.Background(), func(ctx context.Context, tx *sqlitedb.Tx) error {
			_, viaSQL = tx.Conn().ExecContext(ctx, stmt)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for path, err := range map[string]error{"handle": viaHandle, "database/sql": viaSQL} {
			for name, is := range predicates {
				if got := is(fmt.Errorf("wrapped: %w", err)); got != (name == broken) {
					t.Errorf("%s through the %s: %v; %s violation = %v", broken, path, err, name, got)
				}
			}
		}
	}
}
