package main

import (
	"path/filepath"
	"slices"
	"testing"

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
