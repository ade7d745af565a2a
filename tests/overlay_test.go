package tests

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOverlayUpper mounts overlayfs with its upper and work directories
// on smallfs and a lower directory elsewhere, and checks what overlayfs
// asks of its upper layer: RENAME_WHITEOUT (probed at mount: without it
// the mount fails, "upper fs does not support RENAME_WHITEOUT"),
// trusted.overlay.* xattrs, whiteouts (character devices 0/0) and
// copy-up. It creates a file, modifies a lower one (copied up), deletes
// one (a whiteout), renames one and a lower directory (redirect_dir=on:
// a trusted.overlay.redirect xattr), then mounts the overlay again over
// a remounted smallfs and finds the same view.
func TestOverlayUpper(t *testing.T) {
	m := newMount(t)
	lower := t.TempDir()
	writeFile(t, filepath.Join(lower, "modify"), []byte("lower\n"))
	writeFile(t, filepath.Join(lower, "delete"), []byte("gone\n"))
	writeFile(t, filepath.Join(lower, "rename"), []byte("moved\n"))
	must(t, os.Mkdir(filepath.Join(lower, "dir"), 0o755))
	writeFile(t, filepath.Join(lower, "dir", "inner"), []byte("inner\n"))
	must(t, os.Mkdir(m.path("upper"), 0o755))
	must(t, os.Mkdir(m.path("work"), 0o755))
	merged := filepath.Join(t.TempDir(), "merged")
	must(t, os.Mkdir(merged, 0o755))
	mountOverlay := func() {
		t.Helper()
		opts := "lowerdir=" + lower + ",upperdir=" + m.path("upper") + ",workdir=" + m.path("work") + ",redirect_dir=on"
		if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
			if errors.Is(err, syscall.ENODEV) {
				t.Skip("no overlay filesystem in this kernel")
			}
			t.Fatalf("mount -t overlay with a smallfs upper directory: %v (the kernel log says why)", err)
		}
	}
	unmountOverlay := func() {
		t.Helper()
		if err := unix.Unmount(merged, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
			t.Errorf("umount overlay: %v", err)
			unix.Unmount(merged, unix.MNT_DETACH)
		}
	}
	mountOverlay()
	t.Cleanup(func() { unix.Unmount(merged, unix.MNT_DETACH) }) // before smallfs's own cleanup
	in := func(name ...string) string { return filepath.Join(append([]string{merged}, name...)...) }

	writeFile(t, in("new"), []byte("new\n"))
	f, err := os.OpenFile(in("modify"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("upper\n")
	must(t, err)
	must(t, f.Close())
	must(t, os.Remove(in("delete")))
	must(t, os.Rename(in("rename"), in("renamed")))
	must(t, os.Rename(in("dir"), in("dir2")))
	must(t, os.Mkdir(in("made"), 0o755))

	want := map[string]string{
		"new": "new\n", "modify": "lower\nupper\n", "renamed": "moved\n", "dir2/inner": "inner\n",
	}
	check := func(when string) {
		t.Helper()
		if got, want := names(t, merged), []string{"dir2", "made", "modify", "new", "renamed"}; !slices.Equal(got, want) {
			t.Errorf("%s: the overlay lists %q, want %q", when, got, want)
		}
		for name, content := range want {
			wantContent(t, in(name), []byte(content))
		}
		wantContent(t, filepath.Join(lower, "modify"), []byte("lower\n")) // copied up, not changed below
		for _, name := range []string{"delete", "rename"} {
			st := lstat(t, m.path("upper", name))
			if st.Mode != syscall.S_IFCHR || st.Rdev != 0 {
				t.Errorf("%s: upper/%s has mode %#o rdev %d, want a whiteout (character device 0/0)", when, name, st.Mode, st.Rdev)
			}
		}
	}
	check("mounted")
	for path, name := range map[string]string{"upper": "trusted.overlay.uuid", "upper/dir2": "trusted.overlay.redirect"} {
		if _, err := unix.Lgetxattr(m.path(path), name, nil); err != nil {
			t.Errorf("%s: %s: %v", path, name, err)
		}
	}

	unmountOverlay()
	m.remount()
	mountOverlay()
	check("mounted again over a remounted smallfs")
	unmountOverlay()
}
