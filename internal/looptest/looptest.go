// Package looptest attaches loop devices for tests, where the machine
// lets it: many do not (no loop module, no /dev/loop-control, a container
// without the devices, no root), so a test that needs one skips instead
// of failing.
//
// Where systemd-udevd runs, it takes a shared flock of a block device
// for a moment after each change (and closing a descriptor opened for
// writing is one): a test that expects to lock a loop device exclusively
// retries while ErrLocked comes from nobody it knows.
//
// The probe is the attach itself: `losetup -f --show FILE`. Setting
// SMALLFS_TEST_LOSETUP to another command (false, a missing path) makes
// it fail, so the skipping branch can be run on a machine where loop
// devices work.
package looptest

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// EnvLosetup names the losetup command the probe runs; default losetup.
const EnvLosetup = "SMALLFS_TEST_LOSETUP"

// Attach binds a free loop device to file and returns its path; it is
// detached when the test ends (after cleanups registered later, such as
// unmounting what sits on it). Where that fails, the test is skipped
// with the reason. flags go to losetup first (--read-only, say).
func Attach(t testing.TB, file string, flags ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loop devices need root")
	}
	losetup := "losetup"
	if cmd := os.Getenv(EnvLosetup); cmd != "" {
		losetup = cmd
	}
	out, err := exec.Command(losetup, append(flags, "-f", "--show", file)...).CombinedOutput()
	dev := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(dev, "/dev/") {
		t.Skipf("no loop device here: %s -f --show: %v %s", losetup, err, dev)
	}
	// udev answers the new device (blkid, under a shared flock of the
	// device): let it finish before the test opens the device for writing.
	if udevadm, err := exec.LookPath("udevadm"); err == nil {
		_ = exec.Command(udevadm, "settle", "--timeout=10").Run()
	}
	detach := func() error {
		if out, err := exec.Command(losetup, "-d", dev).CombinedOutput(); err != nil {
			return fmt.Errorf("detach %s: %v %s", dev, err, out)
		}
		return nil
	}
	// A container may attach a loop device that has no node in its /dev.
	if f, err := os.Open(dev); err != nil { // read-only: closing a writer would wake udev
		_ = detach()
		t.Skipf("loop device %s attached but not usable here: %v", dev, err)
	} else {
		f.Close()
	}
	t.Cleanup(func() {
		if err := detach(); err != nil {
			t.Error(err)
		}
	})
	return dev
}
