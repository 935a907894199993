package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// flagSet is a flag.FlagSet whose flags may have environment-variable
// twins: a flag not given on the command line takes its twin's value.
type flagSet struct {
	*flag.FlagSet
	env        map[string]string // flag name → environment variable
	usage      string
	positional []string // the arguments after parseArgs
	printHelp  func()   // writes --help to stdout
	// settings, if set, is the flag naming a settings file (see
	// settingsFile); fromFile, after parse, is what the file said
	// (NAME=value, by environment twin).
	settings string
	fromFile map[string]string
}

// settingsFile adds flag name (with its environment twin env): a file of
// NAME=value lines, one per environment twin (LOREM_DB=…), blank lines and
// # comments ignored. Its values apply to the flags not given on the
// command line and come before the environment's, so a process started
// with an inherited environment (a restart on SIGHUP) still takes the
// file's current values.
func (fs *flagSet) settingsFile(name, env string) {
	fs.String(name, "", "read settings from the file at `PATH`: NAME=value lines of the environment variables shown here\n      (LOREM_DB=/var/lib/loremnews/loremnews.sqlite3); read again by the process a SIGHUP starts")
	fs.twin(name, env)
	fs.settings = name
}

func newFlagSet(name, usage, about string, stdout io.Writer) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), env: map[string]string{}, usage: usage}
	fs.SetOutput(io.Discard) // errors are reported once, by exitCode
	// flag.FlagSet calls Usage on every parse error too; the help goes to
	// stdout only when asked for, so a mistake stays one line on stderr.
	fs.Usage = func() {}
	fs.printHelp = func() {
		fmt.Fprintf(stdout, "%s\n\nusage: %s\n\nflags (each also read from the environment variable shown):\n", about, usage)
		fs.VisitAll(func(f *flag.Flag) {
			env := ""
			if e, ok := fs.env[f.Name]; ok {
				env = " [$" + e + "]"
			}
			name, usage := flagSynopsis(f)
			def := ""
			if meaningfulDefault(f.DefValue) {
				def = fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(stdout, "  %s%s\n      %s%s\n", name, env, usage, def)
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
			if errors.Is(err, flag.ErrHelp) {
				fs.printHelp()
				return err
			}
			return &usageError{msg: err.Error() + fs.durationHint(args), cmd: fs.Name()}
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) > nargs {
		return &usageError{msg: fmt.Sprintf("unexpected argument %q", positional[nargs]), cmd: fs.Name()}
	}
	if len(positional) < nargs {
		return &usageError{msg: "missing argument", cmd: fs.Name()}
	}
	fs.positional = positional
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	file, err := fs.readSettings(given)
	if err != nil {
		return err
	}
	fs.fromFile = file
	for name, env := range fs.env {
		if given[name] || name == fs.settings {
			continue
		}
		v, ok := file[env]
		where := ""
		if ok {
			where = "in " + fs.Lookup(fs.settings).Value.String() + ": " + env
		} else {
			v, ok = os.LookupEnv(env)
			where = "in $" + env
		}
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return &usageError{msg: fmt.Sprintf("invalid value %q %s: %v%s", v, where, err, fs.durationHintFor(name, v)), cmd: fs.Name()}
		}
	}
	return nil
}

// readSettings reads the settings file, if the command has one and it is
// named (on the command line, or in its environment twin).
func (fs *flagSet) readSettings(given map[string]bool) (map[string]string, error) {
	if fs.settings == "" {
		return nil, nil
	}
	path := fs.Lookup(fs.settings).Value.String()
	if !given[fs.settings] {
		path = os.Getenv(fs.env[fs.settings])
		fs.Set(fs.settings, path)
	}
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &usageError{msg: fmt.Sprintf("--%s: %v", fs.settings, err), cmd: fs.Name()}
	}
	known := map[string]bool{}
	for _, env := range fs.env {
		known[env] = true
	}
	vals := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		switch {
		case !ok:
			return nil, &usageError{msg: fmt.Sprintf("%s:%d: want NAME=value, got %q", path, i+1, line), cmd: fs.Name()}
		case !known[k] || k == fs.env[fs.settings]:
			return nil, &usageError{msg: fmt.Sprintf("%s:%d: %s is not a setting of %s", path, i+1, k, fs.Name()), cmd: fs.Name()}
		}
		vals[k] = unquote(strings.TrimSpace(v))
	}
	return vals, nil
}

// unquote is v without the quotes around it, as systemd reads an
// EnvironmentFile (LOREM_ADDR="127.0.0.1:3000" is 127.0.0.1:3000 to both).
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// flagSynopsis is how --help names a flag: one dash for one-letter flags
// and two for long ones, as people type them, followed by a placeholder
// for the value if the flag takes one (a backquoted word in its usage,
// else one named after its type).
func flagSynopsis(f *flag.Flag) (synopsis, usage string) {
	placeholder, usage := flag.UnquoteUsage(f)
	dashes := "--"
	if len(f.Name) == 1 {
		dashes = "-"
	}
	switch placeholder {
	case "":
		return dashes + f.Name, usage
	case "int", "uint", "int64", "uint64":
		placeholder = "N"
	case "float":
		placeholder = "X"
	case "value", "string":
		placeholder = "VALUE"
	}
	return dashes + f.Name + " " + strings.ToUpper(placeholder), usage
}

// meaningfulDefault reports whether --help should print a default: a zero
// value (0, 0s, false, empty) says nothing the description does not.
func meaningfulDefault(v string) bool {
	switch v {
	case "", "0", "0s", "false", "[]":
		return false
	}
	return true
}

// durationHint finds, in args that failed to parse, a duration flag given a
// bare number and suggests the seconds the user most likely meant.
func (fs *flagSet) durationHint(args []string) string {
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				continue
			}
			value = args[i+1]
		}
		if hint := fs.durationHintFor(name, value); hint != "" {
			return hint
		}
	}
	return ""
}

// durationHintFor is durationHint for one flag and value: "-z 2" and
// "-z 5sec" are seconds to a person but no duration to time.ParseDuration.
func (fs *flagSet) durationHintFor(name, value string) string {
	f := fs.Lookup(name)
	if f == nil {
		return ""
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	if _, isDuration := g.Get().(time.Duration); !isDuration {
		return ""
	}
	if _, err := time.ParseDuration(value); err == nil {
		return ""
	}
	if d, ok := spelledDuration(value); ok {
		return fmt.Sprintf("; did you mean %s?", d)
	}
	return ""
}

// durationUnits are the spellings of a unit that time.ParseDuration does not
// accept but people type, with the one it does.
var durationUnits = map[string]string{
	"": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
	"msec": "ms", "msecs": "ms", "millisecond": "ms", "milliseconds": "ms",
	"min": "m", "mins": "m", "minute": "m", "minutes": "m",
	"hr": "h", "hrs": "h", "hour": "h", "hours": "h",
}

// spelledDuration turns a number with no unit or a spelled-out one ("5",
// "5sec", "1.5 minutes") into the duration ParseDuration reads ("5s",
// "5s", "1.5m").
func spelledDuration(value string) (string, bool) {
	v := strings.TrimSpace(value)
	i := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(v)
	}
	num, unit := v[:i], strings.ToLower(strings.TrimSpace(v[i:]))
	if _, err := strconv.ParseFloat(num, 64); err != nil {
		return "", false
	}
	u, ok := durationUnits[unit]
	if !ok {
		return "", false
	}
	return num + u, true
}
