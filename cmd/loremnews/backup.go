package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/loremnews/loremnews/sqlite"
)

func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		d  dbFlags
		to string
		fs = newFlagSet("backup", "loremnews backup [--db PATH] --to FILE",
			"Write a consistent copy of the database to FILE while the site keeps serving (VACUUM INTO: one\n"+
				"snapshot, compacted). The copy is then checked: integrity, foreign keys and counter caches.", stdout)
	)
	d.registerDB(fs)
	fs.StringVar(&to, "to", "", "the backup `FILE` to create (must not exist)")
	fs.twin("to", "LOREM_BACKUP_TO")
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := d.validate(fs); err != nil {
		return err
	}
	if to == "" {
		return &usageError{msg: "--to is required", cmd: fs.Name()}
	}
	if d.postgres() {
		return &usageError{msg: "backup copies a SQLite file; for PostgreSQL use pg_dump, or `loremnews copy --from postgres://… --to sqlite:FILE`", cmd: fs.Name()}
	}
	if _, err := os.Stat(to); err == nil {
		return &usageError{msg: fmt.Sprintf("--to %s already exists; choose a new file", to), cmd: fs.Name()}
	}
	db, err := d.openSQLite(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	took, err := db.Backup(ctx, to)
	if err != nil {
		return err
	}
	copyDB, err := sqlite.Open(ctx, sqlite.Config{DSN: to})
	if err != nil {
		return fmt.Errorf("open the backup: %w", err)
	}
	defer copyDB.Close()
	c, err := copyDB.CheckConsistency(ctx)
	if err != nil {
		return err
	}
	if !c.OK() {
		return fmt.Errorf("the backup %s is inconsistent: %+v", to, c)
	}
	fi, _ := os.Stat(to)
	fmt.Fprintf(stdout, "backed up %s to %s in %s: %d bytes; %d users, %d posts, %d comments; integrity ok\n",
		db.Path(), to, took.Round(1e6), fi.Size(), c.Users, c.Posts, c.Comments)
	return nil
}
