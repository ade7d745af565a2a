package main

import (
	"crypto/sha256"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountinfo"
	"github.com/smallfs/smallfs/internal/looptest"
)

// sum is the sha256 of a file's bytes.
func sum(t *testing.T, path string) [32]byte {
	t.Helper()
	return sha256.Sum256(readFile(t, path))
}

// umount unmounts mnt and waits for its daemon to end.
func (e *e2e) umount(mnt string) {
	e.t.Helper()
	pid := e.daemonPid(mnt)
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		e.t.Fatalf("umount %s: %v\n%s", mnt, err, out)
	}
	waitGone(e.t, pid)
}

// TestE2EReadOnlyWritesNothing: a ro mount leaves every byte of its image
// as it was, also when the log needs a replay (the unclean fixture), and
// fsck runs beside it while a read-write mount is refused.
func TestE2EReadOnlyWritesNothing(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	img := fixture(t, e.dir, "unclean")
	mnt := e.path("mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	before := sum(t, img)
	e.must(img, mnt, "-o", "ro,log_file="+e.path("log"))
	e.mounted(mnt)
	if got := string(readFile(t, filepath.Join(mnt, "after-crash"))); got != "in the log only\n" {
		t.Errorf("the replayed file reads %q", got)
	}
	if got := readFile(t, filepath.Join(mnt, "big")); len(got) != 3*4096 {
		t.Errorf("big has %d bytes, want %d", len(got), 3*4096)
	}
	if _, err := os.ReadDir(filepath.Join(mnt, "dir")); err != nil {
		t.Error(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "new"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("create on a ro mount: %v, want EROFS", err)
	}
	if sum(t, img) != before {
		t.Error("the image changed while mounted ro")
	}
	// fsck shares the ro mount's lock; a read-write mount does not.
	if code, out := e.run("fsck", img); code != 0 || strings.Contains(out, "in use") {
		t.Errorf("fsck beside a ro mount: exit %d\n%s", code, out)
	}
	// info reads it all beside a ro mount, which changes nothing under it.
	if out := e.must("info", img); !strings.Contains(out, "files ") || strings.Contains(out, "in use") {
		t.Errorf("info beside a ro mount:\n%s", out)
	}
	if out := e.must("stats", mnt); !strings.Contains(out, "device opened read-only, never written; remount,rw refused") {
		t.Errorf("stats of a ro mount:\n%s", out)
	}
	if err := os.Mkdir(e.path("mnt2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out := e.run(img, e.path("mnt2"), "-o", "log_file="+e.path("log")); code != 32 || !strings.Contains(out, "device is mounted on $TMP/mnt") {
		t.Errorf("rw mount beside a ro mount: exit %d\n%s", code, out)
	}
	e.umount(mnt)
	if sum(t, img) != before {
		t.Error("the image changed by a ro mount and umount")
	}
	log := string(readFile(t, e.path("log")))
	for _, want := range []string{"read-only: the device is opened read-only and never written", "unmounted; read-only: the device was not written"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	// The replay stayed in memory: the next mount replays it again.
	e.must(img, mnt, "-o", "log_file="+e.path("log"))
	e.mounted(mnt)
	if got := string(readFile(t, filepath.Join(mnt, "after-crash"))); got != "in the log only\n" {
		t.Errorf("after the ro mount, the rw mount reads %q", got)
	}
}

// TestE2EReadOnlyImage: an image without write permission mounts ro,
// unchanged; a read-write mount, mkfs and fsck --repair are refused with
// the reason.
func TestE2EReadOnlyImage(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	img, mnt := e.image()
	e.must(img, mnt, "-o", "log_file="+e.path("log"))
	e.mounted(mnt)
	writeFile(t, filepath.Join(mnt, "f"), []byte("kept\n"))
	e.umount(mnt)
	if err := os.Chmod(img, 0o444); err != nil {
		t.Fatal(err)
	}
	before := sum(t, img)
	e.mounted(mnt) // should a refused mount have mounted after all
	for _, args := range [][]string{
		{img, mnt, "-o", "log_file=" + e.path("log")},
		{"mount", img, mnt},
		{"mkfs", "--force", img},
		{"fsck", "--repair", img},
	} {
		code, out := e.run(args...)
		if code == 0 || !strings.Contains(out, "$TMP/img: read-only device (image file mode 0444 has no write permission): only a read-only mount (-o ro), fsck and info can use it") {
			t.Errorf("smallfs %q on a 0444 image: exit %d\n%s", args, code, out)
		}
	}
	if _, err := mountinfo.Find(mnt); err == nil {
		t.Fatal("a refused mount left a mount behind")
	}
	e.must(img, mnt, "-o", "ro,log_file="+e.path("log"))
	if got := string(readFile(t, filepath.Join(mnt, "f"))); got != "kept\n" {
		t.Errorf("f = %q", got)
	}
	e.must("fsck", img)
	e.must("info", img)
	e.umount(mnt)
	if sum(t, img) != before {
		t.Error("the 0444 image changed")
	}
}

// readOnlyLoop attaches img to a read-only loop device and returns it,
// detached when the test ends; it skips where loop devices do not work
// (looptest) or the kernel does not hold this one read-only.
func readOnlyLoop(t *testing.T, img string) string {
	t.Helper()
	dev := looptest.Attach(t, img, "--read-only")
	if ro, err := blockDeviceReadOnly(dev); err != nil || !ro {
		t.Skipf("loop device %s: BLKROGET %v, %v: not read-only here", dev, ro, err)
	}
	return dev
}

// TestE2EReadOnlyLoopDevice: a block device the kernel holds read-only
// mounts ro and refuses rw with the reason.
func TestE2EReadOnlyLoopDevice(t *testing.T) {
	e := newE2E(t)
	img, mnt := e.image()
	before := sum(t, img)
	dev := readOnlyLoop(t, img)
	code, out := e.run(dev, mnt, "-o", "log_file="+e.path("log"))
	if code != 32 || !strings.Contains(out, dev+": read-only device (the kernel holds the block device read-only (BLKROGET)): only a read-only mount") {
		t.Errorf("rw mount of a read-only loop device: exit %d\n%s", code, out)
	}
	e.must(dev, mnt, "-o", "ro,log_file="+e.path("log"))
	e.mounted(mnt)
	if _, err := os.ReadDir(mnt); err != nil {
		t.Error(err)
	}
	e.must("fsck", dev)
	e.umount(mnt)
	if sum(t, img) != before {
		t.Error("the image behind the read-only loop device changed")
	}
}
