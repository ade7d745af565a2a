package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountinfo"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
)

type statsOpts struct {
	json, watch bool
	interval    time.Duration
	count       int
}

func statsFlags() (*flag.FlagSet, *statsOpts) {
	fs := newFlags("stats")
	o := &statsOpts{}
	fs.BoolVar(&o.json, "json", false, "")
	fs.BoolVar(&o.watch, "watch", false, "")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "")
	fs.IntVar(&o.count, "count", 0, "")
	return fs, o
}

// stats prints the live figures of the daemon serving a mount point.
func (a *app) stats(args []string) int {
	flags, o := statsFlags()
	pos, code, done := a.parseCommand(flags, statsHelp, args, []string{"MOUNTPOINT"}, exitUsage)
	if done {
		return code
	}
	if o.interval <= 0 || o.count < 0 {
		return a.failf(exitUsage, "stats: --interval must be positive and --count not negative")
	}
	sock, err := socketOf(pos[0])
	if err != nil {
		return a.failf(exitError, "stats: %v", err)
	}
	var prev *control.Stats
	for n := 1; ; n++ {
		st, err := control.Fetch(sock, 10*time.Second)
		if err != nil {
			if abs, aerr := resolveMountpoint(pos[0]); aerr == nil {
				err = deadMountError(abs, err)
			}
			return a.failf(exitError, "stats: %s: %v", pos[0], err)
		}
		if o.json {
			err = a.writeJSON(st)
		} else {
			if prev != nil {
				fmt.Fprintf(a.stdout, "\n--- %s\n", st.Taken.Format(time.RFC3339))
			}
			err = control.WriteText(a.stdout, st, prev)
		}
		if err != nil {
			return a.failf(exitError, "stats: %v", err)
		}
		if !o.watch || n == o.count {
			return exitOK
		}
		prev = &st
		time.Sleep(o.interval)
	}
}

// socketOf finds the control socket of the smallfs mounted on dir from
// mountinfo, without touching the mount.
func socketOf(dir string) (string, error) {
	abs, err := resolveMountpoint(dir)
	if err != nil {
		return "", err
	}
	m, err := mountinfo.Find(abs)
	if errors.Is(err, mountinfo.ErrNotMounted) {
		return "", fmt.Errorf("%s: nothing is mounted there", dir)
	} else if err != nil {
		return "", err
	}
	if m.Type != "fuse."+mountopt.TypeName {
		return "", fmt.Errorf("%s: not a smallfs mount (type %s)", dir, m.Type)
	}
	return control.SocketPath(control.RunDir(), m.Dev), nil
}

// resolveMountpoint makes dir absolute and resolves symlinks in its parent
// (mountinfo lists real paths). It does not look at dir itself: that would
// ask the mounted filesystem, which may be the one that is stuck.
func resolveMountpoint(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if errors.Is(err, fs.ErrNotExist) {
		return "", explain(err, "%s: no such directory", dir)
	} else if err != nil {
		return "", err
	}
	return filepath.Join(parent, filepath.Base(abs)), nil
}
