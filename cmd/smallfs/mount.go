package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/daemon"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
)

// exitCodes are the codes a form of the mount command answers with: for
// a malformed command line, for a bad option (unknown, a bad value, or
// options that contradict each other: one code whichever check finds
// it), and for a mount that failed. The helper form speaks mount(8),
// where the filesystem refusing its options is a mount failure (32, as
// the kernel's "bad option" is); smallfs mount treats them as usage
// errors, as it does its flags.
type exitCodes struct{ usage, option, failure int }

var (
	helperCodes = exitCodes{exitHelperUsage, exitHelperFailure, exitHelperFailure}
	mountCodes  = exitCodes{exitUsage, exitUsage, exitError}
)

// helper is the mount.fuse3 form: smallfs DEVICE MOUNTPOINT -o OPTS.
func (a *app) helper(args []string) int {
	parsed, err := mountopt.ParseArgs(args)
	switch {
	case errors.Is(err, mountopt.ErrUsage):
		fmt.Fprintf(a.stderr, "smallfs: %v\nTry 'smallfs --help' or 'smallfs mount --help'.\n", err)
		return helperCodes.usage
	case err != nil:
		return a.failf(helperCodes.option, "%v", err)
	case parsed.Help:
		fmt.Fprint(a.stdout, mountHelp)
		return exitOK
	case parsed.Version:
		a.version()
		return exitOK
	}
	return a.mount(parsed, helperCodes)
}

// mountCmd is `smallfs mount`: the same as the helper form, with flags for
// every option.
func (a *app) mountCmd(args []string) int {
	parsed := mountopt.Args{Config: mountopt.Defaults()}
	var optErrs []error
	fs := mountFlags(&parsed, func(opt string) {
		if err := parsed.Config.Apply(opt); err != nil {
			optErrs = append(optErrs, err)
		}
	})
	pos, code, done := a.parseCommand(fs, mountHelp, args, []string{"DEVICE", "MOUNTPOINT"}, mountCodes.usage)
	if done {
		return code
	}
	if len(optErrs) > 0 {
		return a.failf(mountCodes.option, "%v", joinLine(optErrs))
	}
	parsed.Device, parsed.Mountpoint = pos[0], pos[1]
	return a.mount(parsed, mountCodes)
}

// mount either serves in this process (-f, or this is the daemon a mount
// started) or starts the daemon and waits for its word.
func (a *app) mount(p mountopt.Args, codes exitCodes) int {
	if err := p.Config.Check(); err != nil {
		return a.failf(codes.option, "%v", err)
	}
	if p.Config.Remount {
		if err := remount(p); err != nil {
			return a.failf(codes.failure, "%v", err)
		}
		return exitOK
	}
	if p.Foreground || a.notifier != nil {
		if err := a.serve(p); err != nil {
			a.notifier.Fail(err)
			return a.failf(codes.failure, "%v", err)
		}
		return exitOK
	}
	exe, err := os.Executable()
	if err != nil {
		return a.failf(codes.failure, "cannot find my own executable: %v", err)
	}
	if _, err := daemon.Start(exe, a.args, nil); err != nil {
		return a.failf(codes.failure, "%v", err)
	}
	return exitOK
}

// mountFlags defines the flags of `smallfs mount`: -f, and a flag for every
// option, each handing its option text to option in command-line order.
func mountFlags(p *mountopt.Args, option func(opt string)) *flag.FlagSet {
	fs := newFlags("mount")
	fs.BoolVar(&p.Foreground, "f", false, "")
	fs.BoolVar(&p.Foreground, "foreground", false, "")
	for _, name := range []string{"d", "debug"} {
		fs.BoolFunc(name, "", func(string) error { option("debug"); return nil })
	}
	for _, name := range []string{"r", "read-only"} {
		fs.BoolFunc(name, "", func(string) error { option("ro"); return nil })
	}
	fs.Func("o", "", func(v string) error { option(v); return nil })
	for _, s := range mountopt.Specs() {
		switch {
		case fs.Lookup(s.Flag()) != nil:
			// defined above with its short form
		case s.Value == "":
			fs.BoolFunc(s.Flag(), "", func(string) error { option(s.Name); return nil })
		default:
			fs.Func(s.Flag(), "", func(v string) error { option(s.Name + "=" + v); return nil })
		}
	}
	return fs
}

// joinLine joins errors on one line.
func joinLine(errs []error) string {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}
