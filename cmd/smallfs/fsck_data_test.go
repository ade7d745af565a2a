package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

// TestFsckData: a byte flipped in the data of one file of a clean image
// is not a metadata problem (fsck says clean) but fsck --data reads it,
// names the file, its offset and both checksums, and exits 4; --repair
// cannot mend it and says so. An image without damage passes --data.
func TestFsckData(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "data.img")
	makeClean(t, img)
	dev, err := device.Open(img, device.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vol, err := volume.Open(dev, volume.Options{CommitInterval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	_, h, err := vol.Create(volume.Context{}, volume.RootIno, "victim", 0o644, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt([]byte(strings.Repeat("precious data\n", 1000)), 0); err != nil {
		t.Fatal(err)
	}
	h.Release()
	a, err := vol.Lookup(volume.Context{}, volume.RootIno, "victim")
	if err != nil {
		t.Fatal(err)
	}
	es, err := vol.Extents(a.Ino)
	if err != nil || len(es) == 0 {
		t.Fatalf("extents of the file: %v %v", es, err)
	}
	if err := vol.Close(); err != nil {
		t.Fatal(err)
	}
	dev.Close()

	if code, stdout, stderr := runCLI(t, dir, "fsck", "--data", img); code != fsckClean {
		t.Fatalf("fsck --data of an undamaged image: exit %d\n%s%s", code, stdout, stderr)
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(es[0].Physical)*4096 + 4096 + 7 // the file's second block
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 0x01
	f.WriteAt(b, off)
	f.Close()

	if code, stdout, stderr := runCLI(t, dir, "fsck", img); code != fsckClean {
		t.Fatalf("fsck without --data over damaged data: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr := runCLI(t, dir, "fsck", "--data", img)
	if code != fsckUncorrected || !strings.Contains(stdout, "damaged data: /victim (inode ") ||
		!strings.Contains(stdout, "bytes 4096+4096") || !strings.Contains(stdout, "restore the file from a backup") {
		t.Fatalf("fsck --data: exit %d, want %d\n%s%s", code, fsckUncorrected, stdout, stderr)
	}
	if strings.Count(stdout, "damaged data:") != 1 {
		t.Errorf("fsck --data named more than the one damaged block:\n%s", stdout)
	}
	code, stdout, stderr = runCLI(t, dir, "fsck", "--data", "--repair", img)
	if code != fsckUncorrected || !strings.Contains(stdout, "damaged data: /victim") {
		t.Fatalf("fsck --data --repair: exit %d, want %d\n%s%s", code, fsckUncorrected, stdout, stderr)
	}
}
