package fuse

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// fusectlDir is where the kernel's fusectl filesystem lists connections.
const fusectlDir = "/sys/fs/fuse/connections"

// Abort ends the mount now, even while files on it are open, and returns
// once the last request has been served: the mountpoint is detached (as
// umount -l: no new opens, the name is free at once), then the connection
// is aborted through fusectl (/sys/fs/fuse/connections/N/abort), so the
// kernel fails every pending and later request of processes still holding
// files with ENOTCONN, and the serve loop ends.
//
// Nothing the daemon received is lost: the files the kernel never
// released are released as at any unmount, their buffered writes going
// to the volume, which the caller then closes (flush, checkpoint, clean).
// What is lost is what the processes still write after the abort; they
// get errors for it. Callers commit first (volume Sync), so that what
// was written before is durable even if closing fails.
//
// If the connection cannot be aborted (fusectl missing and not
// mountable, or no permission), Abort returns an error and the mount
// stays detached: the serve loop then ends when the last file is closed.
// If the mountpoint no longer shows this mount (it was unmounted from
// outside while files stay open), Abort returns an error and changes
// nothing: the connection can then not be told apart from a newer one
// that took its number. Aborting an unmounted Server returns nil.
func (s *Server) Abort() error {
	s.unmount.Lock()
	defer s.unmount.Unlock()
	if s.ended() {
		return nil
	}
	pin, err := pinMount(s.mountpoint, s.conn)
	if err != nil {
		return fmt.Errorf("fuse: abort %s: %w", s.mountpoint, err)
	}
	defer unix.Close(pin)
	if err := Detach(s.mountpoint); err != nil {
		return fmt.Errorf("fuse: abort %s: %w", s.mountpoint, err)
	}
	if err := abortConnection(s.conn); err != nil {
		return fmt.Errorf("fuse: abort %s: connection %d: %w", s.mountpoint, s.conn, err)
	}
	<-s.served
	return nil
}

// errMountGone is pinMount's answer when the mountpoint no longer shows
// this connection's filesystem (it was unmounted from outside).
var errMountGone = errors.New("the mountpoint no longer shows this mount; the connection ends when its last file is closed")

// pinMount opens the mount's root (O_PATH: no request, no open file for
// the daemon) and checks that it is connection conn's. While the
// descriptor is open the superblock lives, so the connection keeps its
// number: after a detach with no file open, the kernel would otherwise
// free the number at once, the next FUSE mount anywhere on the machine
// could receive it, and the abort would end that mount instead (it did,
// in CI: a bench loopback mount died at INIT with ENODEV).
func pinMount(mountpoint string, conn uint32) (int, error) {
	fd, err := unix.Open(mountpoint, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("pin: %w", err)
	}
	// DONT_SYNC: the device number needs no GETATTR.
	var st unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_DONT_SYNC, 0, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("pin: %w", err)
	}
	if st.Dev_major != 0 || st.Dev_minor != conn {
		unix.Close(fd)
		return -1, errMountGone
	}
	return fd, nil
}

// Detach unmounts dir lazily (MNT_DETACH, as fusermount3 -u -z), through
// fusermount3 when umount2 is not permitted. EINVAL means nothing is
// mounted there any more (an unmount from outside), which is fine: the
// connection may still be alive if files are open.
func Detach(dir string) error {
	err := syscall.Unmount(dir, syscall.MNT_DETACH)
	switch {
	case err == nil, errors.Is(err, syscall.EINVAL):
		return nil
	case errors.Is(err, syscall.EPERM):
		out, cerr := exec.Command("fusermount3", "-u", "-z", dir).CombinedOutput()
		if cerr != nil {
			return fmt.Errorf("fusermount3 -u -z: %w: %s", cerr, strings.TrimSpace(string(out)))
		}
		return nil
	}
	return fmt.Errorf("detach: %w", err)
}

// abortConnection writes to the connection's abort file, mounting fusectl
// first if it is not mounted.
func abortConnection(conn uint32) error {
	file := filepath.Join(fusectlDir, strconv.FormatUint(uint64(conn), 10), "abort")
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		if err := syscall.Mount("fusectl", fusectlDir, "fusectl", 0, ""); err != nil && !errors.Is(err, syscall.EBUSY) {
			return fmt.Errorf("mount fusectl on %s: %w", fusectlDir, err)
		}
	}
	return os.WriteFile(file, []byte("1"), 0)
}
