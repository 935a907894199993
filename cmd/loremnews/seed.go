package main

import (
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"time"

	"github.com/loremnews/loremnews"
	"github.com/loremnews/loremnews/seed"
	"golang.org/x/term"
)

// seedCommand is a parsed `loremnews seed` command line.
type seedCommand struct {
	db    dbFlags
	seed  seedFlags
	quiet bool // no progress on stderr
}

func runSeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseSeedFlags(args, stdout)
	if err != nil {
		return err
	}
	return c.run(ctx, stdout, stderr)
}

// parseSeedFlags reads the command line (and the flags' environment twins)
// into a seedCommand; any mistake is a usage error.
func parseSeedFlags(args []string, stdout io.Writer) (seedCommand, error) {
	var (
		c  seedCommand
		fs = newFlagSet("seed", "loremnews seed [--db PATH] [--seed N] [--users N] [--posts N] [--quiet]",
			"Replace all data in the database (creating and migrating it if needed) with the demo data set:\n"+
				"users whose password is \"password\", posts with lorem-ipsum text, 5–15 comments per post.\n"+
				"The rows are generated as they are written, so memory stays flat at any size. Progress goes\n"+
				"to stderr: a line updated in place on a terminal, a line every 10 % otherwise.", stdout)
	)
	c.db.register(fs)
	c.seed.register(fs)
	fs.BoolVar(&c.quiet, "quiet", false, "no progress on stderr (the summary line on stdout stays)")
	if err := fs.parse(args); err != nil {
		return c, err
	}
	if err := c.db.validate(fs); err != nil {
		return c, err
	}
	return c, c.seed.validate(fs)
}

// run replaces the database's data with the data set.
func (c seedCommand) run(ctx context.Context, stdout, stderr io.Writer) error {
	db, err := c.db.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	progress := stderr
	if c.quiet {
		progress = nil
	}
	return c.seed.load(ctx, db, stdout, progress)
}

// load streams the data set into db, showing progress on progress (none
// when nil), then says what it did on stdout.
func (s *seedFlags) load(ctx context.Context, db loremnews.Database, stdout, progress io.Writer) error {
	start := time.Now()
	set, err := seed.New(seed.Config{Users: s.users, Posts: s.posts, Seed: s.seed})
	if err != nil {
		return err
	}
	stream := set.DatasetStream
	var p *seedProgress
	if progress != nil {
		p = &seedProgress{w: progress, terminal: onTerminal(progress), total: set.Rows(), start: start}
		stream.Users, stream.Posts, stream.Comments = counted(stream.Users, p), counted(stream.Posts, p), counted(stream.Comments, p)
	}
	err = db.ImportStream(ctx, stream)
	p.finish()
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	fmt.Fprintf(stdout, "seeded %s: %d users, %d posts, %d comments in %s, %.0f rows/s (seed %d; every password is \"password\")\n",
		db.Name(), set.Users, set.Posts, set.Comments, elapsed.Round(time.Millisecond), float64(set.Rows())/elapsed.Seconds(), s.seed)
	return nil
}

// onTerminal reports whether w is a terminal (not a file, pipe or /dev/null).
func onTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalOnly returns w if it is a terminal, else nil: for serve, whose
// stderr off a terminal is a log of key=value lines, not for progress.
func terminalOnly(w io.Writer) io.Writer {
	if onTerminal(w) {
		return w
	}
	return nil
}

// counted passes rows through, counting each on p as the store takes it.
func counted[T any](rows iter.Seq[T], p *seedProgress) iter.Seq[T] {
	return func(yield func(T) bool) {
		for row := range rows {
			p.row()
			if !yield(row) {
				return
			}
		}
	}
}

// seedProgress reports rows written out of the total. On a terminal it
// redraws one line in place at most every redrawEvery; elsewhere (a log
// file, a pipe) it writes a plain line at each tenth, so logs stay short.
type seedProgress struct {
	w        io.Writer
	terminal bool
	total    int
	done     int
	start    time.Time
	drawn    time.Time // when the terminal line was last drawn
	tenths   int       // tenths reported so far, off a terminal
}

// redrawEvery bounds how often the terminal line is redrawn: more often
// costs writes and is not readable anyway.
const redrawEvery = 250 * time.Millisecond

// row counts one row. Time is read once every 1,024 rows, not per row.
func (p *seedProgress) row() {
	p.done++
	if p.terminal {
		if p.done%1024 == 0 || p.done == p.total {
			if now := time.Now(); now.Sub(p.drawn) >= redrawEvery || p.done == p.total {
				p.drawn = now
				fmt.Fprintf(p.w, "\r%s\033[K", p.line(now))
			}
		}
		return
	}
	if p.total > 0 && p.done*10 >= (p.tenths+1)*p.total {
		p.tenths = p.done * 10 / p.total
		fmt.Fprintln(p.w, p.line(time.Now()))
	}
}

func (p *seedProgress) line(now time.Time) string {
	elapsed := now.Sub(p.start)
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.done) / float64(p.total)
	}
	line := fmt.Sprintf("seed: %d of %d rows (%.0f%%), %.0f rows/s, %s elapsed",
		p.done, p.total, pct, float64(p.done)/elapsed.Seconds(), elapsed.Round(100*time.Millisecond))
	if p.done == p.total {
		line += "; counting and committing"
	}
	return line
}

// finish clears the terminal line, so the summary takes its place. A nil
// p (no progress) does nothing.
func (p *seedProgress) finish() {
	if p != nil && p.terminal {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
