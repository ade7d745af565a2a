package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// TestFsckBadSuperblockSlot: one superblock slot does not decode while the
// other does. Readers take the good one and lose nothing, but the volume
// has no fallback left, so fsck reports it (exit 4), saying whether it
// looks like a write cut short by a crash or damage of another kind, and
// fsck --repair rewrites it from the good one (exit 1); then all is clean.
// fsck once said "clean" and left it. info does not call the good slot
// clean: alone, it is replayed from.
func TestFsckBadSuperblockSlot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(slot []byte, good *format.Superblock)
		want   string
	}{
		{"flipped uuid", func(b []byte, _ *format.Superblock) { b[30] ^= 0xff },
			"not as a crash leaves it"},
		{"zeros", func(b []byte, _ *format.Superblock) { clear(b) },
			"not as a crash leaves it"},
		{"torn write", func(b []byte, good *format.Superblock) {
			// The next generation's write, cut after its first 64 bytes:
			// the changing fields from there on are the older's.
			next := *good
			next.Generation++
			next.Checkpoint += 7
			next.Encode(b[:format.SuperblockSize:format.SuperblockSize])
			binary.LittleEndian.PutUint64(b[64:], good.Checkpoint+3)
		}, "looks like the write of generation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			img := filepath.Join(dir, "img")
			makeClean(t, img)
			raw, err := os.ReadFile(img)
			if err != nil {
				t.Fatal(err)
			}
			good, err := format.ReadSuperblock(device.NewMemFrom(raw))
			if err != nil {
				t.Fatal(err)
			}
			bad := 1 - good.Slot
			slot := raw[bad*format.SuperblockSlotSize:][:format.SuperblockSize]
			tc.damage(slot, good)
			if err := os.WriteFile(img, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			name := "superblock " + string(rune('A'+bad)) + " is damaged"

			// The good slot is clean, but alone it does not say that
			// nothing was logged after it: the log is replayed.
			if code, stdout, stderr := runCLI(t, dir, "info", img); code != 0 || !strings.Contains(stdout, "not clean: the log is replayed") {
				t.Errorf("info: exit %d, want the state not clean\n%s%s", code, stdout, stderr)
			}

			code, stdout, stderr := runCLI(t, dir, "fsck", img)
			if code != fsckUncorrected || !strings.Contains(stdout, name) || !strings.Contains(stdout, tc.want) {
				t.Fatalf("fsck: exit %d, want %d naming %q and %q\n%s%s", code, fsckUncorrected, name, tc.want, stdout, stderr)
			}
			code, stdout, stderr = runCLI(t, dir, "fsck", "--repair", img)
			fixed := "fixed: superblock " + string(rune('A'+bad)) + " rewritten from superblock " + string(rune('A'+good.Slot))
			if code != fsckCorrected || !strings.Contains(stdout, fixed) {
				t.Fatalf("fsck --repair: exit %d, want %d saying %q\n%s%s", code, fsckCorrected, fixed, stdout, stderr)
			}
			code, stdout, stderr = runCLI(t, dir, "fsck", img)
			if code != fsckClean {
				t.Fatalf("fsck after the repair: exit %d\n%s%s", code, stdout, stderr)
			}
			dev, err := device.Open(img, device.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			if b, err := format.FindBadSlot(dev); b != nil || err != nil {
				t.Errorf("after the repair: %v %v", b, err)
			}
		})
	}
}
