package device

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// loopMajor is the block major of loop devices, fixed in the kernel.
const loopMajor = 7

// storageID names one place bytes live: an inode of a filesystem, or a
// block device. A path has one; a loop device has two, itself and the
// file behind it.
type storageID struct {
	block    bool   // rdev of a block device, else a file's st_dev
	dev, ino uint64 // ino is 0 for a block device
}

// identify returns the storage a path reaches: the file's inode, or the
// block device and, for a bound loop device, its backing file's inode
// (from LOOP_GET_STATUS64, exact even when the file was renamed or is
// reachable only from another mount namespace).
func identify(path string) ([]storageID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return []storageID{{dev: st.Dev, ino: st.Ino}}, nil
	case unix.S_IFBLK:
	default:
		return nil, fmt.Errorf("%s: mode %#o: %w", path, st.Mode&unix.S_IFMT, ErrNotDevice)
	}
	ids := []storageID{{block: true, dev: st.Rdev}}
	if unix.Major(st.Rdev) != loopMajor {
		return ids, nil
	}
	// Opening a loop device read-only, without O_EXCL, claims nothing.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	info, err := loopStatus(fd)
	if err != nil || info == nil {
		return ids, err
	}
	return append(ids, storageID{dev: info.Device, ino: info.Inode}), nil
}

// loopStatus returns the loop device's binding, or nil when no file is
// bound to it (ENXIO).
func loopStatus(fd int) (*unix.LoopInfo64, error) {
	info, err := unix.IoctlLoopGetStatus64(fd)
	if errors.Is(err, unix.ENXIO) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("LOOP_GET_STATUS64: %w", err)
	}
	return info, nil
}

// SameStorage reports whether paths a and b reach the same bytes: the
// same inode (one file under two names, hard links), the same block
// device, or a loop device and the file bound to it (or two loop devices
// over one file). Both must exist and be regular files or block devices.
func SameStorage(a, b string) (bool, error) {
	ia, err := identify(a)
	if err != nil {
		return false, err
	}
	ib, err := identify(b)
	if err != nil {
		return false, err
	}
	for _, x := range ia {
		for _, y := range ib {
			if x == y {
				return true, nil
			}
		}
	}
	return false, nil
}

// lockBacking takes the lock how (LOCK_EX or LOCK_SH) on the file bound
// to the loop device open as fd, so that the image file and the loop
// device over it exclude each other as one device does. It returns the
// backing file, holding the lock until closed, or nil when fd is no bound
// loop device or its file cannot be reached from here by any name the
// kernel gives (deleted, or in another mount namespace): no opener can
// then reach the file through this namespace either.
func lockBacking(fd int, rdev uint64, how int) (*os.File, error) {
	if unix.Major(rdev) != loopMajor {
		return nil, nil
	}
	info, err := loopStatus(fd)
	if err != nil || info == nil {
		return nil, err
	}
	for _, name := range backingNames(rdev, info) {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Dev != info.Device || st.Ino != info.Inode {
			f.Close() // another file now has that name
			continue
		}
		if err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("backing file %s: %w", name, ErrLocked)
			}
			return nil, fmt.Errorf("backing file %s: flock: %w", name, err)
		}
		return f, nil
	}
	return nil, nil
}

// backingNames are the paths the backing file may have: sysfs's, which
// is whole, then the loop's own record, cut at 63 bytes.
func backingNames(rdev uint64, info *unix.LoopInfo64) []string {
	var names []string
	sys := "/sys/dev/block/" + strconv.FormatUint(uint64(unix.Major(rdev)), 10) + ":" +
		strconv.FormatUint(uint64(unix.Minor(rdev)), 10) + "/loop/backing_file"
	if b, err := os.ReadFile(sys); err == nil {
		names = append(names, strings.TrimSuffix(string(b), "\n"))
	}
	if n := bytes.IndexByte(info.File_name[:], 0); n > 0 {
		names = append(names, string(info.File_name[:n]))
	}
	return names
}
