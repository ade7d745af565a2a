package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// EnvUserTest names a user (nobody, say) to run TestE2EUserMount as; it
// is off by default: it needs such a user, and fusermount3 set-user-ID.
const EnvUserTest = "SMALLFS_TEST_USER"

// TestE2EUserMount: a user makes, mounts, writes in and unmounts their own
// image, with a home that does not exist (the log falls back to TMPDIR),
// through fusermount3. Where /dev/fuse is closed to users (0600), the
// mount fails saying so. Opt-in: SMALLFS_TEST_USER=nobody.
func TestE2EUserMount(t *testing.T) {
	t.Parallel()
	name := os.Getenv(EnvUserTest)
	if name == "" {
		t.Skip("runs as another user: set " + EnvUserTest + "=nobody (and chmod 0666 /dev/fuse) to run it")
	}
	e := newE2E(t)
	out, err := exec.Command("id", "-u", name).Output()
	if err != nil {
		t.Skipf("no user %s: %v", name, err)
	}
	uid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	out, _ = exec.Command("id", "-g", name).Output()
	gid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv missing")
	}
	fi, err := os.Stat("/dev/fuse")
	if err != nil {
		t.Skip(err)
	}
	fuseOpen := fi.Mode().Perm()&0o006 == 0o006
	fuseOwner := fi.Sys().(*syscall.Stat_t)
	// A directory the user can reach: the test's own may lie under a
	// private one (/root).
	dir, err := os.MkdirTemp("/tmp", "smallfs-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin, mnt, img := filepath.Join(dir, "smallfs"), filepath.Join(dir, "mnt"), filepath.Join(dir, "img")
	tmp := filepath.Join(dir, "tmp")
	for _, d := range []string{mnt, tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(bin, readFile(t, e.bin), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, mnt, tmp} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("fusermount3", "-u", "-z", mnt).CombinedOutput(); err == nil {
			t.Logf("left mounted, unmounted: %s", out)
		}
	})
	script := `
set -u
cd "$DIR"
./smallfs mkfs --size 64M img >/dev/null; echo "mkfs: $?"
./smallfs img mnt; echo "mount: $?"
echo hello > mnt/hello && cat mnt/hello
mkdir mnt/dir; echo "mkdir: $?"
fusermount3 -u mnt; echo "umount: $?"
`
	want := "mkfs: 0\nmount: 0\nhello\nmkdir: 0\numount: 0\n"
	if !fuseOpen {
		// /dev/fuse closed to users: the mount says so and what to do.
		script = `
cd "$DIR"
./smallfs mkfs --size 64M img >/dev/null; echo "mkfs: $?"
./smallfs img mnt 2>&1; echo "mount: $?"
`
		want = "mkfs: 0\nsmallfs: " + mnt + ": /dev/fuse is mode " + "0" + strconv.FormatUint(uint64(fi.Mode().Perm()), 8) +
			", owner uid " + strconv.Itoa(int(fuseOwner.Uid)) + " gid " + strconv.Itoa(int(fuseOwner.Gid)) + ", so this user (uid " + strconv.Itoa(uid) + ") cannot open it and fusermount3 cannot mount: " +
			"as root, chmod 0666 /dev/fuse (its usual mode, which lets users mount through fusermount3), or mount as root\nmount: 32\n"
	}
	cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(gid), "--clear-groups",
		"env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/nonexistent", "TMPDIR="+tmp, "DIR="+dir, "sh", "-c", script)
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	if string(got) != want {
		t.Errorf("as %s:\n%s\nwant\n%s", name, got, want)
	}
	log := filepath.Join(tmp, "smallfs-"+strconv.Itoa(uid), "smallfs.log")
	if _, err := os.Stat(log); err != nil {
		t.Errorf("no log in the fallback directory: %v", err)
	}
	// fsck waits for the daemon to let go of the image.
	if out := e.must("fsck", img); !strings.HasSuffix(out, ": clean\n") {
		t.Errorf("fsck after the user's umount:\n%s", out)
	}
}
