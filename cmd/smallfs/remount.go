package main

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountinfo"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
)

// remountDial bounds the connect to the daemon's control socket.
const remountDial = 10 * time.Second

// remount changes a running mount between ro and rw and its generic
// flags: `mount -o remount,ro DIR` (mount(8) calls the helper with the
// mount's own options and remount) or `smallfs mount -o remount,ro DEVICE
// DIR`. DEVICE is not used: mount(8) passes the source column, which
// fsname= may have changed.
//
// The kernel sends a FUSE daemon nothing on a remount, so before going
// read-only the daemon is asked to write back and commit everything
// (sync on the control socket): a crash after remount,ro then loses
// nothing. It is told again once the mount is read-only (remounted),
// which commits what reached it meanwhile. A daemon that opened its
// device read-only (mounted ro) has nothing to write with: remount,rw is
// refused, with the reason.
func remount(p mountopt.Args) error {
	dir, err := resolveMountpoint(p.Mountpoint)
	if err != nil {
		return err
	}
	m, err := mountinfo.Find(dir)
	if errors.Is(err, mountinfo.ErrNotMounted) {
		return fmt.Errorf("%s: nothing is mounted there to remount", dir)
	} else if err != nil {
		return err
	}
	if m.Type != "fuse."+mountopt.TypeName {
		return fmt.Errorf("%s: not a smallfs mount (type %s)", dir, m.Type)
	}
	flags := p.Config.RemountFlags(mountopt.KernelFlags(m.Options, m.SuperOptions))
	toRO := flags&syscall.MS_RDONLY != 0
	sock := control.SocketPath(control.RunDir(), m.Dev)
	st, err := control.Fetch(sock, remountDial)
	if err != nil {
		return fmt.Errorf("%s: cannot reach its daemon to remount: %w", dir, err)
	}
	if !toRO && st.ReadOnly {
		return fmt.Errorf("%s: cannot remount rw: the daemon opened %s read-only (it was mounted ro) and cannot write it; umount, then mount without ro", dir, st.Device)
	}
	if toRO {
		if err := control.Sync(sock, remountDial); err != nil {
			return fmt.Errorf("%s: not remounted ro: committing first failed: %w", dir, err)
		}
	}
	if err := syscall.Mount(m.Source, dir, m.Type, syscall.MS_REMOUNT|flags, ""); err != nil {
		return remountError(dir, toRO, err)
	}
	if err := control.Remounted(sock, toRO, remountDial); err != nil {
		return fmt.Errorf("%s: remounted, but the daemon was not told: %w", dir, err)
	}
	return nil
}

// remountError explains why mount(2) refused the remount.
func remountError(dir string, toRO bool, err error) error {
	switch {
	case errors.Is(err, syscall.EBUSY) && toRO:
		return explain(err, "%s: not remounted ro: files are open for writing", dir)
	case errors.Is(err, syscall.EPERM):
		return explain(err, "%s: remounting needs root (fusermount3 cannot remount)", dir)
	}
	return fmt.Errorf("%s: remount: %w", dir, err)
}

// handlers are the daemon's answers on its control socket.
func (m *mounted) handlers() control.Handlers {
	return control.Handlers{Stats: m.snapshot, Sync: m.syncRequest, Remounted: m.remounted, Scrub: m.scrub, Layout: m.layout}
}

// syncRequest commits everything, for a client about to remount ro.
func (m *mounted) syncRequest() error {
	start := time.Now()
	if err := m.sess.Sync(); err != nil {
		m.log.WithError(err).Error("commit asked for on the control socket failed")
		return err
	}
	m.log.WithField("took", time.Since(start).Round(time.Millisecond)).Info("committed on request (remount,ro)")
	return nil
}

// remounted hears that the kernel remounted the filesystem. Read-only, it
// stops recording access times and commits what reached the daemon
// since the sync before.
func (m *mounted) remounted(readOnly bool) error {
	m.sess.Remounted(readOnly)
	if !readOnly {
		m.log.Info("remounted read-write")
		return nil
	}
	err := m.sess.Sync()
	if err != nil {
		m.log.WithError(err).Error("remounted read-only; the commit after it failed")
		return err
	}
	m.log.WithField("opened", openedAs(m.p.Config.ReadOnly)).Info("remounted read-only; everything committed")
	return nil
}

// openedAs says how the daemon opened its device, for the log.
func openedAs(readOnly bool) string {
	if readOnly {
		return "read-only"
	}
	return "read-write"
}
