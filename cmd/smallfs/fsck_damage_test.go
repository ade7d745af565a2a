package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
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
	if code != 0 || !strings.Contains(stdout, "damage ") || !strings.Contains(stdout, "fsck --repair mends it\n") {
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

// damageLogChunk flips a payload byte of the n-th chunk replay reads from
// the superblock of the image at path.
func damageLogChunk(t *testing.T, path string, n int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := format.ReadSuperblock(device.NewMemFrom(raw))
	if err != nil {
		t.Fatal(err)
	}
	bs := uint64(sb.BlockSize)
	pos, seq := sb.LogHead, sb.LogSeq
	for i := 0; ; i++ {
		h, err := format.ParseChunkHeader(raw[(sb.Log.Start+pos)*bs:])
		if err != nil || h.Seq != seq {
			t.Fatalf("the log holds %d chunks, not %d", i, n+1)
		}
		if i == n {
			raw[(sb.Log.Start+pos)*bs+format.ChunkHeaderSize+2] ^= 0xff
			break
		}
		seq += uint64(h.Txns)
		pos = (pos + uint64(format.ChunkSize(int(h.PayloadLen), sb.BlockSize))/bs) % sb.Log.Len
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFsckLogDamaged: after a crash, the first chunk replay reads, or
// one in the middle of the log, is damaged. A mount refuses, pointing at
// fsck --repair; fsck reports the committed transactions lost (exit 4);
// info shows it; fsck --repair salvages what is before the damage (exit
// 1), and then all is clean.
func TestFsckLogDamaged(t *testing.T) {
	for _, chunk := range []int{0, 1} {
		t.Run(fmt.Sprint("chunk", chunk), func(t *testing.T) { testFsckLogDamaged(t, chunk) })
	}
}

func testFsckLogDamaged(t *testing.T, chunk int) {
	dir := t.TempDir()
	img := filepath.Join(dir, "logdamage.img")
	crashAfter(t, img, func(vol *volume.Volume) func() {
		for i := range 3 {
			_, h, err := vol.Create(volume.Context{}, volume.RootIno, fmt.Sprint("f", i), 0o644, syscall.O_WRONLY)
			if err != nil {
				t.Fatal(err)
			}
			h.WriteAt([]byte("committed\n"), 0)
			h.Release()
			if err := vol.Sync(); err != nil { // a commit each
				t.Fatal(err)
			}
		}
		return func() {}
	})
	damageLogChunk(t, img, chunk)

	// What a mount does with it (openSession).
	dev, err := device.Open(img, device.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = volume.Open(dev, volume.Options{Logger: quiet()})
	dev.Close()

	if msg := volumeError(img, err); err == nil || !strings.Contains(msg.Error(), "damaged filesystem") || !strings.Contains(msg.Error(), "run smallfs fsck --repair") {
		t.Fatalf("mount of a log damaged at chunk %d: %v", chunk, msg)
	}

	lost := "metadata log damaged at log block"
	code, stdout, stderr := runCLI(t, dir, "fsck", img)

	if code != fsckUncorrected || !strings.Contains(stdout, lost) || !regexp.MustCompile(`committed transactions \d+-\d+ \(at least\) are lost`).MatchString(stdout) {
		t.Fatalf("fsck: exit %d, want %d\n%s%s", code, fsckUncorrected, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, dir, "info", img)
	if code != 0 || !strings.Contains(stdout, "damage ") || !strings.Contains(stdout, lost) || !strings.Contains(stdout, "mends it, accepting that loss") {
		t.Fatalf("info: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, dir, "fsck", "--repair", img)
	if code != fsckCorrected || !strings.Contains(stdout, "fixed: log salvaged") {
		t.Fatalf("fsck --repair: exit %d, want %d\n%s%s", code, fsckCorrected, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, dir, "fsck", img)
	if code != fsckClean || strings.Contains(stdout, lost) {
		t.Fatalf("fsck after the repair: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestCutShortImage: an image file cut short says how long it should be,
// to info and to a mount (openSession's steps, without a daemon), whether
// what is left still opens as a device or not; growing it back as told
// brings the filesystem back.
func TestCutShortImage(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "cut.img")
	makeClean(t, img)
	whole, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("image is %%d bytes but the filesystem is %d bytes: it was cut short; truncate -s %d brings back its size, not the data cut off", fixtureSize, fixtureSize)
	for _, size := range []int{1 << 20, 32 << 10} {
		if err := os.WriteFile(img, whole[:size], 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, dir, "info", img)
		if code == 0 || !strings.Contains(stderr, fmt.Sprintf(want, size)) {
			t.Errorf("info of an image cut to %d bytes: exit %d\n%s%s", size, code, stdout, stderr)
		}
		err := mountSteps(img)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(want, size)) {
			t.Errorf("mount of an image cut to %d bytes: %v", size, err)
		}
	}
	// Cut to 1 MiB, nothing in use was lost: truncate as told.
	if err := os.WriteFile(img, whole[:1<<20], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, fixtureSize); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, dir, "fsck", img); code != fsckClean {
		t.Errorf("fsck of the image grown back: exit %d\n%s%s", code, stdout, stderr)
	}
}

// mountSteps opens the device and the volume as openSession does and
// returns its error, as the mount would report it.
func mountSteps(path string) error {
	dev, err := openDevice(path, device.Options{})
	if err != nil {
		return err
	}
	defer dev.Close()
	vol, err := volume.Open(dev, volume.Options{Logger: quiet(), CommitInterval: -1})
	if err != nil {
		return volumeError(path, err)
	}
	return vol.Close()
}
