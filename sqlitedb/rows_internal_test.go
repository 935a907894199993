package sqlitedb

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// A program that builds its SQL at run time does not grow the row
// reader's statements without end, and every query still answers.
func TestStatementCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	db := OpenPoolForTest(filepath.Join(t.TempDir(), "t.db"))
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rx := &Rx{conn: conn}
	for i := range 3 * maxStatements {
		rows, err := rx.Query(ctx, fmt.Sprintf("SELECT %d", i))
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if !rows.Next() || rows.Scan(&n) != nil || n != i {
			t.Fatalf("SELECT %d read %d", i, n)
		}
	}
	var kept int
	if err := conn.Raw(func(dc any) error { kept = len(dc.(*driverConn).stmts); return nil }); err != nil {
		t.Fatal(err)
	}
	if kept > maxStatements || kept == 0 {
		t.Fatalf("%d statements kept, want 1 to %d", kept, maxStatements)
	}
}
