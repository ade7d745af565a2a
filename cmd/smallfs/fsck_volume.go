package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/volume"
)

// fsckVolume checks the volume on dev without writing. With repair and
// problems found, it opens the volume for real — which replays the log,
// frees orphans and rebuilds free space from the extents in use, so leaked
// blocks return — runs Repair, closes it with a fresh checkpoint, and
// checks again. fixed lists what Open and Repair changed; notes, what
// the next mount will complete after a crash (not problems).
func fsckVolume(path string, dev device.Device, o *fsckOpts, show status) (found, fixed, left, notes []string, err error) {
	defer show("")
	show("loading metadata")
	found, notes, err = inspect(path, dev, o.data, show)
	if err != nil || !o.repair || len(found) == 0 {
		return found, nil, found, notes, err
	}
	badSlot, err := format.FindBadSlot(dev)
	if err != nil {
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
	if badSlot != nil { // Open and Close wrote a superblock into each slot
		fixed = append(fixed, fmt.Sprintf("superblock %c rewritten from superblock %c", 'A'+badSlot.Slot, 'A'+badSlot.Good.Slot))
	}
	show("checking again")
	left, _, err = inspect(path, dev, o.data, show)
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
// recovered. With data, every block of file data is read and checked
// against its checksum, and each damaged file is a problem. An I/O
// failure is an error.
func inspect(path string, dev device.Device, data bool, show status) (found, notes []string, err error) {
	vol, err := openReadOnly(path, dev, progressLine(show))
	var shrunk *format.ShrunkError
	switch {
	case errors.As(err, &shrunk):
		return []string{unloadable + cutShortText(path, shrunk)}, nil, nil
	case errors.Is(err, volume.ErrNoCheckpoint):
		return []string{unloadable + strings.TrimPrefix(errors.Unwrap(err).Error(), "open: ") +
			"; fsck cannot recover anything from this volume (the log holds only changes to a checkpoint): restore it from a backup"}, nil, nil
	case err != nil && volume.IsCorrupt(err):
		return []string{unloadable + strings.TrimPrefix(errors.Unwrap(err).Error(), "open: ")}, nil, nil
	case err != nil:
		return nil, nil, err
	}
	// Writes go to an overlay and are thrown away: a checkpoint at Close
	// would be work for nothing.
	defer vol.Discard()
	show("checking")
	r := vol.Recovery()
	found = recoveryProblems(r)
	// A slot the reader passed over is a problem the volume does not see.
	bad, err := format.FindBadSlot(dev)
	if err != nil {
		return nil, nil, err
	}
	if bad != nil {
		found = append(found, bad.String())
	}
	found = append(found, problemStrings(vol.Check())...)
	if data {
		damaged, err := checkData(vol, show)
		if err != nil {
			return nil, nil, err
		}
		found = append(found, damaged...)
	}
	return found, recoveryNotes(r), nil
}

// checkData reads every block of file data of vol and checks it against
// its checksum (volume.Scrub), and returns the damage found, a problem a
// block, naming the file. With one device there is no second copy to
// mend it from: the file's data is lost where it does not match.
func checkData(vol *volume.Volume, show status) ([]string, error) {
	show("reading file data")
	rep, err := vol.Scrub(context.Background(), volume.ScrubOptions{Progress: func(r volume.ScrubReport) {
		show(fmt.Sprintf("reading file data: %d%%, %s", 100*r.Blocks/max(r.Total, 1), human(r.Bytes)))
	}})
	if errors.Is(err, volume.ErrNoChecksums) {
		return nil, nil // nothing to check the data against; info says so
	}
	if err != nil {
		return nil, fmt.Errorf("reading file data: %w", err)
	}
	volume.SortDamage(rep.Damaged)
	var out []string
	for _, d := range rep.Damaged {
		out = append(out, damageText(d))
	}
	return out, nil
}

// damageText says what a damaged block costs its file.
func damageText(d volume.DamagedBlock) string {
	name := d.Path
	if name == "" {
		name = "a file without a name"
	}
	return fmt.Sprintf("damaged data: %s (inode %d), bytes %d+%d: checksum %#08x, recorded %#08x; no second copy: restore the file from a backup",
		name, d.Ino, d.Off, d.Len, d.Got, d.Want)
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
