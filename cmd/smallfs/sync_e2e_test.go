package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestE2ESync: sync(1) does not reach a FUSE daemon, so work not fsynced
// waits for the periodic commit (here an hour away) and a kill -9 loses
// it. `smallfs sync MOUNTPOINT`, run as user nobody on an allow_other
// mount, and coreutils' `sync MOUNTPOINT` commit everything: files
// written and closed, and the data of a file still open, survive a
// kill -9 of the daemon right after.
func TestE2ESync(t *testing.T) {
	e := newE2E(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv missing")
	}
	// A directory user nobody can reach (the test's own may lie under
	// /root), with a copy of the binary.
	dir, err := os.MkdirTemp("/tmp", "smallfs-sync-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, img, mnt := filepath.Join(dir, "smallfs"), filepath.Join(dir, "img"), filepath.Join(dir, "mnt")
	if err := os.WriteFile(bin, readFile(t, e.bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	e.must("mkfs", "--size", "64M", img)
	for _, how := range []struct {
		name string
		cmd  []string
	}{
		{"smallfs sync as nobody", []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "sync", mnt}},
		{"sync MOUNTPOINT", []string{"sync", mnt}},
	} {
		e.must(img, mnt, "-o", "allow_other,commit_interval=1h")
		e.mounted(mnt)
		pid := e.daemonPid(mnt)
		sub := filepath.Join(mnt, how.name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			writeFile(t, filepath.Join(sub, fmt.Sprint(i)), bytes.Repeat([]byte{byte(i)}, 5000))
		}
		open, err := os.Create(filepath.Join(sub, "open"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := open.WriteString("written, not closed"); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(how.cmd[0], how.cmd[1:]...)
		cmd.Env = e.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", how.name, err, out)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitGone(t, pid)
		open.Close()
		if out, err := exec.Command("fusermount3", "-u", "-z", mnt).CombinedOutput(); err != nil {
			t.Fatalf("fusermount3 -u -z: %v\n%s", err, out)
		}
		e.must(img, mnt)
		for i := range 20 {
			if got := readFile(t, filepath.Join(sub, fmt.Sprint(i))); !bytes.Equal(got, bytes.Repeat([]byte{byte(i)}, 5000)) {
				t.Errorf("%s, kill -9: file %d holds %d bytes, want 5000", how.name, i, len(got))
			}
		}
		if got := string(readFile(t, filepath.Join(sub, "open"))); got != "written, not closed" {
			t.Errorf("%s, kill -9: the file open at the sync holds %q", how.name, got)
		}
		pid = e.daemonPid(mnt)
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Fatalf("umount: %v\n%s", err, out)
		}
		waitGone(t, pid)
	}
}
