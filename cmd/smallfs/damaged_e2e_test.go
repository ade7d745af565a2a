package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountinfo"
)

// TestE2EDamagedMetadata: an image whose checkpoint has right checksums
// over metadata that fails its checks. A read-write mount used to serve
// it (a named file with a link count of 0 was freed at once: ls panicked
// the daemon, and the checkpoints written after it never loaded again);
// now it refuses, names fsck --repair and leaves the image as it was. A
// read-only mount serves it: a file whose blocks another claims answers
// EIO, the others read as they were. fsck --repair then mends it and a
// read-write mount works.
func TestE2EDamagedMetadata(t *testing.T) {
	e := newE2E(t)
	mnt := e.path("mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	e.mounted(mnt) // should a refused mount have mounted after all
	for _, name := range []string{"nolinks", "overlap"} {
		img := fixture(t, e.dir, name)
		before := sum(t, img)
		code, out := e.run(img, mnt, "-o", "log_file="+e.path("log"))
		if code != 32 || !strings.Contains(out, "damaged filesystem: metadata fails its checks") || !strings.Contains(out, "run smallfs fsck --repair") {
			t.Errorf("rw mount of %s: exit %d\n%s", name, code, out)
		}
		if _, err := mountinfo.Find(mnt); err == nil {
			t.Fatalf("the refused mount of %s left a mount behind", name)
		}
		if sum(t, img) != before {
			t.Errorf("the refused mount changed %s", name)
		}

		e.must(img, mnt, "-o", "ro,log_file="+e.path("log"))
		ents, err := os.ReadDir(mnt)
		if err != nil || len(ents) != 3 {
			t.Errorf("%s: ls of the ro mount: %v, %v", name, ents, err)
		}
		if got, err := os.Readlink(filepath.Join(mnt, "dir", "sym")); got != "../big" {
			t.Errorf("%s: dir/sym: %q, %v", name, got, err)
		}
		big, err := os.ReadFile(filepath.Join(mnt, "big"))
		small, serr := os.ReadFile(filepath.Join(mnt, "dir", "link"))
		switch name {
		case "nolinks": // its link count is wrong, its data is not
			if err != nil || !bytes.Equal(big, bytes.Repeat([]byte("smallfs "), 3*4096/8)) {
				t.Errorf("nolinks: big: %v", err)
			}
			if serr != nil || string(small) != "hello\n" {
				t.Errorf("nolinks: dir/link: %q, %v", small, serr)
			}
		case "overlap": // /small claims /big's blocks too: both are damaged
			if !errors.Is(err, syscall.EIO) || !errors.Is(serr, syscall.EIO) {
				t.Errorf("overlap: big: %v, small: %v; want EIO", err, serr)
			}
		}
		e.umount(mnt)
		if sum(t, img) != before {
			t.Errorf("the ro mount changed %s", name)
		}

		if code, out := e.run("fsck", "--repair", img); code != 1 {
			t.Errorf("fsck --repair %s: exit %d\n%s", name, code, out)
		}
		e.must(img, mnt, "-o", "log_file="+e.path("log"))
		if got := string(readFile(t, filepath.Join(mnt, "dir", "link"))); got != "hello\n" {
			t.Errorf("%s after the repair: dir/link reads %q", name, got)
		}
		writeFile(t, filepath.Join(mnt, "new"), []byte("x"))
		e.umount(mnt)
		e.must("fsck", img)
	}
}
