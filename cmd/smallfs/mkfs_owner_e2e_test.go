package main

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestE2EMkfsRootOwner: the root directory belongs to whoever runs mkfs
// (root here), or to --root-owner.
func TestE2EMkfsRootOwner(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	mnt := e.path("mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     []string
		uid, gid uint32
	}{
		{nil, uint32(os.Getuid()), uint32(os.Getgid())},
		{[]string{"--root-owner", "1234:5678"}, 1234, 5678},
	} {
		img := e.path("img")
		e.must(append(append([]string{"mkfs", "--force", "--size", "64M"}, tc.args...), img)...)
		e.must(img, mnt, "-o", "log_file="+e.path("log"))
		e.mounted(mnt)
		var st syscall.Stat_t
		if err := syscall.Stat(mnt, &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != tc.uid || st.Gid != tc.gid {
			t.Errorf("mkfs %q: root directory owned by %d:%d, want %d:%d", tc.args, st.Uid, st.Gid, tc.uid, tc.gid)
		}
		e.umount(mnt)
	}
	for _, bad := range []string{"1234", "a:b", "1:-1", ":5", "1:99999999999"} {
		code, out := e.run("mkfs", "--force", "--root-owner", bad, e.path("img"))
		if code != exitUsage || !strings.Contains(out, "want UID:GID") {
			t.Errorf("--root-owner %q: exit %d\n%s", bad, code, out)
		}
	}
}
