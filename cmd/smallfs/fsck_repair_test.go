package main

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/volume"
)

// TestFsckRepairLost: a directory whose entry is lost hangs loose with
// what it holds; fsck --repair moves it to /lost+found, fixes the link
// counts, exits 1 and lists the fixes; a second fsck finds it clean.
func TestFsckRepairLost(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "lost.img")
	rewriteCheckpoint(t, makeClean(t, img), img, func(recs []format.Record) []format.Record {
		return slices.DeleteFunc(recs, func(r format.Record) bool {
			d, ok := r.(format.DirentRec)
			return ok && d.Parent == uint64(volume.RootIno) && d.Name == "dir"
		})
	})
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"fsck-lost", []string{"fsck"}},
		{"fsck-lost-repair", []string{"fsck", "--repair", "--json"}},
		{"fsck-lost-after", []string{"fsck"}},
	} {
		code, stdout, stderr := runCLI(t, dir, append(tc.args, img)...)
		golden(t, tc.name, code, stdout, stderr)
	}
}

// TestFsckCrashOrphanIsANote: a crash while an unlinked file is still
// open leaves an inode without links, which the next mount frees. fsck
// says so in a note and exits 0: it is the normal state after such a
// crash, not damage (in a cleanly closed volume it is: fsck-orphan).
func TestFsckCrashOrphanIsANote(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "crash.img")
	crashAfter(t, img, func(vol *volume.Volume) func() {
		_, h, err := vol.Create(volume.Context{}, volume.RootIno, "open-at-crash", 0o644, syscall.O_WRONLY)
		if err != nil {
			t.Fatal(err)
		}
		h.WriteAt([]byte("gone with the crash\n"), 0)
		if err := vol.Unlink(volume.Context{}, volume.RootIno, "open-at-crash"); err != nil {
			t.Fatal(err)
		}
		return func() { h.Release() }
	})
	for _, args := range [][]string{{"fsck"}, {"fsck", "--repair"}} {
		code, stdout, stderr := runCLI(t, dir, append(args, img)...)
		if code != 0 || !strings.Contains(stdout, "note: 1 inode(s) unlinked while open at the crash") || !strings.Contains(stdout, ": clean") {
			t.Errorf("%v: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	// The next mount frees it; then there is nothing to note.
	dev, err := device.Open(img, device.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vol, err := volume.Open(dev, volume.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := vol.Recovery().Orphans; len(got) != 1 {
		t.Errorf("the mount after the crash freed %v, want one inode", got)
	}
	vol.Close()
	dev.Close()
	if code, stdout, _ := runCLI(t, dir, "fsck", img); code != 0 || strings.Contains(stdout, "note") {
		t.Errorf("fsck after the mount: exit %d\n%s", code, stdout)
	}
}

// TestFsckRecordsLeftOut: both checkpoints hold a record that does not
// apply (an entry inside a regular file). No checkpoint loads as it is:
// a mount refuses, and fsck used to say the metadata cannot be loaded at
// all. It now loads the rest, names the record, and --repair writes a
// checkpoint without it; every file is kept.
func TestFsckRecordsLeftOut(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "records.img")
	recs := makeClean(t, img)
	inFile := func(recs []format.Record) []format.Record {
		var big, small uint64
		for _, r := range recs {
			if in, ok := r.(format.InodeRec); ok && in.Mode&syscall.S_IFMT == syscall.S_IFREG {
				if in.Size > 4096 {
					big = in.Ino
				} else {
					small = in.Ino
				}
			}
		}
		return append(slices.Clone(recs), format.DirentRec{Parent: big, Ino: small, Cookie: 3, Name: "inside"})
	}
	rewriteCheckpoint(t, recs, img, inFile)
	rewriteCheckpoint(t, recs, img, inFile) // both slots
	code, stdout, stderr := runCLI(t, dir, "fsck", img)
	if code != fsckUncorrected || !strings.Contains(stdout, `checkpoint record not loaded: record for inode 2 of the wrong type`) {
		t.Fatalf("fsck: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, dir, "fsck", "--repair", img)
	if code != fsckCorrected || !strings.Contains(stdout, "left out for good") {
		t.Fatalf("fsck --repair: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr = runCLI(t, dir, "fsck", img); code != fsckClean {
		t.Fatalf("fsck after the repair: exit %d\n%s%s", code, stdout, stderr)
	}
}
