// Command open32 opens the database at its argument through sqlitedb,
// writes a row and reads it back: built for a 32-bit target by
// TestOpensOn32Bit, where the package's VFS cannot reserve its map and
// connections use SQLite's default VFS.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/loremnews/loremnews/sqlitedb"
)

func main() {
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, os.Args[1], nil)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	defer db.Close()
	err = db.Write(ctx, func(ctx context.Context, tx *sqlitedb.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE t (x)`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO t VALUES (1)`)
		return err
	})
	if err != nil {
		fmt.Println("write:", err)
		os.Exit(1)
	}
	var n int
	err = db.Read(ctx, func(ctx context.Context, rx *sqlitedb.Rx) error {
		return rx.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n)
	})
	if err != nil {
		fmt.Println("read:", err)
		os.Exit(1)
	}
	fmt.Println("rows:", n)
}
