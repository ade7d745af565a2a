package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/overlay"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/journal"
	"github.com/smallfs/smallfs/fs/volume"
	"github.com/smallfs/smallfs/internal/nolog"
)

// quiet is the logger of offline tools: the volume's lifecycle lines would
// only clutter a report.
func quiet() logrus.FieldLogger { return nolog.New() }

// makeFilesystem writes an empty filesystem on dev as o says.
func makeFilesystem(dev device.Device, o *mkfsOpts) error {
	err := volume.Mkfs(dev, volume.MkfsOptions{BlockSize: uint32(o.blockSize), Force: o.force, RootUID: o.owner.uid, RootGID: o.owner.gid,
		NoBlockSums: o.noChecksums})
	if err != nil {
		return explain(err, "%s", strings.TrimPrefix(err.Error(), "mkfs: "))
	}
	return nil
}

// openReadOnly opens the volume on a copy-on-write overlay of dev: the
// replay and bookkeeping Open does stay in memory and the device is only
// read. A log damaged before its end is salvaged, in memory too
// (Recovery.LogDamage says what that loses), and metadata that fails its
// checks is opened as it is (Recovery.Inconsistent): a look at the volume
// should not fail where fsck --repair would go on. Open tells progress
// (which may be nil) how far it has got. Close the volume when done.
func openReadOnly(path string, dev device.Device, progress func(volume.Progress)) (*volume.Volume, error) {
	vol, err := volume.Open(overlay.New(dev), volume.Options{CommitInterval: -1, Logger: quiet(), Progress: progress, Salvage: true, OpenDamaged: true})
	if err != nil {
		return nil, volumeError(path, err)
	}
	return vol, nil
}

// volumeError explains why a volume did not open.
func volumeError(path string, err error) error {
	// Checkpoint damage first: its cause may be a format.ErrCorrupt, which
	// formatError takes for a superblock's.
	if errors.Is(err, volume.ErrCheckpointLoss) {
		return explain(err, "%s: damaged filesystem: %s; run smallfs fsck --repair, which keeps the older checkpoint and what the log replays after it",
			path, strings.TrimPrefix(err.Error(), "open: "))
	}
	if errors.Is(err, volume.ErrNoCheckpoint) {
		return explain(err, "%s: damaged filesystem: %s; smallfs fsck cannot recover it: restore it from a backup",
			path, strings.TrimPrefix(err.Error(), "open: "))
	}
	if ferr := formatError(path, err); !strings.HasPrefix(ferr.Error(), path+": open:") {
		return ferr
	}
	if errors.Is(err, volume.ErrInconsistent) {
		return explain(err, "%s: damaged filesystem: %s; run smallfs fsck --repair, which drops or cuts only the damaged files and names each "+
			"(smallfs fsck lists every problem; a read-only mount, -o ro, serves the undamaged files meanwhile)",
			path, strings.TrimPrefix(err.Error(), "open: "))
	}
	if errors.Is(err, journal.ErrLogDamaged) {
		return explain(err, "%s: damaged filesystem: %s; run smallfs fsck --repair, which keeps what the log holds before the damage",
			path, strings.TrimPrefix(err.Error(), "open: "))
	}
	if volume.IsCorrupt(err) {
		return explain(err, "%s: damaged filesystem: %s", path, strings.TrimPrefix(err.Error(), "open: "))
	}
	return fmt.Errorf("%s: %w", path, err)
}
