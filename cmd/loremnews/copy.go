package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/bench/setups"
	"github.com/loremnews/loremnews/postgres"
	"github.com/loremnews/loremnews/sqlitedb"
)

// copyCommand is a parsed `loremnews copy` command line.
type copyCommand struct {
	src, dst dbFlags
	replace  bool
}

func runCopy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseCopyFlags(args, stdout)
	if err != nil {
		return err
	}
	return c.run(ctx, stdout, stderr)
}

// parseCopyFlags reads the command line (and the flags' environment twins)
// into a copyCommand; any mistake, a missing source file included, is a
// usage error.
func parseCopyFlags(args []string, stdout io.Writer) (copyCommand, error) {
	var (
		c        copyCommand
		from, to string
		fs       = newFlagSet("copy", "loremnews copy --from sqlite:FILE --to postgres://user@host/dbname [--replace]",
			"Copy every user, post, comment and session, keeping ids, from one database to another: the way\n"+
				"to move a site from SQLite to PostgreSQL (or back). The source is read in one snapshot, so the\n"+
				"site may keep running, but writes made after the copy starts stay behind: stop writes first to\n"+
				"move for good. The target is loaded in one transaction, checked (foreign keys, counter caches)\n"+
				"and compared with the source. A database is sqlite:FILE (or a plain path) or a PostgreSQL URL.", stdout)
	)
	fs.StringVar(&from, "from", "", "`DB` to copy from: sqlite:FILE, FILE, or postgres://…")
	fs.twin("from", "LOREM_COPY_FROM")
	fs.StringVar(&to, "to", "", "`DB` to copy into (created and migrated if needed): sqlite:FILE, FILE, or postgres://…")
	fs.twin("to", "LOREM_COPY_TO")
	fs.BoolVar(&c.replace, "replace", false, "replace the target's data if it has any (otherwise a target with users is refused)")
	fs.twin("replace", "LOREM_COPY_REPLACE")
	if err := fs.parse(args); err != nil {
		return c, err
	}
	if from == "" || to == "" {
		return c, &usageError{msg: "both --from and --to are required", cmd: fs.Name()}
	}
	c.src, c.dst = copyTarget(from), copyTarget(to)
	if c.src.dsn == c.dst.dsn {
		return c, &usageError{msg: "--from and --to are the same database", cmd: fs.Name()}
	}
	for _, d := range []*dbFlags{&c.src, &c.dst} {
		if err := d.validate(fs); err != nil {
			return c, err
		}
	}
	if !c.src.postgres() {
		// Opening a SQLite file creates it; a source must already exist.
		path, _ := sqlitedb.DSNPath(c.src.dsn) // validate read it already
		if _, err := os.Stat(path); err != nil {
			return c, &usageError{msg: fmt.Sprintf("--from %s: no such database file", path), cmd: fs.Name()}
		}
	}
	return c, nil
}

// run copies, checks the copy and says what it did.
func (cmd copyCommand) run(ctx context.Context, stdout, stderr io.Writer) error {
	start := time.Now()
	srcDB, err := cmd.src.open(ctx)
	if err != nil {
		return fmt.Errorf("open the source: %w", err)
	}
	defer srcDB.Close()
	dstDB, err := cmd.dst.open(ctx)
	if err != nil {
		return fmt.Errorf("open the target: %w", err)
	}
	defer dstDB.Close()
	if empty, err := dstDB.Empty(ctx); err != nil {
		return err
	} else if !empty && !cmd.replace {
		return fmt.Errorf("the target %s already has data; add --replace to overwrite it", dstDB.Name())
	}
	ds, err := srcDB.ExportDataset(ctx)
	if err != nil {
		return err
	}
	if err := dstDB.ImportDataset(ctx, ds); err != nil {
		return err
	}
	c, err := dstDB.CheckConsistency(ctx)
	if err != nil {
		return err
	}
	if !c.OK() || c.Users != len(ds.Users) || c.Posts != len(ds.Posts) || c.Comments != len(ds.Comments) || c.Sessions != len(ds.Sessions) {
		return fmt.Errorf("the copy in %s does not match the source: %+v (source: %d users, %d posts, %d comments, %d sessions)",
			dstDB.Name(), c, len(ds.Users), len(ds.Posts), len(ds.Comments), len(ds.Sessions))
	}
	if mismatch := compareCounters(ds); mismatch != "" {
		fmt.Fprintf(stderr, "note: the source's counter caches were off (%s); the copy has the true counts\n", mismatch)
	}
	fmt.Fprintf(stdout, "copied %s to %s in %s: %d users, %d posts, %d comments, %d sessions; foreign keys and counters ok\n",
		srcDB.Name(), dstDB.Name(), time.Since(start).Round(time.Millisecond), c.Users, c.Posts, c.Comments, c.Sessions)
	return nil
}

// copyTarget turns a --from/--to value into the database flags that open it.
func copyTarget(s string) dbFlags {
	d := dbFlags{dsn: strings.TrimPrefix(s, "sqlite:"), setup: setups.Split, writerTimeout: 30 * time.Second}
	if postgres.IsURL(s) {
		d.dsn = s
	}
	return d
}

// compareCounters says which of the source's counter caches disagreed with
// its rows (ImportDataset recomputes them).
func compareCounters(ds *loremnews.Dataset) string {
	posts, comments := ds.TrueCounts()
	var wrong []string
	for _, u := range ds.Users {
		if u.PostsCount != posts[u.ID] {
			wrong = append(wrong, fmt.Sprintf("user %d posts_count %d, has %d", u.ID, u.PostsCount, posts[u.ID]))
		}
	}
	for _, p := range ds.Posts {
		if p.CommentsCount != comments[p.ID] {
			wrong = append(wrong, fmt.Sprintf("post %d comments_count %d, has %d", p.ID, p.CommentsCount, comments[p.ID]))
		}
	}
	if len(wrong) > 3 {
		wrong = append(wrong[:3], fmt.Sprintf("and %d more", len(wrong)-3))
	}
	return strings.Join(wrong, "; ")
}
