package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// flagSet is a flag.FlagSet whose flags may have environment-variable
// twins: a flag not given on the command line takes its twin's value.
type flagSet struct {
	*flag.FlagSet
	env        map[string]string // flag name → environment variable
	usage      string
	positional []string // the arguments after parseArgs
}

func newFlagSet(name, usage, about string, stdout io.Writer) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), env: map[string]string{}, usage: usage}
	fs.SetOutput(io.Discard) // errors are reported once, by exitCode
	fs.Usage = func() {
		fmt.Fprintf(stdout, "%s\n\nusage: %s\n\nflags (each also read from the environment variable shown):\n", about, usage)
		fs.VisitAll(func(f *flag.Flag) {
			env := ""
			if e, ok := fs.env[f.Name]; ok {
				env = " [$" + e + "]"
			}
			def := ""
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
				def = fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(stdout, "  --%s%s\n      %s%s\n", f.Name, env, f.Usage, def)
		})
	}
	return fs
}

// twin records the environment variable of a flag.
func (fs *flagSet) twin(flagName, envName string) { fs.env[flagName] = envName }

// parse parses args, which must all be flags, then applies environment
// twins of flags not given. Any mistake is a usageError naming the flag or
// variable.
func (fs *flagSet) parse(args []string) error { return fs.parseArgs(args, 0) }

// parseArgs is parse for commands that take exactly nargs arguments after
// their flags.
func (fs *flagSet) parseArgs(args []string, nargs int) error {
	// Go's flag package stops at the first argument that is not a flag;
	// accept flags after the arguments too (load URL -c 20 --json).
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) { // Parse has printed the usage
				return err
			}
			return &usageError{msg: err.Error(), usage: fs.usage}
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) > nargs {
		return &usageError{msg: fmt.Sprintf("unexpected argument %q", positional[nargs]), usage: fs.usage}
	}
	if len(positional) < nargs {
		return &usageError{msg: "missing argument", usage: fs.usage}
	}
	fs.positional = positional
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, env := range fs.env {
		v, ok := os.LookupEnv(env)
		if !ok || given[name] || strings.TrimSpace(v) == "" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return &usageError{msg: fmt.Sprintf("invalid value %q in $%s: %v", v, env, err), usage: fs.usage}
		}
	}
	return nil
}
