package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// The one shape of every subcommand (issue 42, docs/running.md): -h and
// --help print the usage on standard output and exit 0; a usage error is
// said on standard error with how to get the usage, and exits 2; the
// usage line names every positional argument; flags are written with two
// dashes. Go's flag package parses (a one-dash flag is the same flag).

// spec is a subcommand's usage.
type spec struct {
	name  string // "backup", "token rotate"
	args  string // what follows the name, positional arguments in capitals
	about string // what it does, and what the flags do not say
}

// newFlags returns spec's flag set: parse errors go to stderr, and the
// usage is printed by parseFlags, never by the flag package.
func (s spec) newFlags(stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(s.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	return fs
}

// parse parses args into fs. ok is false when the command is done: the
// usage was asked for (code 0) or the arguments are wrong (code 2, said
// on stderr).
func (s spec) parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		s.usage(stdout, fs)
		return 0, false
	}
	// The flag package has said what is wrong.
	fmt.Fprintf(stderr, "run 'hearth %s --help' for its usage\n", s.name)
	return 2, false
}

// fail says a usage error on stderr and returns its exit code, 2.
func (s spec) fail(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "hearth %s: %s\nrun 'hearth %s --help' for its usage\n", s.name, fmt.Sprintf(format, a...), s.name)
	return 2
}

// usage writes the usage line, the prose and the flags.
func (s spec) usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: hearth %s", s.name)
	if s.args != "" {
		fmt.Fprintf(w, " %s", s.args)
	}
	fmt.Fprintln(w)
	if s.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(s.about, "\n"))
	}
	if fs != nil {
		printFlags(w, fs)
	}
}

// printFlags lists fs's flags as --name VALUE, with their usage and
// default, in the order of their names.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	first := true
	fs.VisitAll(func(f *flag.Flag) {
		if first {
			fmt.Fprintln(w, "\nflags:")
			first = false
		}
		kind, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if v, ok := valueNames[f.Name]; ok && kind != "" {
			line += " " + v
		} else if kind != "" {
			line += " " + strings.ToUpper(kind)
		}
		fmt.Fprintf(w, "%s\n      %s", line, usage)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// valueNames name the values of the flags every command shares, as the
// usage lines write them.
var valueNames = map[string]string{
	"data": "DIR", "out": "FILE", "token-file": "FILE", "ca-file": "FILE", "url": "URL",
	"client": "NAME", "prefix": "NS", "listen": "ADDR", "ingress-listen": "ADDR",
	"harness": "HARNESS", "tls-cert": "FILE", "tls-key": "FILE",
}

// wantsHelp reports whether args asks for help in place of a subcommand
// or an argument: -h, --help, -help or help.
func wantsHelp(arg string) bool {
	switch arg {
	case "-h", "--help", "-help", "help":
		return true
	}
	return false
}

// envOr returns the environment variable key, else def: the default of a
// flag that a variable can set (HEARTH_URL, HEARTH_CA_FILE).
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
