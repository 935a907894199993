package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/loremnews/loremnews/sqlite"
)

// backupCommand is a parsed `loremnews backup` command line.
type backupCommand struct {
	db dbFlags
	to string // the backup file, which must not exist
}

func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseBackupFlags(args, stdout)
	if err != nil {
		return err
	}
	return c.run(ctx, stdout)
}

// parseBackupFlags reads the command line (and the flags' environment
// twins) into a backupCommand; any mistake, an existing target file
// included, is a usage error.
func parseBackupFlags(args []string, stdout io.Writer) (backupCommand, error) {
	var (
		c  backupCommand
		fs = newFlagSet("backup", "loremnews backup [--db PATH] --to FILE",
			"Write a consistent copy of the database to FILE while the site keeps serving (VACUUM INTO: one\n"+
				"snapshot, compacted). The copy is then checked: integrity, foreign keys and counter caches.", stdout)
	)
	c.db.registerDB(fs)
	fs.StringVar(&c.to, "to", "", "the backup `FILE` to create (must not exist)")
	fs.twin("to", "LOREM_BACKUP_TO")
	if err := fs.parse(args); err != nil {
		return c, err
	}
	if err := c.db.validate(fs); err != nil {
		return c, err
	}
	if c.to == "" {
		return c, &usageError{msg: "--to is required", cmd: fs.Name()}
	}
	if c.db.postgres() {
		return c, &usageError{msg: "backup copies a SQLite file; for PostgreSQL use pg_dump, or `loremnews copy --from postgres://… --to sqlite:FILE`", cmd: fs.Name()}
	}
	if _, err := os.Stat(c.to); err == nil {
		return c, &usageError{msg: fmt.Sprintf("--to %s already exists; choose a new file", c.to), cmd: fs.Name()}
	}
	return c, nil
}

// run writes the backup, opens it and checks it, and says what it did.
func (cmd backupCommand) run(ctx context.Context, stdout io.Writer) error {
	db, err := cmd.db.openSQLite(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	took, err := db.Backup(ctx, cmd.to)
	if err != nil {
		return err
	}
	copyDB, err := sqlite.Open(ctx, sqlite.Config{DSN: cmd.to})
	if err != nil {
		return fmt.Errorf("open the backup: %w", err)
	}
	defer copyDB.Close()
	c, err := copyDB.CheckConsistency(ctx)
	if err != nil {
		return err
	}
	if !c.OK() {
		return fmt.Errorf("the backup %s is inconsistent: %+v", cmd.to, c)
	}
	fi, _ := os.Stat(cmd.to)
	fmt.Fprintf(stdout, "backed up %s to %s in %s: %d bytes; %d users, %d posts, %d comments; integrity ok\n",
		db.Name(), cmd.to, took.Round(1e6), fi.Size(), c.Users, c.Posts, c.Comments)
	return nil
}
