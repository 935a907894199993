package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/loremnews/loremnews/sqlite"
	"github.com/loremnews/loremnews/sqlitedb"
)

// backupCommand is a parsed `loremnews backup` command line.
type backupCommand struct {
	db    dbFlags
	to    string        // the backup file, which must not exist
	pause time.Duration // between steps of the copy
}

func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseBackupFlags(args, stdout)
	if err != nil {
		return err
	}
	return c.run(ctx, stdout, stderr)
}

// parseBackupFlags reads the command line (and the flags' environment
// twins) into a backupCommand; any mistake, an existing target file
// included, is a usage error.
func parseBackupFlags(args []string, stdout io.Writer) (backupCommand, error) {
	var (
		c  backupCommand
		fs = newFlagSet("backup", "loremnews backup [--db PATH] --to FILE",
			"Write a consistent copy of the database to FILE while the site keeps serving (SQLite's online\n"+
				"backup: one snapshot, copied in steps of 1024 pages, its progress on stderr). The copy appears\n"+
				"only once complete, no more readable than the database, and is then checked: integrity, foreign\n"+
				"keys and counter caches.", stdout)
	)
	c.db.registerDB(fs)
	fs.StringVar(&c.to, "to", "", "the backup `FILE` to create (must not exist)")
	fs.twin("to", "LOREM_BACKUP_TO")
	fs.DurationVar(&c.pause, "pause", 0, "sleep this long between steps of the copy, to leave the disk to the site (e.g. 10ms)")
	fs.twin("pause", "LOREM_BACKUP_PAUSE")
	if err := fs.parse(args); err != nil {
		return c, err
	}
	if err := c.db.validate(fs); err != nil {
		return c, err
	}
	if c.to == "" {
		return c, &usageError{msg: "--to is required", cmd: fs.Name()}
	}
	if c.pause < 0 {
		return c, &usageError{msg: "--pause must be 0 or more", cmd: fs.Name()}
	}
	if c.db.postgres() {
		return c, &usageError{msg: "backup copies a SQLite file; for PostgreSQL use pg_dump, or `loremnews copy --from postgres://… --to sqlite:FILE`", cmd: fs.Name()}
	}
	if _, err := os.Stat(c.to); err == nil {
		return c, &usageError{msg: fmt.Sprintf("--to %s already exists; choose a new file", c.to), cmd: fs.Name()}
	}
	return c, nil
}

// run writes the backup, telling stderr its progress by tenths, opens it
// and checks it, and says what it did.
func (cmd backupCommand) run(ctx context.Context, stdout, stderr io.Writer) error {
	db, err := cmd.db.openSQLite(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	tenths := -1
	took, err := db.Backup(ctx, cmd.to, &sqlitedb.BackupOptions{Pause: cmd.pause, Progress: func(copied, total int) {
		if t := copied * 10 / max(total, 1); t > tenths {
			tenths = t
			fmt.Fprintf(stderr, "backup: %d of %d pages copied (%d%%)\n", copied, total, t*10)
		}
	}})
	if err != nil {
		return err
	}
	// The copy is opened to be checked, by this process alone: its writers
	// poll (no queue file beside it, which nothing would ever delete), and
	// it stays a rollback-journal file (as Backup made it), which opens
	// read-only where its reader cannot write the folder.
	copyDB, err := sqlite.Open(ctx, sqlite.Config{DSN: sqlitedb.FileURI(cmd.to, url.Values{"_writers": {"poll"}, "_pragma": {"journal_mode(DELETE)"}})})
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
