package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/loremnews/loremnews/sqlitedb"
)

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "loremnews version",
		"Print the build (version and commit), the Go and SQLite versions and SQLite's compile-time options (PRAGMA compile_options).", stdout)
	if err := fs.parse(args); err != nil {
		return err
	}
	v, opts, err := sqlitedb.Library()
	if err != nil {
		return err
	}
	b := currentBuild()
	fmt.Fprintf(stdout, "loremnews %s, commit %s\ngo %s %s/%s, GOMAXPROCS %d\nsqlite %s\ncompile options:\n",
		b.version, b.commit, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), v)
	for _, o := range opts {
		fmt.Fprintf(stdout, "  %s\n", o)
	}
	return nil
}

// build names the binary: its version (a release's tag; "(devel)"
// otherwise) and the commit it was built from, with "+modified" if the
// work tree had changes ("unknown" if neither make nor the go command
// could tell).
type build struct{ version, commit string }

// buildVersion and buildCommit are set by make build (-ldflags -X); a
// plain go build leaves them empty, and the go command's own stamp, if
// any, names the build instead.
var buildVersion, buildCommit string

func currentBuild() build {
	b := build{version: "(devel)", commit: "unknown"}
	if info, ok := debug.ReadBuildInfo(); ok {
		b = stampedBuild(b, info)
	}
	if buildVersion != "" {
		b.version = buildVersion
	}
	if buildCommit != "" {
		b.commit = buildCommit
	}
	return b
}

// stampedBuild is b with what the go command stamped into the binary.
func stampedBuild(b build, info *debug.BuildInfo) build {
	if info.Main.Version != "" {
		b.version = info.Main.Version
	}
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && b.commit != "unknown" {
		b.commit += "+modified"
	}
	return b
}
