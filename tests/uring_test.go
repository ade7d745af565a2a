package tests

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
	sfuse "github.com/smallfs/smallfs/fs/fuse"
	"github.com/smallfs/smallfs/fs/fuse/uring"
	"github.com/smallfs/smallfs/fs/volume"
)

// ringsParam is the fuse module's enable_uring, which the whole machine
// shares.
const ringsParam = "/sys/module/fuse/parameters/enable_uring"

// ringsUsers counts the tests that need enable_uring on: the first turns
// it on, the last puts back what it was, so tests that run in parallel do
// not turn it off under each other.
var ringsUsers struct {
	sync.Mutex
	n   int
	old string
}

// enableRings turns the fuse module's enable_uring on for the test and,
// once no test needs it any more, back to what it was; it skips the test
// on a kernel without FUSE over io_uring (before Linux 6.14, or built
// without it).
func enableRings(t *testing.T) {
	t.Helper()
	ringsUsers.Lock()
	defer ringsUsers.Unlock()
	if ringsUsers.n == 0 {
		old, err := os.ReadFile(ringsParam)
		if err != nil {
			t.Skipf("no FUSE over io_uring in this kernel: %v", err)
		}
		if err := os.WriteFile(ringsParam, []byte("Y"), 0); err != nil {
			t.Fatalf("set %s to Y: %v", ringsParam, err)
		}
		ringsUsers.old = strings.TrimSpace(string(old))
	}
	ringsUsers.n++
	t.Cleanup(func() {
		ringsUsers.Lock()
		defer ringsUsers.Unlock()
		if ringsUsers.n--; ringsUsers.n == 0 {
			if err := os.WriteFile(ringsParam, []byte(ringsUsers.old), 0); err != nil {
				t.Errorf("restore %s: %v", ringsParam, err)
			}
		}
	})
}

// disableRings turns enable_uring off for the test and back to what it
// was after. A test that calls it must not run in parallel (t.Parallel):
// the tests that need the rings would find them off.
func disableRings(t *testing.T) {
	t.Helper()
	old, err := os.ReadFile(ringsParam)
	if err != nil {
		t.Skipf("no FUSE over io_uring in this kernel: %v", err)
	}
	if err := os.WriteFile(ringsParam, []byte("N"), 0); err != nil {
		t.Fatalf("set %s to N: %v", ringsParam, err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(ringsParam, []byte(strings.TrimSpace(string(old))), 0); err != nil {
			t.Errorf("restore %s: %v", ringsParam, err)
		}
	})
}

func withRings(c *config) { c.mount.Uring = sfuse.UringOn }

// TestRings runs a file's life through a mount served by io_uring and
// checks that the rings, not /dev/fuse, answered.
func TestRings(t *testing.T) {
	enableRings(t)
	m := newMount(t, withRings)
	before, ok := m.srv.Rings()
	if !ok {
		t.Fatal("uring=on with enable_uring on: the mount did not start its rings")
	}
	scenarioFileLife(t, m)
	after, _ := m.srv.Rings()
	if after.Requests <= before.Requests {
		t.Errorf("rings answered %d requests before and %d after the scenario", before.Requests, after.Requests)
	}
	if after.Async == 0 {
		t.Errorf("no request was answered off a queue's goroutine; the scenario's fsync should be")
	}
	if why := m.srv.TransportWhy(); !strings.Contains(why, "io_uring") {
		t.Errorf("TransportWhy on rings = %q, want it to name io_uring", why)
	}
	m.remount()
	if _, ok := m.srv.Rings(); !ok {
		t.Fatal("the remount did not start its rings")
	}
	wantContent(t, m.path("big"), pattern(7, 3<<20))
}

// TestRingsUnavailable: with the kernel's io_uring off, uring=on refuses
// to mount with an error that says how to turn it on, and leaves nothing
// mounted; auto mounts on /dev/fuse.
func TestRingsUnavailable(t *testing.T) {
	disableRings(t)
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "image"), filepath.Join(dir, "mnt")
	makeImage(t, img, defaultImageSize)
	must(t, os.Mkdir(mnt, 0o755))
	dev, err := device.Open(img, device.Options{})
	must(t, err)
	defer dev.Close()
	vol, err := volume.Open(dev, volume.Options{TrackLookups: true})
	must(t, err)
	defer vol.Close()
	srv, err := sfuse.Mount(mnt, vol, dev, sfuse.Options{Uring: sfuse.UringOn, Accounting: accounting.NewRegistry()})
	if err == nil {
		unmountServer(t, srv, mnt, 0)
		t.Fatal("uring=on mounted with enable_uring off")
	}
	if !errors.Is(err, uring.ErrUnavailable) || !strings.Contains(err.Error(), "enable_uring") {
		t.Errorf("uring=on with enable_uring off: %v; want ErrUnavailable naming the parameter", err)
	}
	if perMount, _ := mountOptionsOrNil(mnt); perMount != nil {
		t.Errorf("a failed mount left %s mounted", mnt)
	}
	m := newMount(t, func(c *config) { c.mount.Uring = sfuse.UringAuto })
	if _, ok := m.srv.Rings(); ok {
		t.Error("uring=auto started rings with enable_uring off")
	}
	if why := m.srv.TransportWhy(); !strings.Contains(why, "enable_uring is N") {
		t.Errorf("TransportWhy with enable_uring off = %q, want it to say so", why)
	}
	off := newMount(t)
	if why := off.srv.TransportWhy(); !strings.Contains(why, "uring=off") {
		t.Errorf("TransportWhy with Uring off = %q, want it to name uring=off", why)
	}
	writeFile(t, m.path("f"), []byte("on /dev/fuse"))
	wantContent(t, m.path("f"), []byte("on /dev/fuse"))
}

// scenarioFileLife walks files through most requests: create, large and
// small writes, fsync, reads, xattrs, links, renames, listings, removal,
// from two goroutines at once (the kernel queues by CPU).
func scenarioFileLife(t *testing.T, m *fsMount) {
	big := pattern(7, 3<<20) // several full-size WRITE and READ requests
	parallel(t, 2, 40, func(i int) error {
		dir := m.path(fmt.Sprintf("d%d", i%4))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		name := filepath.Join(dir, fmt.Sprintf("f%d", i))
		data := big[:4096+i*977]
		f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := syscall.Setxattr(name, "user.n", []byte(name), 0); err != nil {
			return err
		}
		v := make([]byte, 256)
		if n, err := syscall.Getxattr(name, "user.n", v); err != nil || string(v[:n]) != name {
			return fmt.Errorf("getxattr %s: %q, %v", name, v[:max(n, 0)], err)
		}
		if err := os.Chmod(name, 0o600); err != nil {
			return err
		}
		moved := name + ".moved"
		if err := os.Rename(name, moved); err != nil {
			return err
		}
		got, err := os.ReadFile(moved)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, data) {
			return fmt.Errorf("%s: read back %d bytes that differ from the %d written", moved, len(got), len(data))
		}
		if i%2 == 0 {
			return os.Remove(moved)
		}
		return os.Link(moved, name+".link")
	})
	writeFile(t, m.path("big"), big)
	wantContent(t, m.path("big"), big)
	must(t, os.Symlink("big", m.path("sym")))
	if target, err := os.Readlink(m.path("sym")); err != nil || target != "big" {
		t.Errorf("readlink: %q, %v", target, err)
	}
	entries := 0
	for d := 0; d < 4; d++ {
		entries += len(names(t, m.path(fmt.Sprintf("d%d", d))))
	}
	if entries != 40 { // 20 files removed, 20 kept with a link each
		t.Errorf("the directories list %d entries, want 40", entries)
	}
	must(t, os.RemoveAll(m.path("d0")))
	must(t, os.Remove(m.path("sym")))
}
