package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/daemon"
)

func main() {
	a := &app{stdout: os.Stdout, stderr: os.Stderr, notifier: daemon.Child()}
	os.Exit(a.run(os.Args))
}

// app carries what every command needs; tests run commands in-process
// with their own writers.
type app struct {
	stdout, stderr io.Writer
	// notifier is set in the background daemon a mount started: the
	// process re-runs the mount command and reports through it.
	notifier *daemon.Notifier
	// args is the command line without the program name; the daemon is
	// started with the same one.
	args []string
}

// command is one subcommand: its help text and its body.
type command struct {
	name    string
	summary string
	run     func(a *app, args []string) int
}

// commands in the order help lists them.
var commands = []command{
	{"mkfs", "make a filesystem on a device or image file", (*app).mkfs},
	{"mount", "mount a device (the flags form of the mount helper)", (*app).mountCmd},
	{"fsck", "check a filesystem and repair what is safe", (*app).fsck},
	{"tune", "give an unmounted filesystem's file data checksums, or take them away", (*app).tune},
	{"info", "show a device's superblock, usage and free-space fragmentation", (*app).info},
	{"stats", "show the live figures of a mounted filesystem", (*app).stats},
	{"sync", "commit everything a mounted filesystem holds (sync(1) does not)", (*app).syncMount},
	{"scrub", "read and check every block of file data of a mounted filesystem", (*app).scrub},
	{"bench", "run the smallfile-style benchmark (package bench)", (*app).bench},
}

// run dispatches argv: a subcommand, or the mount helper form
// `smallfs DEVICE MOUNTPOINT -o ...` that mount.fuse3 uses. Invoked as
// mount.fuse.smallfs or mount.smallfs it is always the helper.
func (a *app) run(argv []string) int {
	name := filepath.Base(argv[0])
	args := argv[1:]
	a.args = args
	if strings.HasPrefix(name, "mount.") {
		return a.helper(args)
	}
	if len(args) == 0 {
		fmt.Fprint(a.stderr, mainUsage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 {
			return a.run([]string{argv[0], args[1], "--help"})
		}
		fmt.Fprint(a.stdout, mainUsage)
		return exitOK
	case "-V", "--version", "version":
		a.version()
		return exitOK
	}
	for _, c := range commands {
		if args[0] == c.name {
			return c.run(a, args[1:])
		}
	}
	return a.helper(args)
}

// writeJSON prints v as indented JSON, the --json form of every command.
func (a *app) writeJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// failf prints one error line and returns code.
func (a *app) failf(code int, format string, args ...any) int {
	fmt.Fprintf(a.stderr, "smallfs: "+format+"\n", args...)
	return code
}
