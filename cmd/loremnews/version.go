package main

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/loremnews/loremnews/sqlitedb"
)

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "loremnews version", "Print the Go and SQLite versions and SQLite's compile-time options (PRAGMA compile_options).", stdout)
	if err := fs.parse(args); err != nil {
		return err
	}
	v, opts, err := sqlitedb.Library()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "go %s %s/%s, GOMAXPROCS %d\nsqlite %s\ncompile options:\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), v)
	for _, o := range opts {
		fmt.Fprintf(stdout, "  %s\n", o)
	}
	return nil
}
