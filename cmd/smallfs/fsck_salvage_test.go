package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/volume"
)

// readImage and writeImage are the image file at path as bytes.
func readImage(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func writeImage(t *testing.T, path string, raw []byte) {
	t.Helper()
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// damageOlderLogEnd flips a payload byte of the last chunk of the log
// after the older checkpoint (the other superblock slot's) of the image
// at path, so that the log from there ends before it, and returns the
// transaction that chunk begins with and the older superblock.
func damageOlderLogEnd(t *testing.T, path string) (uint64, *format.Superblock) {
	t.Helper()
	raw := readImage(t, path)
	_, sb, err := format.ReadSuperblocks(device.NewMemFrom(raw))
	if err != nil || sb == nil {
		t.Fatalf("no older superblock: %v", err)
	}
	bs := uint64(sb.BlockSize)
	var last, lastSeq uint64
	found := false
	for pos, seq, i := sb.LogHead, sb.LogSeq, uint64(0); i < sb.Log.Len; i++ {
		h, err := format.ParseChunkHeader(raw[(sb.Log.Start+pos)*bs:])
		if err != nil || h.Seq != seq {
			break
		}
		last, lastSeq, found = pos, seq, true
		seq += uint64(h.Txns)
		pos = (pos + uint64(format.ChunkSize(int(h.PayloadLen), sb.BlockSize))/bs) % sb.Log.Len
	}
	if !found {
		t.Fatal("no log after the older checkpoint")
	}
	raw[(sb.Log.Start+last)*bs+format.ChunkHeaderSize+2] ^= 0xff
	writeImage(t, path, raw)
	return lastSeq, sb
}

// createSynced creates name holding data in the root, and commits it.
func createSynced(t *testing.T, vol *volume.Volume, name, data string) {
	t.Helper()
	_, h, err := vol.Create(volume.Context{}, volume.RootIno, name, 0o644, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	h.WriteAt([]byte(data), 0)
	h.Release()
	if err := vol.Sync(); err != nil { // a commit each
		t.Fatal(err)
	}
}

// TestFsckShortLogFallback: the newest checkpoint is damaged and the log
// after the older one ends before it. A mount refuses, pointing at fsck
// --repair, and changes nothing; fsck names the transactions lost (exit
// 4), info shows them, and neither changes anything; fsck --repair keeps the older checkpoint and
// what the log replays, says what is lost (exit 1, as for a salvaged
// log), and then the volume mounts, fsck is clean, and the files of the
// older checkpoint and of the replayed log are there.
func TestFsckShortLogFallback(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "shortlog.img")
	makeClean(t, img) // the older checkpoint: big, small, dir
	dev, err := device.Open(img, device.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vol, err := volume.Open(dev, volume.Options{Logger: quiet(), CommitInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	createSynced(t, vol, "replayed", "in the log\n")
	createSynced(t, vol, "lost", "in the last commit\n")
	if err := vol.Close(); err != nil { // the newest checkpoint
		t.Fatal(err)
	}
	dev.Close()
	cur, err := format.ReadSuperblock(device.NewMemFrom(readImage(t, img)))
	if err != nil {
		t.Fatal(err)
	}
	first, older := damageOlderLogEnd(t, img)
	block := damageNewestCheckpoint(t, img)
	lost := fmt.Sprintf("committed transactions %d-%d are lost", first, cur.LogSeq-1)
	damaged := readImage(t, img)

	err = mountSteps(img)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("transactions %d-%d would be lost", first, cur.LogSeq-1)) ||
		!strings.Contains(err.Error(), "run smallfs fsck --repair, which keeps the older checkpoint") {
		t.Fatalf("mount: %v", err)
	}
	code, stdout, stderr := runCLI(t, dir, "fsck", img)
	if code != fsckUncorrected || !strings.Contains(stdout, fmt.Sprintf("newest checkpoint (block %d, superblock ", block)) || !strings.Contains(stdout, lost) {
		t.Fatalf("fsck: exit %d, want %d, saying %q\n%s%s", code, fsckUncorrected, lost, stdout, stderr)
	}
	t.Log(err, "\n", stdout) // what the mount and fsck say
	code, stdout, stderr = runCLI(t, dir, "info", img)
	if code != 0 || !strings.Contains(stdout, "damage ") || !strings.Contains(stdout, lost) || !strings.Contains(stdout, "mends it, accepting that loss") {
		t.Fatalf("info: exit %d\n%s%s", code, stdout, stderr)
	}
	if !bytes.Equal(readImage(t, img), damaged) {
		t.Fatal("the refused mount, fsck or info changed the image")
	}

	code, stdout, stderr = runCLI(t, dir, "fsck", "--repair", img)
	fixed := fmt.Sprintf("fixed: damaged checkpoint at block %d replaced by a fresh one; kept the older checkpoint (block %d) and what the log replays after it: %s",
		block, older.Checkpoint, lost)
	if code != fsckCorrected || !strings.Contains(stdout, fixed) {
		t.Fatalf("fsck --repair: exit %d, want %d, saying %q\n%s%s", code, fsckCorrected, fixed, stdout, stderr)
	}
	t.Log(stdout)
	code, stdout, stderr = runCLI(t, dir, "fsck", img)
	if code != fsckClean {
		t.Fatalf("fsck after the repair: exit %d\n%s%s", code, stdout, stderr)
	}
	if err := mountSteps(img); err != nil {
		t.Fatalf("mount after the repair: %v", err)
	}
	ro, err := device.Open(img, device.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	vol, err = openReadOnly(img, ro, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer vol.Close()
	if r := vol.Recovery(); r.Damaged != nil || r.LogDamage != nil || !r.Clean {
		t.Errorf("after the repair: %+v", r)
	}
	for _, name := range []string{"big", "small", "dir", "replayed"} {
		if _, err := vol.Lookup(volume.Context{}, volume.RootIno, name); err != nil {
			t.Errorf("after the repair: %s: %v", name, err)
		}
	}
	if _, err := vol.Lookup(volume.Context{}, volume.RootIno, "lost"); err == nil {
		t.Error("after the repair: lost, in the lost transactions, is there")
	}
}

// TestFsckBothCheckpointsDamaged: with both checkpoints damaged a mount,
// fsck and fsck --repair all say so, name both, say that fsck cannot
// recover anything, and change nothing.
func TestFsckBothCheckpointsDamaged(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "both.img")
	makeClean(t, img)
	_, older, err := format.ReadSuperblocks(device.NewMemFrom(readImage(t, img)))
	if err != nil || older == nil {
		t.Fatalf("no older superblock: %v", err)
	}
	block := damageNewestCheckpoint(t, img)
	raw := readImage(t, img)
	raw[older.Checkpoint*uint64(older.BlockSize)+format.CheckpointHeaderSize+3] ^= 0x5a
	writeImage(t, img, raw)

	both := []string{"both checkpoints are damaged",
		fmt.Sprintf("newest checkpoint at block %d", block), fmt.Sprintf("older checkpoint at block %d", older.Checkpoint)}
	says := func(out string, more ...string) bool {
		for _, s := range append(both, more...) {
			if !strings.Contains(out, s) {
				return false
			}
		}
		return true
	}
	if err := mountSteps(img); err == nil || !says(err.Error(), "smallfs fsck cannot recover it") {
		t.Errorf("mount: %v", err)
	}
	code, stdout, stderr := runCLI(t, dir, "fsck", img)
	if code != fsckUncorrected || !says(stdout, "fsck cannot recover anything from this volume", "fsck cannot repair them") || strings.Contains(stdout, "--repair fixes") {
		t.Errorf("fsck: exit %d, want %d\n%s%s", code, fsckUncorrected, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, dir, "fsck", "--repair", img)
	if code != fsckUncorrected || !says(stdout, "fsck cannot recover anything from this volume", "fsck cannot repair them") {
		t.Errorf("fsck --repair: exit %d, want %d\n%s%s", code, fsckUncorrected, stdout, stderr)
	}
	if !bytes.Equal(readImage(t, img), raw) {
		t.Error("the image changed")
	}
	t.Log(stdout)
}
