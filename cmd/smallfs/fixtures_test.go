package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/volume"
)

// The fsck and info fixtures are small images kept gzipped in testdata.
// TestFixtures rewrites them under -fixtures (then rerun with -update: the
// goldens depend on them); without it, it only checks that each exists.
//
//	clean      files, a directory, a hard link, a symlink; closed cleanly
//	unclean    as clean plus a file committed to the log, never closed
//	badlinks   the hard-linked file's link count raised by one
//	orphan     an inode without a name nor an open handle
//	overlap    /small (inline) given /big's extents as well
//	nolinks    /big named, with a link count of 0
var fixtures = map[string]func(t *testing.T, path string){
	"clean":    func(t *testing.T, path string) { makeClean(t, path) },
	"unclean":  makeUnclean,
	"badlinks": func(t *testing.T, path string) { rewriteCheckpoint(t, makeClean(t, path), path, badLinks) },
	"orphan":   func(t *testing.T, path string) { rewriteCheckpoint(t, makeClean(t, path), path, addOrphan) },
	"overlap":  func(t *testing.T, path string) { rewriteCheckpoint(t, makeClean(t, path), path, overlap) },
	"nolinks":  func(t *testing.T, path string) { rewriteCheckpoint(t, makeClean(t, path), path, noLinks) },
}

const fixtureSize = 4 << 20

var remakeFixtures = flag.Bool("fixtures", false, "rewrite testdata/*.img.gz")

func TestFixtures(t *testing.T) {
	for name, make := range fixtures {
		gz := filepath.Join("testdata", name+".img.gz")
		if !*remakeFixtures {
			if _, err := os.Stat(gz); err != nil {
				t.Errorf("fixture %s: %v (run with -update)", name, err)
			}
			continue
		}
		img := filepath.Join(t.TempDir(), name+".img")
		make(t, img)
		raw, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(raw)
		zw.Close()
		if err := os.WriteFile(gz, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fixture unpacks testdata/name.img.gz into dir and returns its path.
func fixture(t *testing.T, dir, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".img.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".img")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// populate makes the fixture tree: /big (three blocks of data), /small
// (inline), /dir/link (a second name of /small) and /dir/sym.
func populate(t *testing.T, vol *volume.Volume) {
	t.Helper()
	ctx := volume.Context{}
	write := func(name string, data []byte) volume.Attr {
		a, h, err := vol.Create(ctx, volume.RootIno, name, 0o644, syscall.O_WRONLY)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
		return a
	}
	write("big", bytes.Repeat([]byte("smallfs "), 3*4096/8))
	small := write("small", []byte("hello\n"))
	dir, err := vol.Mkdir(ctx, volume.RootIno, "dir", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vol.Link(ctx, small.Ino, dir.Ino, "link"); err != nil {
		t.Fatal(err)
	}
	if _, err := vol.Symlink(ctx, dir.Ino, "sym", "../big"); err != nil {
		t.Fatal(err)
	}
}

// makeClean makes the clean image and returns its records.
func makeClean(t *testing.T, path string) []format.Record {
	t.Helper()
	dev, err := device.Open(path, device.Options{Create: true, Size: fixtureSize})
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
	populate(t, vol)
	if err := vol.Close(); err != nil {
		t.Fatal(err)
	}
	sb, err := format.ReadSuperblock(dev)
	if err != nil {
		t.Fatal(err)
	}
	var recs []format.Record
	if _, err := format.ReadCheckpoint(dev, sb.CheckpointLoc(), func(r format.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// makeUnclean leaves a volume as a crash would: its last file is in the
// durable log, and the superblock says not clean.
func makeUnclean(t *testing.T, path string) {
	crashAfter(t, path, func(vol *volume.Volume) (cleanup func()) {
		_, h, err := vol.Create(volume.Context{}, volume.RootIno, "after-crash", 0o644, syscall.O_WRONLY)
		if err != nil {
			t.Fatal(err)
		}
		h.WriteAt([]byte("in the log only\n"), 0)
		h.Release()
		return func() {}
	})
}

// crashAfter makes a clean volume at path, runs change on it and commits,
// then puts back the image as it was at that moment, as a crash would
// leave it. The cleanup change returns (releasing what it holds open)
// and the close run after the copy, so they leave no trace.
func crashAfter(t *testing.T, path string, change func(*volume.Volume) (cleanup func())) {
	t.Helper()
	makeClean(t, path)
	dev, err := device.Open(path, device.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vol, err := volume.Open(dev, volume.Options{CommitInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	cleanup := change(vol)
	if err := vol.Sync(); err != nil {
		t.Fatal(err)
	}
	// Copy the image as it is now: the volume stays open, as in a crash.
	raw := make([]byte, dev.Size())
	if _, err := dev.ReadAt(raw, 0); err != nil {
		t.Fatal(err)
	}
	cleanup()
	vol.Close()
	dev.Close()
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rewriteCheckpoint writes edit(recs) as a new checkpoint at the end of
// the device and points the superblock at it.
func rewriteCheckpoint(t *testing.T, recs []format.Record, path string, edit func([]format.Record) []format.Record) {
	t.Helper()
	dev, err := device.Open(path, device.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	sb, err := format.ReadSuperblock(dev)
	if err != nil {
		t.Fatal(err)
	}
	next := sb.Blocks - 64 // free in a fixture this small
	w, err := format.NewCheckpointWriter(dev, format.CheckpointOptions{
		BlockSize: sb.BlockSize, NextSeq: sb.LogSeq, SizeHint: 8192,
		Alloc: func(n uint64) (uint64, uint64, error) {
			n = min(n, sb.Blocks-next)
			next += n
			return next - n, n, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range edit(recs) {
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	info, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	sb.Checkpoint = info.Block
	if err := format.WriteSuperblock(dev, sb); err != nil {
		t.Fatal(err)
	}
}

func badLinks(recs []format.Record) []format.Record {
	for i, r := range recs {
		if in, ok := r.(format.InodeRec); ok && in.Mode&syscall.S_IFMT == syscall.S_IFREG && in.Nlink == 2 {
			in.Nlink++
			recs[i] = in
		}
	}
	return recs
}

// noLinks sets the link count of the file with blocks (/big) to 0.
func noLinks(recs []format.Record) []format.Record {
	for i, r := range recs {
		if in, ok := r.(format.InodeRec); ok && in.Mode&syscall.S_IFMT == syscall.S_IFREG && in.Size > 4096 {
			in.Nlink = 0
			recs[i] = in
		}
	}
	return recs
}

func addOrphan(recs []format.Record) []format.Record {
	var high format.InodeRec
	for _, r := range recs {
		if in, ok := r.(format.InodeRec); ok && in.Ino > high.Ino {
			high = in
		}
	}
	return append(recs, format.InodeRec{Ino: high.Ino + 1, Gen: high.Gen + 1, Mode: syscall.S_IFREG | 0o600,
		Atime: high.Atime, Mtime: high.Mtime, Ctime: high.Ctime})
}

// overlap gives the second file with extents the first one's blocks.
func overlap(recs []format.Record) []format.Record {
	var first *format.ExtentsRec
	for i, r := range recs {
		if e, ok := r.(format.ExtentsRec); ok && len(e.Extents) > 0 {
			if first == nil {
				first = &e
				continue
			}
			e.Extents = append([]format.Extent(nil), first.Extents...)
			recs[i] = e
			return recs
		}
	}
	// Only one file has blocks: give /small (inline) a copy of them.
	for _, r := range recs {
		if in, ok := r.(format.InodeRec); ok && in.Mode&syscall.S_IFMT == syscall.S_IFREG && in.Ino != first.Ino {
			return append(recs, format.ExtentsRec{Ino: in.Ino, Extents: first.Extents})
		}
	}
	return recs
}
