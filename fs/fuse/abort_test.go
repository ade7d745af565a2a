package fuse

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// mountLoopback mounts go-fuse's passthrough filesystem of a fresh
// directory on another and returns the mountpoint, its server and its
// connection number. The mount is gone when the test ends.
func mountLoopback(t *testing.T) (string, *fuse.Server, uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	root, err := gofs.NewLoopbackRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	srv, err := gofs.Mount(mnt, root, &gofs.Options{MountOptions: fuse.MountOptions{DirectMount: true}})
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		_ = srv.Unmount()
		_ = syscall.Unmount(mnt, syscall.MNT_DETACH)
	})
	var st syscall.Stat_t
	if err := syscall.Stat(mnt, &st); err != nil {
		t.Fatal(err)
	}
	return mnt, srv, unix.Minor(st.Dev)
}

// TestPinMountKeepsConnectionNumber: while Abort's pin is open, a
// detached mount keeps its connection number, so a mount made meanwhile
// gets another one and the abort ends the right connection; a pin asked
// for another connection's number is refused.
func TestPinMountKeepsConnectionNumber(t *testing.T) {
	mntA, srvA, connA := mountLoopback(t)
	if _, err := pinMount(mntA, connA+1); !errors.Is(err, errMountGone) {
		t.Errorf("pin with a wrong connection number: %v, want errMountGone", err)
	}
	pin, err := pinMount(mntA, connA)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pin)
	if err := Detach(mntA); err != nil {
		t.Fatal(err)
	}
	// Without the pin no file holds A: its number would now be free.
	mntB, _, connB := mountLoopback(t)
	if connB == connA {
		t.Fatalf("a mount made after the detach got the pinned connection number %d", connA)
	}
	if err := abortConnection(connA); err != nil {
		t.Fatal(err)
	}
	srvA.Wait()
	if err := os.WriteFile(filepath.Join(mntB, "alive"), []byte(strconv.Itoa(int(connB))), 0o644); err != nil {
		t.Errorf("the other mount after the abort: %v", err)
	}
}
