package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// readOnlyUsers is what a read-only device can still be used for.
const readOnlyUsers = "only a read-only mount (-o ro), fsck and info can use it"

// refuseReadOnly stops a read-write open of a device that is read-only,
// with one line saying so, before the open fails somewhere deep (EPERM,
// EACCES, EROFS) or, as root, succeeds on an image its owner made
// read-only. A path that does not exist is left to the open.
//
// Read-only means: an image file without any write permission bit (root
// could write it, but chmod a-w is the owner saying it must not change),
// a file on a read-only filesystem, or a block device the kernel holds
// read-only (BLKROGET: losetup -r, a write-protected disk).
func refuseReadOnly(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	var why string
	switch {
	case fi.Mode().IsRegular() && fi.Mode().Perm()&0o222 == 0:
		why = fmt.Sprintf("image file mode %#o has no write permission", fi.Mode().Perm())
	case fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0:
		if ro, err := blockDeviceReadOnly(path); err == nil && ro {
			why = "the kernel holds the block device read-only (BLKROGET)"
		}
	}
	if why == "" {
		var st unix.Statfs_t
		if unix.Statfs(path, &st) == nil && st.Flags&unix.ST_RDONLY != 0 {
			why = "it lies on a read-only filesystem"
		}
	}
	if why != "" {
		return readOnlyError(path, why)
	}
	return nil
}

// readOnlyError is the line for a read-write open of a read-only device;
// it matches syscall.EROFS.
func readOnlyError(path, why string) error {
	return explain(syscall.EROFS, "%s: read-only device (%s): %s", path, why, readOnlyUsers)
}

// openedReadOnly retells a read-write open that the kernel refused for
// want of write access (EPERM: an immutable file; EACCES: no write
// permission for this user; EROFS) as the read-only line, when the path
// can still be opened for reading; otherwise it returns err as it is.
func openedReadOnly(path string, err error) error {
	if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EACCES) && !errors.Is(err, syscall.EROFS) {
		return err
	}
	f, rerr := os.Open(path)
	if rerr != nil {
		return err
	}
	f.Close()
	var errno syscall.Errno
	errors.As(err, &errno)
	return readOnlyError(path, "it cannot be opened for writing: "+errno.Error())
}

// blockDeviceReadOnly asks the kernel whether a block device is
// read-only.
func blockDeviceReadOnly(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	ro, err := unix.IoctlGetInt(int(f.Fd()), unix.BLKROGET)
	return ro != 0, err
}

// closedLine is the daemon's last log line after a clean close.
func closedLine(readOnly bool) string {
	if readOnly {
		return "unmounted; read-only: the device was not written"
	}
	return "unmounted; device marked clean"
}
