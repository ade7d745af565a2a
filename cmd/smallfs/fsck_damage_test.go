package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/volume"
)

// damageNewestCheckpoint flips bytes in the payload of the checkpoint the
// newest superblock of the image at path names, and returns its block.
func damageNewestCheckpoint(t *testing.T, path string) uint64 {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := format.ReadSuperblock(device.NewMemFrom(raw))
	if err != nil {
		t.Fatal(err)
	}
	off := sb.Checkpoint*uint64(sb.BlockSize) + format.CheckpointHeaderSize + 3
	for i := range uint64(3) {
		raw[off+i] ^= 0x5a
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return sb.Checkpoint
}

// TestFsckDamagedCheckpoint: the newest checkpoint of a cleanly closed
// volume is damaged. The older one and the log stand in, losing nothing:
// fsck reports it (exit 4), info says so, fsck --repair writes a fresh
// checkpoint (exit 1), and then all is clean with the files intact.
func TestFsckDamagedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "damaged.img")
	makeClean(t, img)
	block := damageNewestCheckpoint(t, img)
	damage := fmt.Sprintf("newest checkpoint (block %d, superblock ", block)

	code, stdout, stderr := runCLI(t, dir, "fsck", img)
	if code != fsckUncorrected || !strings.Contains(stdout, damage) || !strings.Contains(stdout, "nothing lost") {
		t.Fatalf("fsck: exit %d, want %d\n%s%s", code, fsckUncorrected, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, dir, "info", img)
	if code != 0 || !strings.Contains(stdout, "damage ") || !strings.Contains(stdout, "fsck --repair writes a fresh checkpoint") {
		t.Fatalf("info: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, dir, "fsck", "--repair", img)
	if code != fsckCorrected || !strings.Contains(stdout, "fixed: damaged checkpoint at block") {
		t.Fatalf("fsck --repair: exit %d, want %d\n%s%s", code, fsckCorrected, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, dir, "fsck", img)
	if code != fsckClean || strings.Contains(stdout, damage) {
		t.Fatalf("fsck after the repair: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, dir, "info", img)
	if code != 0 || strings.Contains(stdout, "damage ") || !strings.Contains(stdout, "stands by") {
		t.Fatalf("info after the repair: exit %d\n%s", code, stdout)
	}
	// The files are all there.
	dev, err := device.Open(img, device.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	vol, err := openReadOnly(img, dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer vol.Close()
	for _, name := range []string{"big", "small", "dir"} {
		if _, err := vol.Lookup(volume.Context{}, volume.RootIno, name); err != nil {
			t.Errorf("after the repair: %v", err)
		}
	}
}
