package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountinfo"
)

// mountOptions is the per-mount option list of the mount on mnt.
func mountOptions(t *testing.T, mnt string) string {
	t.Helper()
	m, err := mountinfo.Find(mnt)
	if err != nil {
		t.Fatal(err)
	}
	return m.Options
}

// TestE2ERemount: remount,ro makes writes fail with EROFS and remount,rw
// brings them back; the generic flags the remount does not name stay.
// With commits an hour apart, a daemon killed (-9) after remount,ro has
// lost nothing: the remount committed. A daemon that opened its device
// read-only refuses remount,rw.
func TestE2ERemount(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	img, mnt := e.image()
	e.must(img, mnt, "-o", "commit_interval=1h,noexec,log_file="+e.path("log"))
	// The mount is killed below: unmount it lazily, without asking the
	// daemon, whatever happens.
	t.Cleanup(func() {
		if _, err := mountinfo.Find(mnt); err == nil {
			_ = exec.Command("fusermount3", "-u", "-z", mnt).Run()
		}
	})
	big := bytes.Repeat([]byte("remount "), 40000) // 320 KB: blocks, not inline
	if err := os.Mkdir(filepath.Join(mnt, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mnt, "dir", "big"), big)
	writeFile(t, filepath.Join(mnt, "a"), []byte("before ro\n"))

	// The kernel refuses while a file is open for writing.
	f, err := os.OpenFile(filepath.Join(mnt, "a"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	code, out := e.run(img, mnt, "-o", "remount,ro")
	f.Close()
	if code != 32 || !strings.Contains(out, "$TMP/mnt: not remounted ro: files are open for writing") {
		t.Errorf("remount,ro with a file open for writing: exit %d\n%s", code, out)
	}
	e.must(img, mnt, "-o", "remount,ro")
	if got := mountOptions(t, mnt); got != "ro,nosuid,nodev,noexec,relatime" {
		t.Errorf("after remount,ro the mount is %q", got)
	}
	if err := os.WriteFile(filepath.Join(mnt, "b"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("create after remount,ro: %v, want EROFS", err)
	}
	if got := readFile(t, filepath.Join(mnt, "dir", "big")); !bytes.Equal(got, big) {
		t.Errorf("big reads %d bytes after remount,ro", len(got))
	}

	e.must("mount", "-o", "remount,rw", img, mnt)
	if got := mountOptions(t, mnt); got != "rw,nosuid,nodev,noexec,relatime" {
		t.Errorf("after remount,rw the mount is %q", got)
	}
	writeFile(t, filepath.Join(mnt, "c"), []byte("after rw\n"))
	if err := os.Remove(filepath.Join(mnt, "a")); err != nil {
		t.Fatal(err)
	}

	e.must(img, mnt, "-o", "remount,ro")
	pid := e.daemonPid(mnt)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	if out, err := exec.Command("fusermount3", "-u", "-z", mnt).CombinedOutput(); err != nil {
		t.Fatalf("fusermount3 -u -z after the kill: %v: %s", err, out)
	}
	log := string(readFile(t, e.path("log")))
	for _, want := range []string{"committed on request (remount,ro)", "remounted read-only; everything committed", "remounted read-write"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}

	e.must(img, mnt, "-o", "log_file="+e.path("log"))
	e.mounted(mnt)
	if got := readFile(t, filepath.Join(mnt, "dir", "big")); !bytes.Equal(got, big) {
		t.Errorf("after the kill big reads %d bytes, want %d", len(got), len(big))
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "c")); err != nil || string(got) != "after rw\n" {
		t.Errorf("after the kill c reads %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after the kill the removed a: %v", err)
	}
	e.umount(mnt)

	// Mounted ro, the daemon has no writable device to go back to.
	e.must(img, mnt, "-o", "ro,log_file="+e.path("log"))
	e.mounted(mnt)
	code, out = e.run(img, mnt, "-o", "remount,rw")
	if code != 32 || !strings.Contains(out, "cannot remount rw: the daemon opened $TMP/img read-only (it was mounted ro)") {
		t.Errorf("remount,rw of a ro mount: exit %d\n%s", code, out)
	}
	if got := mountOptions(t, mnt); !strings.HasPrefix(got, "ro,") {
		t.Errorf("after the refused remount,rw the mount is %q", got)
	}
}

// TestE2ERemountHelper: mount(8) -o remount,ro and remount,rw reach the
// helper through mount.fuse3 with the kernel's own options (user_id=0,
// max_read=, ...), and work. As TestE2EMountHelper, it runs in a private
// mount namespace with the binary bind-mounted over /usr/local/bin.
func TestE2ERemountHelper(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	img, mnt := e.image()
	script := `
mount -t fuse.smallfs "$IMG" "$MNT" -o noatime,log_file="$LOG"; echo "mount: $?"
echo one > "$MNT/one"
mount -o remount,ro "$MNT" 2>&1; echo "remount,ro: $?"
grep " $MNT " /proc/self/mountinfo | cut -d' ' -f6
echo two 2>/dev/null > "$MNT/two" || echo "write refused"
mount -o remount,rw "$MNT" 2>&1; echo "remount,rw: $?"
grep " $MNT " /proc/self/mountinfo | cut -d' ' -f6
echo two > "$MNT/two" && cat "$MNT/one" "$MNT/two"
umount "$MNT"; echo "umount: $?"
`
	got := e.mountHelperScript(script, "IMG="+img, "MNT="+mnt, "LOG="+e.path("log"))
	want := "mount: 0\nremount,ro: 0\nro,noatime\nwrite refused\nremount,rw: 0\nrw,noatime\none\ntwo\numount: 0\n"
	if got != want {
		t.Errorf("mount(8) remounts:\n%s\nwant\n%s", got, want)
	}
	// fsck waits for the daemon to let go of the image.
	if out := e.must("fsck", img); !strings.HasSuffix(out, ": clean\n") {
		t.Errorf("fsck after the remounts:\n%s", out)
	}
}
