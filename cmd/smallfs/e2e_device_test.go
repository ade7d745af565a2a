package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountinfo"
	"github.com/smallfs/smallfs/internal/looptest"
)

// unmountAll registers a cleanup that takes every mount off mnt, live or
// dead, even when the test failed midway: umount where a daemon answers
// (then waits for it to end), fusermount3 -u -z otherwise.
func (e *e2e) unmountAll(mnt string) {
	e.t.Cleanup(func() {
		for range 8 {
			if _, err := mountinfo.Find(mnt); err != nil {
				return
			}
			pid := 0
			if code, _ := e.run("stats", mnt); code == 0 {
				pid = e.daemonPid(mnt)
			}
			if pid == 0 || exec.Command("umount", mnt).Run() != nil {
				_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
			}
			if pid != 0 {
				waitGone(e.t, pid)
			}
		}
		e.t.Errorf("%s: still mounted after cleanup", mnt)
	})
}

// waitThreadsGone waits until every thread of process pid has exited,
// and with the last one its descriptors are closed (the FUSE connection
// aborted, the control socket gone). waitGone is not enough here: the
// leader of a killed process is a zombie while its other threads are
// still exiting.
func waitThreadsGone(t *testing.T, pid int) {
	t.Helper()
	task := "/proc/" + strconv.Itoa(pid) + "/task"
	gone := func() bool {
		threads, err := os.ReadDir(task)
		if err != nil || len(threads) == 0 {
			return true
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		i := bytes.LastIndexByte(stat, ')')
		return err != nil || len(threads) == 1 && i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
	}
	for i := 0; !gone(); i++ {
		if i == 3000 { // 30 s: far beyond an exit, even on a loaded machine
			t.Fatalf("killed daemon %d still has threads", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// smallfsMounts counts the smallfs mounts on mnt.
func smallfsMounts(t *testing.T, mnt string) int {
	t.Helper()
	all, err := mountinfo.All()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range all {
		if m.Mountpoint == mnt && m.Type == smallfsType {
			n++
		}
	}
	return n
}

// refused runs the command and checks that it fails with code and says
// every one of want.
func (e *e2e) refused(code int, want []string, args ...string) {
	e.t.Helper()
	got, out := e.run(args...)
	if got != code {
		e.t.Errorf("smallfs %s: exit %d, want %d\n%s", strings.Join(args, " "), got, code, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			e.t.Errorf("smallfs %s: output lacks %q:\n%s", strings.Join(args, " "), w, out)
		}
	}
}

// TestE2EDeadMountRemount: after the daemon is killed, stats says how to
// clear the dead mount, a mount of another device there is refused with
// that command, and mounting the same device there again detaches the
// dead mount and brings back what was committed. A live mount is never
// taken for dead.
func TestE2EDeadMountRemount(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	img, mnt := e.image()
	e.must("mkfs", "--size", "64M", e.path("other.img"))
	e.unmountAll(mnt)
	e.must(img, mnt)
	committed := []byte("committed before the kill\n")
	f, err := os.Create(filepath.Join(mnt, "committed"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(committed); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	pid := e.daemonPid(mnt)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitThreadsGone(t, pid)
	var st syscall.Statfs_t
	// ECANCELED: served through io_uring (another test may have turned
	// the fuse module's enable_uring on), whose rings end the requests
	// queued on them while the kernel takes them down.
	if err := syscall.Statfs(mnt, &st); !errors.Is(err, syscall.ENOTCONN) && !errors.Is(err, syscall.ECONNABORTED) && !errors.Is(err, syscall.ECANCELED) {
		t.Fatalf("statfs on the mount of a killed daemon: %v, want ENOTCONN", err)
	}

	hint := "fusermount3 -u -z $TMP/mnt"
	e.refused(1, []string{"the mount is dead", hint}, "stats", mnt)
	e.refused(32, []string{"dead smallfs mount of $TMP/img", hint}, e.path("other.img"), mnt)
	if n := smallfsMounts(t, mnt); n != 1 {
		t.Fatalf("after the refused mount: %d smallfs mounts on %s, want the dead one", n, mnt)
	}

	e.must(img, mnt)
	if n := smallfsMounts(t, mnt); n != 1 {
		t.Errorf("after mounting again: %d smallfs mounts on %s, want 1", n, mnt)
	}
	if got := readFile(t, filepath.Join(mnt, "committed")); !bytes.Equal(got, committed) {
		t.Errorf("committed file holds %q after the remount", got)
	}

	// Live: refused, and the mount still serves.
	e.refused(32, []string{"mount point busy: $TMP/img is already mounted there"}, img, mnt)
	if got := readFile(t, filepath.Join(mnt, "committed")); !bytes.Equal(got, committed) {
		t.Errorf("live mount after a refused mount over it: %q", got)
	}
	if code, out := e.run("stats", mnt); code != 0 {
		t.Errorf("stats on the live mount: exit %d\n%s", code, out)
	}
}

// TestE2EOneDeviceManyNames: a mounted image is refused under every other
// name that reaches it (a hard link, a loop device over it), and a
// mounted loop device refuses its backing file.
func TestE2EOneDeviceManyNames(t *testing.T) {
	e := newE2E(t)
	img, mnt := e.image()
	link := e.path("link.img")
	if err := os.Link(img, link); err != nil {
		t.Fatal(err)
	}
	loop := looptest.Attach(t, img)
	mnt2 := e.path("mnt2")
	if err := os.Mkdir(mnt2, 0o755); err != nil {
		t.Fatal(err)
	}
	e.unmountAll(mnt)
	e.unmountAll(mnt2) // should a refused mount get through

	e.must(img, mnt)
	mounted := []string{"device is mounted on $TMP/mnt"}
	e.refused(32, mounted, loop, mnt2)
	e.refused(32, mounted, link, mnt2)
	e.refused(1, mounted, "mkfs", "--force", loop)
	e.refused(8, mounted, "fsck", loop)
	pid := e.daemonPid(mnt)
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v\n%s", err, out)
	}
	waitGone(t, pid)

	e.must(loop, mnt)
	e.refused(32, mounted, img, mnt2)
	e.refused(32, mounted, loop, mnt2)
	e.refused(1, mounted, "mkfs", "--force", img)
	e.refused(8, mounted, "fsck", link)
	if n := smallfsMounts(t, mnt2); n != 0 {
		t.Errorf("%d smallfs mounts on %s, want none", n, mnt2)
	}
}

// TestE2EKernelMountedRefused: a device the kernel has mounted (ext4 on a
// loop device) is neither formatted nor mounted, under the loop device's
// name or its backing file's.
func TestE2EKernelMountedRefused(t *testing.T) {
	e := newE2E(t)
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("mkfs.ext4 missing")
	}
	img, mnt := e.path("ext4.img"), e.path("mnt")
	writeFile(t, img, make([]byte, 16<<20))
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	loop := looptest.Attach(t, img)
	if out, err := exec.Command(mkfs, "-q", "-F", loop).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4 %s: %v %s", loop, err, out)
	}
	kmnt := e.path("ext4")
	if err := os.Mkdir(kmnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(loop, kmnt, "ext4", 0, ""); err != nil {
		t.Skipf("mount ext4 %s: %v", loop, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(kmnt, 0); err != nil {
			if derr := syscall.Unmount(kmnt, syscall.MNT_DETACH); derr != nil {
				t.Errorf("umount %s: %v; detach: %v", kmnt, err, derr)
			}
		}
	})
	e.unmountAll(mnt) // should a refused mount get through

	mounted := []string{"device is mounted on $TMP/ext4 (ext4)"}
	e.refused(1, mounted, "mkfs", "--force", loop)
	e.refused(1, mounted, "mkfs", "--force", img)
	e.refused(32, mounted, loop, mnt)
	e.refused(32, mounted, img, mnt)
	raw := readFile(t, img)
	if magic := binary.LittleEndian.Uint16(raw[1024+56:]); magic != 0xef53 {
		t.Errorf("the ext4 superblock was overwritten (magic %#x)", magic)
	}
}
