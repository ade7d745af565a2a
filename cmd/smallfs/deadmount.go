package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountinfo"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/fuse"
)

// A mount whose daemon died (kill -9, a crash, the OOM killer) stays in
// the mount table: the kernel aborted its connection when the last
// descriptor of /dev/fuse closed, and every call on it fails with
// ENOTCONN until someone detaches it. Its device is free (the flock went
// with the process) and holds what was committed.

// statfsWait bounds the statfs that tells a dead mount: a live daemon
// that is stuck would never answer it, and a mount that does not answer
// is not known to be dead.
const statfsWait = 5 * time.Second

// isDead reports whether the smallfs mount m is dead. Its control socket
// answering means a live daemon, and the mount is not touched at all;
// otherwise statfs on it must fail with ENOTCONN (or ECONNABORTED, or
// ECANCELED through io_uring),
// which the kernel says only of a connection that has been aborted. Anything else (an answer,
// another error, no answer in time) counts as alive: a live mount is
// never taken for dead.
func isDead(m mountinfo.Mount) bool {
	if c, err := net.DialTimeout("unix", control.SocketPath(control.RunDir(), m.Dev), time.Second); err == nil {
		c.Close()
		return false
	}
	return notConnected(m.Mountpoint)
}

// notConnected runs statfs on dir aside, so a stuck daemon cannot hang
// the caller (the request stays killable and ends with the process).
func notConnected(dir string) bool {
	done := make(chan error, 1)
	go func() {
		var st syscall.Statfs_t
		done <- syscall.Statfs(dir, &st)
	}()
	select {
	case err := <-done:
		// ECONNABORTED: the request was in flight when the connection
		// was aborted (the daemon was dying as it was asked).
		// ECANCELED: a mount served through io_uring whose daemon died
		// ends the requests queued on its rings so while the kernel
		// takes them down.
		return errors.Is(err, syscall.ENOTCONN) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.ECANCELED)
	case <-time.After(statfsWait):
		return false
	}
}

// clearHint is the command that detaches a dead mount on dir.
func clearHint(dir string) string { return "fusermount3 -u -z " + dir }

// clearDeadMount looks at the smallfs mount on dir before device is
// mounted there. A live one is refused (mount point busy). A dead one of
// the same storage is what a daemon that died left behind: it is
// detached lazily, as fusermount3 -u -z would, and the mount goes on;
// a dead one of another device is refused with the command that clears
// it. Stacked dead mounts are detached one by one.
func clearDeadMount(dir, dev string, log logrus.FieldLogger) error {
	for range 8 {
		m, err := mountinfo.Find(dir)
		if err != nil || m.Type != smallfsType {
			return nil
		}
		if !isDead(m) {
			return fmt.Errorf("%s: mount point busy: %s is already mounted there", dir, m.Source)
		}
		if same, err := device.SameStorage(dev, m.Source); err != nil || !same {
			return fmt.Errorf("%s: mount point holds a dead smallfs mount of %s (its daemon ended); clear it with: %s",
				dir, m.Source, clearHint(dir))
		}
		// Detach only the mount just found dead: if another was mounted
		// on top meanwhile, look again.
		if top, err := mountinfo.Find(dir); err != nil || top.Dev != m.Dev {
			continue
		}
		if err := fuse.Detach(dir); err != nil {
			return fmt.Errorf("%s: detaching the dead mount of %s: %w; clear it with: %s", dir, m.Source, err, clearHint(dir))
		}
		log.WithFields(logrus.Fields{"dead_mount": m.Dev, "source": m.Source}).Warn("detached a dead mount of this device left by a daemon that ended")
	}
	return fmt.Errorf("%s: mount point busy: smallfs mounts keep appearing there", dir)
}

// deadMountError retells a failure to reach the daemon of the mount on
// dir (absolute) when the mount is dead: the operator needs the command
// that clears it, not the socket's errno. The caller names dir.
func deadMountError(dir string, err error) error {
	if !errors.Is(err, control.ErrNoDaemon) || !notConnected(dir) {
		return err
	}
	return explain(err, "the mount is dead: its daemon ended (killed or crashed); clear it with: %s "+
		"(or mount the same device there again)", clearHint(dir))
}
