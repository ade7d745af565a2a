package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

// TestCutShortNamesLostFiles: an image cut short is reported with the
// size to grow it back to and the warning that growing it back brings the
// size back, not the data, and the files whose data lay past the cut
// (which then read zeros) are counted and named, from the metadata before
// the cut. A cut past everything in use says nothing is lost. It once
// advised "grow it back with truncate -s" alone, and grown back that way
// many files read zeros with fsck clean.
func TestCutShortNamesLostFiles(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	const size = 64 << 20
	dev, err := device.Open(img, device.Options{Create: true, Size: size, Prealloc: device.PreallocOff})
	if err != nil {
		t.Fatal(err)
	}
	if err := volume.Mkfs(dev, volume.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	vol, err := volume.Open(dev, volume.Options{CommitInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	for d := range 6 { // directories spread their files over the device
		dd, err := vol.Mkdir(volume.Context{}, volume.RootIno, fmt.Sprint("d", d), 0o755)
		if err != nil {
			t.Fatal(err)
		}
		for f := range 3 {
			_, h, err := vol.Create(volume.Context{}, dd.Ino, fmt.Sprint("f", f), 0o644, syscall.O_WRONLY)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.WriteAt(make([]byte, 20000), 0); err != nil {
				t.Fatal(err)
			}
			if err := h.Release(); err != nil {
				t.Fatal(err)
			}
		}
	}
	const cut = size / 2
	lost := vol.FilesBeyond(cut / 4096)
	names := pathsOf(vol, lost)
	if err := vol.Close(); err != nil {
		t.Fatal(err)
	}
	dev.Close()
	if len(lost) == 0 || len(lost) > cutShortNames {
		t.Fatalf("%d files past the cut: the test wants 1 to %d", len(lost), cutShortNames)
	}
	if err := os.Truncate(img, cut); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"fsck", img}, {"info", img}} {
		_, stdout, stderr := runCLI(t, dir, args...)
		out := stdout + stderr
		for _, want := range append([]string{
			"truncate -s 67108864 brings back its size, not the data cut off",
			fmt.Sprintf("%d file(s) had data past byte %d and would read zeros there: ", len(lost), cut),
		}, names...) {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in\n%s", args[0], want, out)
			}
		}
	}

	// Nothing but the root, the log and the first checkpoint, all at the
	// start: a cut past them loses nothing.
	empty := filepath.Join(dir, "empty")
	if code, _, stderr := runCLI(t, dir, "mkfs", "--size", "64M", empty); code != 0 {
		t.Fatal(stderr)
	}
	if err := os.Truncate(empty, cut); err != nil {
		t.Fatal(err)
	}
	if _, _, stderr := runCLI(t, dir, "info", empty); !strings.Contains(stderr, "no file had data past byte 33554432, so growing it back loses nothing") {
		t.Errorf("info of an empty image cut short:\n%s", stderr)
	}
}
