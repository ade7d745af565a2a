package main

import (
	"bytes"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

// TestVolumeLayout walks nested directories, counts a hard-linked file
// once for extents, leaves symlinks out, and puts inline and empty files
// apart.
func TestVolumeLayout(t *testing.T) {
	dev, err := device.Open(filepath.Join(t.TempDir(), "l.img"), device.Options{Create: true, Size: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if err := volume.Mkfs(dev, volume.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	vol, err := volume.Open(dev, volume.Options{CommitInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer vol.Close()
	ctx := volume.Context{}
	write := func(dir volume.Ino, name string, size int) volume.Ino {
		a, h, err := vol.Create(ctx, dir, name, 0o644, syscall.O_WRONLY)
		if err != nil {
			t.Fatal(err)
		}
		if size > 0 {
			if _, err := h.WriteAt(bytes.Repeat([]byte{'x'}, size), 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
		return a.Ino
	}
	mkdir := func(dir volume.Ino, name string) volume.Ino {
		a, err := vol.Mkdir(ctx, dir, name, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		return a.Ino
	}
	a := mkdir(volume.RootIno, "a")
	b := mkdir(a, "b")
	for _, n := range []string{"1", "2", "3"} {
		write(a, n, 8192)
	}
	big := write(b, "big", 100<<10)
	write(b, "small", 4096)
	write(b, "inline", 10)
	write(volume.RootIno, "empty", 0)
	if _, err := vol.Link(ctx, big, a, "big-link"); err != nil {
		t.Fatal(err)
	}
	if _, err := vol.Symlink(ctx, a, "sym", "b/big"); err != nil {
		t.Fatal(err)
	}
	if err := vol.Sync(); err != nil {
		t.Fatal(err)
	}
	f, err := volumeLayout(vol)
	if err != nil {
		t.Fatal(err)
	}
	if f.Files != 7 || f.NoBlocks != 2 || f.BlockSize != 4096 {
		t.Errorf("%d files, %d without blocks, block size %d; want 7, 2 (inline, empty), 4096", f.Files, f.NoBlocks, f.BlockSize)
	}
	if f.Extents.Files != 5 || f.Small.Files != 4 {
		t.Errorf("%d files with blocks, %d small; want 5 and 4 (the 100 KiB file is not small)", f.Extents.Files, f.Small.Files)
	}
	if f.Extents.Median < 1 || f.Extents.Max < f.Extents.P99 || f.Extents.P99 < f.Extents.Median {
		t.Errorf("extents %+v out of order", f.Extents)
	}
	// a: three files and the second name of b/big; b: big and small.
	if f.Spread.Dirs != 2 || f.Spread.Median < 1 || f.Spread.Max < f.Spread.P90 {
		t.Errorf("spread %+v, want 2 directories, each at least 1", f.Spread)
	}
}
