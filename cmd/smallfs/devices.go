package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountinfo"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// lockWait is how long openDevice waits for a device that is locked but
// not mounted. umount(8) returns when the kernel lets go, while the daemon
// is still writing its checkpoint and holding the lock: `umount && fsck`
// and `umount && mount` must not fail on that.
var lockWait = 10 * time.Second

// openDevice opens path as the backing device and turns the usual
// failures into one line an operator can act on.
func openDevice(path string, opts device.Options) (*device.File, error) {
	d, err := device.Open(path, opts)
	var mnt string
	if errors.Is(err, device.ErrLocked) {
		mnt = mountedOn(path)
	}
	for deadline := time.Now().Add(lockWait); mnt == "" && errors.Is(err, device.ErrLocked) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		d, err = device.Open(path, opts)
	}
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, explain(err, "%s: no such device or image file", path)
	case errors.Is(err, device.ErrLocked) && mnt != "":
		return nil, explain(err, "%s: device is mounted on %s", path, mnt)
	case errors.Is(err, device.ErrLocked):
		return nil, explain(err, "%s: device is in use (being checked or formatted, or mounted under another name)", path)
	case errors.Is(err, device.ErrNotDevice):
		return nil, explain(err, "%s: not an image file or block device", path)
	case errors.Is(err, device.ErrTooSmall):
		return nil, explain(err, "%s: too small for a filesystem (at least %s)", path, human(device.DefaultMinSize))
	}
	return nil, err
}

// formatError explains why a device holds no filesystem this smallfs can
// use.
func formatError(path string, err error) error {
	switch {
	case errors.Is(err, format.ErrNotSmallfs):
		return explain(err, "%s: not a smallfs filesystem (make one with smallfs mkfs)", path)
	case errors.Is(err, format.ErrNewerVersion):
		return explain(err, "%s: made by a newer smallfs (format newer than version %d); upgrade smallfs", path, format.FormatVersion)
	case errors.Is(err, format.ErrUnknownFeature):
		return explain(err, "%s: uses format features this smallfs does not know; upgrade smallfs", path)
	case errors.Is(err, format.ErrNoValidSuperblock), errors.Is(err, format.ErrCorrupt):
		return fmt.Errorf("%s: damaged filesystem: %w", path, err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// explained is an error retold for an operator: its text is the message
// alone, while errors.Is still finds the sentinel underneath.
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

func explain(err error, format string, args ...any) error {
	return &explained{fmt.Sprintf(format, args...), err}
}

// mountedOn returns where a smallfs from path is mounted, or "".
func mountedOn(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	all, err := mountinfo.All()
	if err != nil {
		return ""
	}
	for _, m := range all {
		if m.Type == "fuse."+mountopt.TypeName && m.Source == abs {
			return m.Mountpoint
		}
	}
	return ""
}
