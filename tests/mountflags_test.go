package tests

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestMountFlags: generic mount flags are in force from the moment the
// mount appears (no remount): the kernel lists them for the mount and
// the superblock, and honours noexec.
func TestMountFlags(t *testing.T) {
	m := newMount(t, func(c *config) {
		c.mount.MountFlags = syscall.MS_NOEXEC | syscall.MS_NOATIME | syscall.MS_DIRSYNC
	})
	perMount, super := mountOptions(t, m.Dir)
	for _, want := range []string{"rw", "nosuid", "nodev", "noexec", "noatime"} {
		if !slices.Contains(perMount, want) {
			t.Errorf("mount options %q lack %s", perMount, want)
		}
	}
	if !slices.Contains(super, "dirsync") {
		t.Errorf("superblock options %q lack dirsync", super)
	}
	script := m.path("script")
	must(t, os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755))
	if code, out := runFromMount(t, script); code != 126 || !strings.Contains(out, "ermission denied") {
		t.Errorf("running a program on a noexec mount: exit %d %q, want permission denied (exit 126)", code, out)
	}

	suid := newMount(t, func(c *config) { c.mount.Suid, c.mount.Dev = true, true })
	perMount, _ = mountOptions(t, suid.Dir)
	if slices.Contains(perMount, "nosuid") || slices.Contains(perMount, "nodev") {
		t.Errorf("mount with Suid and Dev: options %q", perMount)
	}
}

// mountOptions returns the per-mount and superblock options the kernel
// lists for the mount on dir (proc(5), /proc/self/mountinfo).
func mountOptions(t *testing.T, dir string) (perMount, super []string) {
	t.Helper()
	perMount, super = mountOptionsOrNil(dir)
	if perMount == nil {
		t.Fatalf("%s is not in /proc/self/mountinfo", dir)
	}
	return perMount, super
}

// mountOptionsOrNil is mountOptions, nil when nothing is mounted on dir.
func mountOptionsOrNil(dir string) (perMount, super []string) {
	info, _ := os.ReadFile("/proc/self/mountinfo")
	dir = filepath.Clean(dir)
	for _, line := range strings.Split(string(info), "\n") {
		before, after, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(before), strings.Fields(after)
		if ok && len(f) >= 6 && f[4] == dir && len(g) >= 3 {
			perMount, super = strings.Split(f[5], ","), strings.Split(g[2], ",")
		}
	}
	return perMount, super
}

// runFromMount executes the program at path, which lives on a mount this
// test process serves, and returns its exit code and output. It goes
// through sh: an execve from this process would wait, vfork-suspended, for
// an OPEN that this same process serves, and a garbage collection starting
// meanwhile could never stop that thread (a deadlock seen under -race).
func runFromMount(t testing.TB, path string) (int, string) {
	t.Helper()
	out, err := exec.Command("/bin/sh", "-c", `exec "$0"`, path).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	}
	t.Fatalf("running %s: %v", path, err)
	return -1, ""
}
