package main

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountinfo"
)

// syncMount is `smallfs sync MOUNTPOINT`: it commits everything the daemon
// serving MOUNTPOINT holds (every dirty file written back, the log made
// durable) by opening the mount's root directory and fsyncing it, which
// the volume answers with a whole sync (fs/volume Fsync). sync(1) and
// syncfs(2) do not reach a FUSE daemon. Any user who can open the root
// directory may run it; the control socket is root's.
func (a *app) syncMount(args []string) int {
	pos, code, done := a.parseCommand(newFlags("sync"), syncHelp, args, []string{"MOUNTPOINT"}, exitUsage)
	if done {
		return code
	}
	if err := syncMountpoint(pos[0]); err != nil {
		return a.failf(exitError, "sync: %v", err)
	}
	return exitOK
}

// syncMountpoint checks in the mount table, without touching the mount,
// that dir is a smallfs mount point, then fsyncs its root directory.
func syncMountpoint(dir string) error {
	abs, err := resolveMountpoint(dir)
	if err != nil {
		return err
	}
	m, err := mountinfo.Find(abs)
	switch {
	case errors.Is(err, mountinfo.ErrNotMounted):
		return fmt.Errorf("%s: not a mount point (name the directory smallfs is mounted on)", dir)
	case err != nil:
		return err
	case m.Type != smallfsType:
		return fmt.Errorf("%s: not a smallfs mount (type %s)", dir, m.Type)
	}
	fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, syscall.ENOTCONN):
		return explain(err, "%s: the mount is dead: its daemon ended (killed or crashed); nothing to sync; clear it with: %s", dir, clearHint(abs))
	case err != nil:
		return fmt.Errorf("%s: cannot open the mount's root directory: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("%s: the commit failed (the daemon's log says why): %w", dir, err)
	}
	return nil
}
