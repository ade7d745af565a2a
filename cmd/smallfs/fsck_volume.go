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
// checks again. fixed lists what Open and Repair changed; notes, what
// the next mount will complete after a crash (not problems).
func fsckVolume(path string, dev device.Device, repair bool, show status) (found, fixed, left, notes []string, err error) {
	defer show("")
	show("loading metadata")
	found, notes, err = inspect(path, dev, show)
	if err != nil || !repair || len(found) == 0 {
		return found, nil, found, notes, err
	}
	show("repairing")
	vol, err := volume.Open(dev, volume.Options{Logger: quiet(), CommitInterval: -1, Progress: progressLine(show), Salvage: true, OpenDamaged: true})
	if err != nil {
		return found, nil, found, notes, nil // nothing could be repaired
	}
	for _, ino := range vol.Recovery().Orphans {
		fixed = append(fixed, volume.Problem{Ino: ino, What: "orphan freed"}.String())
	}
	if d := vol.Recovery().Damaged; d != nil { // Close below writes the fresh one
		f := fmt.Sprintf("damaged checkpoint at block %d replaced by a fresh one", d.Block)
		if d.Lost {
			f += fmt.Sprintf("; kept the older checkpoint (block %d) and what the log replays after it: committed transactions %d-%d are lost",
				d.Loaded, d.LostFirst, d.LostLast)
		}
		fixed = append(fixed, f)
	}
	if d := vol.Recovery().LogDamage; d != nil { // and ends the log where the damage is
		fixed = append(fixed, fmt.Sprintf("log salvaged: kept the transactions before %d; %d-%d (at least) are lost", d.First, d.First, d.Last))
	}
	notes = nil // done now, not at the next mount
	done, rerr := vol.Repair()
	fixed = append(fixed, problemStrings(done)...)
	if err := errors.Join(rerr, vol.Close()); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("%s: repairing: %w", path, err)
	}
	show("checking again")
	left, _, err = inspect(path, dev, show)
	return found, fixed, left, notes, err
}

// unloadable starts the problem of metadata too damaged to load, which
// --repair cannot mend either: it repairs from loaded metadata.
const unloadable = "metadata cannot be loaded: "

// inspect lists the problems of the volume on dev, opened read-only with
// its progress shown (what Open had to repair that it should not have,
// then what Check finds), and notes on what Open did after a crash.
// Metadata too damaged to load is a problem of its own, which says so
// when no checkpoint loads: fsck rebuilds from one, so nothing can be
// recovered. An I/O failure is an error.
func inspect(path string, dev device.Device, show status) (found, notes []string, err error) {
	vol, err := openReadOnly(path, dev, progressLine(show))
	switch {
	case errors.Is(err, volume.ErrNoCheckpoint):
		return []string{unloadable + strings.TrimPrefix(errors.Unwrap(err).Error(), "open: ") +
			"; fsck cannot recover anything from this volume (the log holds only changes to a checkpoint): restore it from a backup"}, nil, nil
	case err != nil && volume.IsCorrupt(err):
		return []string{unloadable + strings.TrimPrefix(errors.Unwrap(err).Error(), "open: ")}, nil, nil
	case err != nil:
		return nil, nil, err
	}
	defer vol.Close()
	show("checking")
	r := vol.Recovery()
	return append(recoveryProblems(r), problemStrings(vol.Check())...), recoveryNotes(r), nil
}

// recoveryProblems and recoveryNotes sort what Open completed by itself.
// A damaged newest checkpoint that the older one and the log stood in for
// is a problem although nothing is lost: until a fresh checkpoint replaces
// it, a second damage would have nothing to fall back to. So is one whose
// log falls short (salvaged in memory, naming the transactions lost), and
// a log damaged before its end (the same).
// A replayed log is the journal doing its job after a crash, and not even
// a note. Inodes without links that Open freed are, after a crash, what
// every crash with recent deletes leaves: files unlinked while open, or
// still known to the kernel, which had not sent its FORGET (ext4 keeps
// an orphan list for the same). They are a note: the next mount frees
// them. A cleanly closed volume has none, so there one is a problem.
func recoveryProblems(r volume.Recovery) []string {
	var out []string
	if d := r.Damaged; d != nil {
		out = append(out, d.String())
	}
	if d := r.LogDamage; d != nil {
		out = append(out, d.String())
	}
	if n := len(r.Orphans); n > 0 && r.Clean {
		out = append(out, fmt.Sprintf("%d orphan inode(s): unlinked but never freed", n))
	}
	return out
}

func recoveryNotes(r volume.Recovery) []string {
	if n := len(r.Orphans); n > 0 && !r.Clean {
		return []string{fmt.Sprintf("%d inode(s) unlinked while open at the crash: the next mount frees them", n)}
	}
	return nil
}
