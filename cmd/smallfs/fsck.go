package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

type fsckOpts struct{ repair, json, data bool }

func fsckFlags() (*flag.FlagSet, *fsckOpts) {
	fs := newFlags("fsck")
	o := &fsckOpts{}
	fs.BoolVar(&o.repair, "repair", false, "")
	fs.BoolVar(&o.json, "json", false, "")
	fs.BoolVar(&o.data, "data", false, "")
	return fs, o
}

// fsckReport is what fsck prints; the JSON form uses the same names.
type fsckReport struct {
	Device    string   `json:"device"`
	Repair    bool     `json:"repair"`
	Problems  []string `json:"problems"`  // found by the first check
	Fixed     []string `json:"fixed"`     // changed by --repair
	Remaining []string `json:"remaining"` // still there after repair
	Notes     []string `json:"notes"`     // what the next mount completes after a crash; not problems
	Status    int      `json:"status"`    // the exit status, as e2fsck
}

// fsck checks a device's filesystem; exit codes are e2fsck's.
func (a *app) fsck(args []string) int {
	flags, o := fsckFlags()
	pos, code, done := a.parseCommand(flags, fsckHelp, args, []string{"DEVICE"}, fsckUsage)
	if done {
		return code
	}
	path := pos[0]
	// A mounted device is locked exclusively, so this fails rather than
	// check (or worse, repair) a filesystem that is changing underneath.
	dev, err := openDevice(path, device.Options{ReadOnly: !o.repair})
	if err != nil {
		return a.failf(fsckOperational, "fsck: %v", err)
	}
	defer dev.Close()
	r := fsckReport{Device: path, Repair: o.repair}
	r.Problems, r.Fixed, r.Remaining, r.Notes, err = fsckVolume(path, dev, o, a.status("fsck"))
	if err != nil {
		return a.failf(fsckOperational, "fsck: %v", err)
	}
	switch {
	case len(r.Problems) == 0:
		r.Status = fsckClean
	case len(r.Remaining) == 0:
		r.Status = fsckCorrected
	default:
		r.Status = fsckUncorrected
	}
	if o.json {
		err = a.writeJSON(r)
	} else {
		err = r.writeText(a.stdout)
	}
	if err != nil {
		return a.failf(fsckOperational, "fsck: %v", err)
	}
	return r.Status
}

func (r *fsckReport) writeText(w io.Writer) error {
	for _, n := range r.Notes {
		fmt.Fprintf(w, "%s: note: %s\n", r.Device, n)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "%s: %s\n", r.Device, p)
	}
	for _, f := range r.Fixed {
		fmt.Fprintf(w, "%s: fixed: %s\n", r.Device, f)
	}
	var err error
	switch r.Status {
	case fsckClean:
		_, err = fmt.Fprintf(w, "%s: clean\n", r.Device)
	case fsckCorrected:
		_, err = fmt.Fprintf(w, "%s: %d problem(s) found, all corrected\n", r.Device, len(r.Problems))
	default:
		hint := "; smallfs fsck --repair fixes what is safe to fix"
		if slices.ContainsFunc(r.Problems, func(p string) bool { return strings.HasPrefix(p, unloadable) }) {
			hint = "; fsck cannot repair them"
		}
		if r.Repair {
			for _, p := range r.Remaining {
				fmt.Fprintf(w, "%s: left: %s\n", r.Device, p)
			}
			hint = "; fsck cannot repair them"
		}
		_, err = fmt.Fprintf(w, "%s: %d problem(s) found, %d left%s\n", r.Device, len(r.Problems), len(r.Remaining), hint)
	}
	return err
}

// problemStrings renders Check's findings.
func problemStrings(ps []volume.Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
