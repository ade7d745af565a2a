package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

// fsckVolume checks the volume on dev without writing. With repair and
// problems found, it opens the volume for real — which replays the log,
// frees orphans and rebuilds free space from the extents in use, so leaked
// blocks return — runs Repair, closes it with a fresh checkpoint, and
// checks again. fixed lists what Open and Repair changed.
func fsckVolume(path string, dev device.Device, repair bool, show status) (found, fixed, left []string, err error) {
	defer show("")
	show("loading metadata")
	found, err = inspect(path, dev, show)
	if err != nil || !repair || len(found) == 0 {
		return found, nil, found, err
	}
	show("repairing")
	vol, err := volume.Open(dev, volume.Options{Logger: quiet(), CommitInterval: -1, Progress: progressLine(show)})
	if err != nil {
		return found, nil, found, nil // nothing could be repaired
	}
	for _, ino := range vol.Recovery().Orphans {
		fixed = append(fixed, volume.Problem{Ino: ino, What: "orphan freed"}.String())
	}
	done, rerr := vol.Repair()
	fixed = append(fixed, problemStrings(done)...)
	if err := errors.Join(rerr, vol.Close()); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: repairing: %w", path, err)
	}
	show("checking again")
	left, err = inspect(path, dev, show)
	return found, fixed, left, err
}

// inspect lists the problems of the volume on dev, opened read-only with
// its progress shown: what Open had to repair on its own (its Recovery),
// then what Check finds. Metadata too damaged to load is a problem of its
// own; an I/O failure is an error.
func inspect(path string, dev device.Device, show status) ([]string, error) {
	vol, err := openReadOnly(path, dev, progressLine(show))
	switch {
	case err != nil && volume.IsCorrupt(err):
		return []string{"metadata cannot be loaded: " + strings.TrimPrefix(errors.Unwrap(err).Error(), "open: ")}, nil
	case err != nil:
		return nil, err
	}
	defer vol.Close()
	found := recoveryProblems(vol.Recovery())
	show("checking")
	return append(found, problemStrings(vol.Check())...), nil
}

// recoveryProblems are the problems Open repairs by itself. A replayed log
// is not one: that is the journal doing its job after a crash.
func recoveryProblems(r volume.Recovery) []string {
	if n := len(r.Orphans); n > 0 {
		return []string{fmt.Sprintf("%d orphan inode(s): unlinked but never freed", n)}
	}
	return nil
}
