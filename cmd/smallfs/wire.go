package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/overlay"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

// quiet is the logger of offline tools: the volume's lifecycle lines would
// only clutter a report.
func quiet() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// makeFilesystem writes an empty filesystem on dev.
func makeFilesystem(dev device.Device, blockSize uint32, force bool) error {
	err := volume.Mkfs(dev, volume.MkfsOptions{BlockSize: blockSize, Force: force})
	if err != nil {
		return explain(err, "%s", strings.TrimPrefix(err.Error(), "mkfs: "))
	}
	return nil
}

// openReadOnly opens the volume on a copy-on-write overlay of dev: the
// replay and bookkeeping Open does stay in memory and the device is only
// read. Close the volume when done.
func openReadOnly(path string, dev device.Device, log logrus.FieldLogger) (*volume.Volume, error) {
	vol, err := volume.Open(overlay.New(dev), volume.Options{CommitInterval: -1, Logger: log})
	if err != nil {
		return nil, volumeError(path, err)
	}
	return vol, nil
}

// volumeError explains why a volume did not open.
func volumeError(path string, err error) error {
	if ferr := formatError(path, err); !strings.HasPrefix(ferr.Error(), path+": open:") {
		return ferr
	}
	if volume.IsCorrupt(err) {
		return explain(err, "%s: damaged filesystem: %s", path, strings.TrimPrefix(err.Error(), "open: "))
	}
	return fmt.Errorf("%s: %w", path, err)
}

// readUsage reads space and files for info, changing nothing.
func readUsage(path string, dev device.Device) (*usageInfo, error) {
	vol, err := openReadOnly(path, dev, quiet())
	if err != nil {
		return nil, err
	}
	defer vol.Close()
	st := vol.StatFS()
	return &usageInfo{BlocksFree: st.BlocksFree, Files: st.Files, FilesFree: st.FilesFree}, nil
}

// checkVolume checks the volume on dev without writing. With repair and
// problems found, it opens the volume for real — which replays the log,
// frees orphans and rebuilds free space from the extents in use, so leaked
// blocks return — closes it with a fresh checkpoint, and checks again.
func checkVolume(path string, dev device.Device, repair bool, show status) (found, left []string, err error) {
	defer show("")
	show("loading metadata")
	found, err = checkOnce(path, dev, show)
	if err != nil || !repair || len(found) == 0 {
		return found, found, err
	}
	show("repairing")
	vol, err := volume.Open(dev, volume.Options{Logger: quiet()})
	if err != nil {
		return found, found, nil // nothing could be repaired
	}
	if err := vol.Close(); err != nil {
		return nil, nil, fmt.Errorf("%s: writing the repaired metadata: %w", path, err)
	}
	show("checking again")
	left, err = checkOnce(path, dev, show)
	return found, left, err
}

// checkOnce lists the problems of the volume on dev. Metadata too damaged
// to load is a problem of its own; an I/O failure is an error.
func checkOnce(path string, dev device.Device, show status) ([]string, error) {
	rec := &recovery{}
	log := logrus.New()
	log.SetOutput(io.Discard)
	log.AddHook(rec)
	vol, err := openReadOnly(path, dev, log)
	switch {
	case err != nil && volume.IsCorrupt(err):
		return []string{"metadata cannot be loaded: " + strings.TrimPrefix(errors.Unwrap(err).Error(), "open: ")}, nil
	case err != nil:
		return nil, err
	}
	defer vol.Close()
	var found []string
	if rec.orphans > 0 {
		found = append(found, fmt.Sprintf("%d orphan inode(s): unlinked but never freed", rec.orphans))
	}
	show("checking")
	return append(found, problemStrings(vol.Check())...), nil
}

// recovery collects what volume.Open repairs on its own. The volume
// reports it only in its log lines, so this reads them.
type recovery struct {
	orphans int
}

func (r *recovery) Levels() []logrus.Level { return logrus.AllLevels }

func (r *recovery) Fire(e *logrus.Entry) error {
	if e.Message == "freed orphan inodes" {
		if n, ok := e.Data["count"].(int); ok {
			r.orphans += n
		}
	}
	return nil
}
