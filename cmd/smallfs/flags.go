package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// newFlags returns a flag set that reports nothing itself: the command
// prints its own help and one-line errors.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args with flags allowed before, between and after the
// positional arguments (`smallfs fsck IMG --json`), and returns the
// positionals. After "--" everything is positional.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		used := len(args) - len(rest)
		if used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseCommand parses a subcommand's arguments and checks how many
// positionals it got (want names them). It returns done with the exit code when the command
// must stop: help was asked for (code 0) or the line was wrong (usageCode,
// after one error line and a hint).
func (a *app) parseCommand(fs *flag.FlagSet, help string, args []string, want []string, usageCode int) (pos []string, code int, done bool) {
	pos, err := parseFlags(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(a.stdout, help)
		return nil, exitOK, true
	case err == nil && len(pos) != len(want):
		err = fmt.Errorf("want %s, got %d argument(s)", strings.Join(want, " and "), len(pos))
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "smallfs %s: %v\nTry 'smallfs %s --help'.\n", fs.Name(), err, fs.Name())
		return nil, usageCode, true
	}
	return pos, 0, false
}
