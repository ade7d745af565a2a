package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
)

// Exit statuses of smallfs scrub, in the manner of fsck's.
const (
	scrubClean   = 0  // every block checked, none damaged
	scrubDamaged = 4  // damaged file data found: the files are named
	scrubFailed  = 8  // not done: an error, or stopped before the end
	scrubUsage   = 16 // a bad command line
)

type scrubOpts struct {
	rate   int64
	resume bool
	json   bool
}

func scrubFlags() (*flag.FlagSet, *scrubOpts) {
	fs := newFlags("scrub")
	o := &scrubOpts{}
	fs.Func("rate", "", func(v string) (err error) {
		o.rate, err = parseSize(v)
		return err
	})
	fs.BoolVar(&o.resume, "resume", false, "")
	fs.BoolVar(&o.json, "json", false, "")
	return fs, o
}

// scrub has the daemon serving a mount read every block of file data and
// check it against its checksum, showing progress; Ctrl-C stops it where
// --resume picks it up.
func (a *app) scrub(args []string) int {
	flags, o := scrubFlags()
	pos, code, done := a.parseCommand(flags, scrubHelp, args, []string{"MOUNTPOINT"}, scrubUsage)
	if done {
		return code
	}
	sock, err := socketOf(pos[0])
	if err != nil {
		return a.failf(scrubFailed, "scrub: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	show := a.status("scrub")
	st, err := control.Scrub(ctx, sock, control.ScrubRequest{Resume: o.resume, Rate: o.rate}, 10*time.Second, func(s control.ScrubStatus) {
		show(fmt.Sprintf("%d%%, %s checked, %d damaged block(s)", 100*s.Blocks/max(s.Total, 1), human(s.Bytes), len(s.Damaged)))
	})
	show("")
	switch {
	case errors.Is(err, context.Canceled):
		st.Stopped = true
	case errors.Is(err, control.ErrNoDaemon):
		if abs, aerr := resolveMountpoint(pos[0]); aerr == nil {
			err = deadMountError(abs, err)
		}
		return a.failf(scrubFailed, "scrub: %s: %v", pos[0], err)
	case err != nil:
		return a.failf(scrubFailed, "scrub: %s: %v", pos[0], err)
	}
	if o.json {
		if err := a.writeJSON(st); err != nil {
			return a.failf(scrubFailed, "scrub: %v", err)
		}
	} else {
		writeScrubText(a, pos[0], st)
	}
	switch {
	case len(st.Damaged) > 0:
		return scrubDamaged
	case st.Stopped:
		return scrubFailed
	}
	return scrubClean
}

// writeScrubText prints a scrub's summary and every damaged file.
func writeScrubText(a *app, mnt string, st control.ScrubStatus) {
	rate := float64(st.Bytes) / max(st.Took.Seconds(), 1e-3)
	fmt.Fprintf(a.stdout, "%s: checked %d blocks (%s) in %s, %s/s\n", mnt, st.Blocks, human(st.Bytes), st.Took.Round(time.Millisecond), human(uint64(rate)))
	if st.Unverified > 0 {
		fmt.Fprintf(a.stdout, "%s: %d block(s) in use have no checksum and were not checked\n", mnt, st.Unverified)
	}
	for _, d := range st.Damaged {
		name := d.Path
		if name == "" {
			name = "a file without a name"
		}
		fmt.Fprintf(a.stdout, "%s: damaged data: %s (inode %d), bytes %d+%d: checksum %#08x, recorded %#08x\n", mnt, name, d.Ino, d.Off, d.Len, d.Got, d.Want)
	}
	switch {
	case len(st.Damaged) > 0:
		fmt.Fprintf(a.stdout, "%s: %d damaged block(s): reads of them fail with EIO; with one device there is no second copy to mend them from: restore those files from a backup\n", mnt, len(st.Damaged))
	case st.Stopped:
		fmt.Fprintf(a.stdout, "%s: stopped before the end; smallfs scrub --resume %s goes on from there\n", mnt, mnt)
	default:
		fmt.Fprintf(a.stdout, "%s: clean\n", mnt)
	}
}
