package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
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
	if !opts.ReadOnly {
		if err := refuseReadOnly(path); err != nil {
			return nil, err
		}
	}
	if !opts.ReadOnly && !opts.NoLock {
		if err := refuseKernelMounted(path); err != nil {
			return nil, err
		}
	}
	d, err := device.Open(path, opts)
	var mnt mountinfo.Mount
	held := func(err error) bool { return errors.Is(err, device.ErrLocked) || errors.Is(err, device.ErrBusy) }
	if held(err) {
		if ms := mountsOf(path); len(ms) > 0 {
			mnt = ms[0]
		}
	}
	for deadline := time.Now().Add(lockWait); mnt.Mountpoint == "" && held(err) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		d, err = device.Open(path, opts)
	}
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, explain(err, "%s: no such device or image file", path)
	case held(err) && mnt.Mountpoint != "":
		return nil, explain(err, "%s: device is mounted on %s%s", path, mnt.Mountpoint, kernelType(mnt))
	case errors.Is(err, device.ErrLocked):
		return nil, explain(err, "%s: device is in use (being checked or formatted, or mounted under another name)", path)
	case errors.Is(err, device.ErrBusy):
		return nil, explain(err, "%s: device is busy: mounted by the kernel or in use (md, LVM, another program)", path)
	case errors.Is(err, device.ErrNotDevice):
		return nil, explain(err, "%s: not an image file or block device", path)
	case errors.Is(err, device.ErrTooSmall):
		if shrunk := cutShort(path); shrunk != nil {
			return nil, explain(err, "%s: %s", path, cutShortText(path, shrunk))
		}
		return nil, explain(err, "%s: too small for a filesystem (at least %s)", path, human(device.DefaultMinSize))
	case !opts.ReadOnly:
		return nil, openedReadOnly(path, err)
	}
	return nil, err
}

// refuseKernelMounted refuses a writer a device the kernel has mounted
// under another name: an image file behind a loop device that holds,
// say, ext4. The kernel takes no flock, and O_EXCL concerns the loop
// device, not its file, so only the mount table tells.
func refuseKernelMounted(path string) error {
	for _, m := range mountsOf(path) {
		// A live smallfs holds the lock, which Open reports; a dead one
		// holds nothing.
		if m.Type != smallfsType {
			return explain(device.ErrBusy, "%s: device is mounted on %s%s", path, m.Mountpoint, kernelType(m))
		}
	}
	return nil
}

// cutShort returns the format.ShrunkError of a device too small to open
// that still holds a superblock: an image cut short, not one never made.
func cutShort(path string) *format.ShrunkError {
	d, err := device.Open(path, device.Options{ReadOnly: true, NoLock: true, MinSize: 1})
	if err != nil {
		return nil
	}
	defer d.Close()
	var shrunk *format.ShrunkError
	if _, err := format.ReadSuperblock(d); errors.As(err, &shrunk) {
		return shrunk
	}
	return nil
}

// kernelType is " (TYPE)" for a mount that is not smallfs's.
func kernelType(m mountinfo.Mount) string {
	if m.Type == smallfsType {
		return ""
	}
	return " (" + m.Type + ")"
}

// formatError explains why a device holds no filesystem this smallfs can
// use.
func formatError(path string, err error) error {
	var shrunk *format.ShrunkError
	switch {
	case errors.As(err, &shrunk):
		return explain(err, "%s: %s", path, cutShortText(path, shrunk))
	case errors.Is(err, format.ErrNotSmallfs):
		return explain(err, "%s: not a smallfs filesystem (make one with smallfs mkfs)", path)
	case errors.Is(err, format.ErrNewerVersion):
		return explain(err, "%s: made by a newer smallfs (format newer than version %d); upgrade smallfs", path, format.FormatVersion)
	case errors.Is(err, format.ErrUnknownFeature):
		return explain(err, "%s: uses format features this smallfs does not know; upgrade smallfs", path)
	case errors.Is(err, format.ErrNoValidSuperblock), errors.Is(err, format.ErrCorrupt):
		// volume.Open's errors start "open: ", which says nothing here.
		return explain(err, "%s: damaged filesystem: %s", path, strings.TrimPrefix(err.Error(), "open: "))
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

const smallfsType = "fuse." + mountopt.TypeName

// mountsOf returns the mounts of the storage path reaches under any name
// (itself, a hard link, a loop device over it, the file behind it), in
// the kernel's order. It looks at smallfs mounts, whose source is their
// device's path unless fsname says otherwise, and at mounts of a device
// under /dev; others (tmpfs, proc, overlay) name no storage.
func mountsOf(path string) []mountinfo.Mount {
	all, err := mountinfo.All()
	if err != nil {
		return nil
	}
	var found []mountinfo.Mount
	for _, m := range all {
		if !filepath.IsAbs(m.Source) || m.Type != smallfsType && !strings.HasPrefix(m.Source, "/dev/") {
			continue
		}
		if same, err := device.SameStorage(path, m.Source); err == nil && same {
			found = append(found, m)
		}
	}
	return found
}
