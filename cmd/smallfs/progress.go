package main

import (
	"fmt"
	"os"

	"github.com/smallfs/smallfs/fs/volume"
)

// status shows what a long job is doing on one terminal line, redrawn in
// place; status("") clears it. Where stderr is not a terminal it does
// nothing, so logs and pipes get no carriage-return noise.
type status func(msg string)

func (a *app) status(cmd string) status {
	f, ok := a.stderr.(*os.File)
	if !ok || !isTerminal(f) {
		return func(string) {}
	}
	return func(msg string) {
		if msg == "" {
			fmt.Fprint(f, "\r\033[K")
			return
		}
		fmt.Fprintf(f, "\r\033[K%s: %s", cmd, msg)
	}
}

// isTerminal reports whether f is a character device, as a terminal is.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressLine shows volume.Open's progress on a status line (fsck, and a
// mount in the foreground on a terminal).
func progressLine(show status) func(volume.Progress) {
	return func(p volume.Progress) {
		if p.Total > 0 {
			show(fmt.Sprintf("%s: %d%%", p.Phase, p.Done*100/p.Total))
			return
		}
		show(fmt.Sprintf("%s: %d", p.Phase, p.Done))
	}
}
