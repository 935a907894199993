// Command loremnews is Lorem News in one binary: the site (serve), its
// database tools (seed, migrate, backup, copy), the load generator (load),
// the experiment runner (bench) and facts about the build (version).
//
// main only wires the process to run, which tests call directly.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err and picks the exit status: 2 for a usage error (bad
// command, flag or value), 1 for a failure, 0 for success or --help.
func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		// One line: the mistake and where the flags are explained. The
		// flag list itself would push the mistake off the screen.
		help := "loremnews --help"
		if ue.cmd != "" {
			help = "loremnews " + ue.cmd + " --help"
		}
		fmt.Fprintf(stderr, "loremnews: %s (see `%s`)\n", ue.msg, help)
		return 2
	default:
		fmt.Fprintf(stderr, "loremnews: %v\n", err)
		return 1
	}
}

// usageError is a mistake in how the command was called; cmd names the
// subcommand whose --help explains it ("" for the top level).
type usageError struct{ msg, cmd string }

func (e *usageError) Error() string { return e.msg }

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{
	"serve":   {"serve the site (creating, migrating and optionally seeding the database)", runServe},
	"seed":    {"replace the database's data with the demo data set", runSeed},
	"migrate": {"apply the embedded schema migrations", runMigrate},
	"version": {"print the Go and SQLite versions and SQLite's compile-time options", runVersion},
	"backup":  {"write a consistent copy of the database while the site runs, and check it", runBackup},
	"copy":    {"copy all data between databases, e.g. from SQLite into PostgreSQL, and check the copy", runCopy},
	"reload":  {"replace a running serve (new binary or settings) without dropping a request, and wait until done", runReload},
	"load":    {"send HTTP load to a URL and report latency percentiles, like hey or oha", runLoad},
	"bench":   {"run the experiment: every SQLite setup (and PostgreSQL) under the same load, reported with charts", runBench},
}

const mainUsage = "loremnews <command> [flags]   (loremnews <command> --help for a command's flags; loremnews --version)"

// run is the whole program: it parses args and runs one subcommand until it
// finishes or ctx is cancelled (SIGINT/SIGTERM).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return &usageError{msg: "no command given"}
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printMainHelp(stdout)
		return nil
	}
	if args[0] == "--version" || args[0] == "-version" {
		return runVersion(ctx, args[1:], stdout, stderr)
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return &usageError{msg: fmt.Sprintf("unknown command %q (commands: %s)", args[0], strings.Join(commandNames(), ", "))}
	}
	return cmd.run(ctx, args[1:], stdout, stderr)
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func printMainHelp(w io.Writer) {
	fmt.Fprintf(w, "Lorem News: a Hacker-News-style site on embedded SQLite (or PostgreSQL), and the tools to load-test it.\n\nusage: %s\n\ncommands:\n", mainUsage)
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
}
