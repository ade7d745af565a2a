package volume

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/journal"
)

// TestCrashDuringRecoveryMount: a mount that replayed the log after a
// crash crashes in turn before any checkpoint. What the first replay
// brought back is still only in the log, so the second replay must start
// where the first one did (Open once moved the superblock's log start to
// the end of its replay, and the synced file was gone).
func TestCrashDuringRecoveryMount(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	defer v.Close()
	data := pattern(9000, 5)
	ino := writeFile(t, v, RootIno, "synced", data)
	ok(t, v.Sync())

	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	c2 := device.NewCrashFrom(img.Bytes(), 2)
	r, err := Open(c2, Options{CommitInterval: -1})
	ok(t, err)
	defer r.Close() // after the crash image is taken: it changes nothing there
	if r.Recovery().Transactions == 0 {
		t.Fatal("the first recovery replayed nothing")
	}
	img2 := must[*device.Mem](t)(c2.Crash(device.DropUnflushed))
	r2, err := Open(img2, Options{CommitInterval: -1})
	ok(t, err)
	if got := readFile(t, r2, ino); !bytes.Equal(got, data) {
		t.Fatalf("after a crash during the recovery mount the synced file reads %d bytes, want %d", len(got), len(data))
	}
	if !checkOK(t, r2, img2, "after the second crash") {
		return
	}
	ok(t, r2.Close())
}

// damageNewestCheckpoint flips bytes in the payload of the checkpoint the
// newest superblock of img names, and returns the superblocks (newest,
// other) as they were.
func damageNewestCheckpoint(t *testing.T, img *device.Mem) (cur, other *format.Superblock) {
	t.Helper()
	cur, other, err := format.ReadSuperblocks(img)
	ok(t, err)
	if other == nil || other.Checkpoint == cur.Checkpoint {
		t.Fatalf("the slots name checkpoints %d and %v: nothing to fall back to", cur.Checkpoint, other)
	}
	off := cur.Checkpoint*uint64(cur.BlockSize) + format.CheckpointHeaderSize + 3
	for i := range uint64(3) {
		img.Bytes()[off+i] ^= 0x5a
	}
	return cur, other
}

// TestDamagedCheckpointFallsBack: the newest checkpoint is damaged; Open
// loads the older one the other slot names, replays the log from there,
// loses nothing, says so (Recovery.Damaged, a warning), and the next
// checkpoint mends it.
func TestDamagedCheckpointFallsBack(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	defer v.Close()
	files := map[string][]byte{"before": pattern(9000, 1), "small": []byte("inline")}
	inos := map[string]Ino{}
	for name, data := range files {
		inos[name] = writeFile(t, v, RootIno, name, data)
	}
	ok(t, v.Sync())
	ok(t, v.checkpointConcurrent()) // the newest checkpoint: it holds both files
	files["after"] = pattern(20000, 2)
	inos["after"] = writeFile(t, v, RootIno, "after", files["after"])
	ok(t, v.Unlink(root, RootIno, "small"))
	delete(files, "small")
	ok(t, v.Sync())

	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	cur, other := damageNewestCheckpoint(t, img)
	log, hook := logtest.NewNullLogger()
	r, err := Open(img, Options{CommitInterval: -1, Logger: log})
	if err != nil {
		t.Fatalf("open with the newest checkpoint damaged: %v", err)
	}
	d := r.Recovery().Damaged
	if d == nil || d.Block != cur.Checkpoint || d.Slot != cur.Slot || d.Loaded != other.Checkpoint || d.LoadedSlot != other.Slot {
		t.Fatalf("Recovery.Damaged = %+v, want checkpoint %d (slot %d) damaged, %d (slot %d) loaded", d, cur.Checkpoint, cur.Slot, other.Checkpoint, other.Slot)
	}
	warned := false
	for _, e := range hook.AllEntries() {
		warned = warned || e.Level == logrus.WarnLevel && strings.Contains(e.Message, "checkpoint is damaged")
	}
	if !warned {
		t.Error("no warning logged about the damaged checkpoint")
	}
	check := func(r *Volume, when string) {
		t.Helper()
		for name, data := range files {
			if got := readFile(t, r, inos[name]); !bytes.Equal(got, data) {
				t.Fatalf("%s: %s reads %d bytes, want %d", when, name, len(got), len(data))
			}
		}
		if _, err := r.Lookup(root, RootIno, "small"); err == nil {
			t.Fatalf("%s: the unlinked file is back", when)
		}
		checkOK(t, r, img, when)
	}
	check(r, "after the fallback")
	ok(t, r.Close())

	r, err = Open(img.Reopen(), Options{CommitInterval: -1})
	ok(t, err)
	if d := r.Recovery().Damaged; d != nil {
		t.Errorf("after a close the damage is still reported: %v", d)
	}
	check(r, "after the close")
	ok(t, r.Close())
}

// TestDamagedCheckpointRefusedWhenLogShort: the newest checkpoint covers
// a transaction that never reached the log (a checkpoint is written before
// the log it covers), so the older checkpoint and the log cannot stand in
// for it: Open refuses, naming both, and writes nothing.
func TestDamagedCheckpointRefusedWhenLogShort(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	defer v.Close()
	writeFile(t, v, RootIno, "synced", pattern(9000, 1))
	ok(t, v.Sync())
	writeFile(t, v, RootIno, "only-in-the-checkpoint", pattern(9000, 2))
	v.mu.Lock()
	err = v.checkpoint(false)
	v.mu.Unlock()
	ok(t, err)

	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	intact := bytes.Clone(img.Bytes())
	r, err := Open(device.NewMemFrom(intact), Options{CommitInterval: -1})
	ok(t, err) // undamaged, the image is fine
	ok(t, r.Close())

	cur, other := damageNewestCheckpoint(t, img)
	before := bytes.Clone(img.Bytes())
	_, err = Open(img, Options{CommitInterval: -1})
	if err == nil || !IsCorrupt(err) {
		t.Fatalf("open with the newest checkpoint damaged and the log short: %v", err)
	}
	for _, want := range []string{fmt.Sprintf("checkpoint at block %d", cur.Checkpoint), fmt.Sprintf("older checkpoint at block %d", other.Checkpoint), "would be lost"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !bytes.Equal(img.Bytes(), before) {
		t.Error("the refused open changed the image")
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("error %v is not ErrCorrupt", err)
	}
	t.Log(err)
}

// TestFirstCommitWritesSecondCheckpoint: after Open both slots name the
// checkpoint it loaded; the first periodic commit writes a second one, so
// a crash after it with the newest checkpoint damaged loses nothing.
func TestFirstCommitWritesSecondCheckpoint(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	defer v.Close()
	a := writeFile(t, v, RootIno, "a", pattern(9000, 1))
	ok(t, v.commitNow()) // the first periodic commit
	gen := must[*format.Superblock](t)(format.ReadSuperblock(c)).Generation
	b := writeFile(t, v, RootIno, "b", pattern(7000, 2))
	ok(t, v.commitNow()) // the log is far from half full: no checkpoint
	if g := must[*format.Superblock](t)(format.ReadSuperblock(c)).Generation; g != gen {
		t.Errorf("the second periodic commit wrote a superblock (generation %d, was %d)", g, gen)
	}

	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	sb := must[*format.Superblock](t)(format.ReadSuperblock(img))
	img.Bytes()[sb.Checkpoint*uint64(sb.BlockSize)+format.CheckpointHeaderSize+3] ^= 0x5a
	r, err := Open(img, Options{CommitInterval: -1})
	if err != nil {
		t.Fatalf("open after the first commit with the newest checkpoint damaged: %v", err)
	}
	defer r.Close()
	if r.Recovery().Damaged == nil {
		t.Error("Recovery.Damaged not set")
	}
	for ino, data := range map[Ino][]byte{a: pattern(9000, 1), b: pattern(7000, 2)} {
		if got := readFile(t, r, ino); !bytes.Equal(got, data) {
			t.Fatalf("inode %d reads %d bytes, want %d", ino, len(got), len(data))
		}
	}
	checkOK(t, r, img, "after the fallback")
}

// logChunks lists the log blocks of the chunks replay would read from the
// superblock of img on, in order.
func logChunks(t *testing.T, img *device.Mem) (*format.Superblock, []uint64) {
	t.Helper()
	sb := must[*format.Superblock](t)(format.ReadSuperblock(img))
	bs := uint64(sb.BlockSize)
	var out []uint64
	for pos, seq := sb.LogHead, sb.LogSeq; len(out) < int(sb.Log.Len); {
		h, err := format.ParseChunkHeader(img.Bytes()[(sb.Log.Start+pos)*bs:])
		if err != nil || h.Seq != seq {
			break
		}
		out = append(out, pos)
		seq += uint64(h.Txns)
		pos = (pos + uint64(format.ChunkSize(int(h.PayloadLen), sb.BlockSize))/bs) % sb.Log.Len
	}
	return sb, out
}

// TestLogDamagedMidway: a chunk in the middle of the log is damaged. Open
// refuses (the committed transactions after it would be lost silently);
// with Salvage it keeps what is before the damage and names what is lost.
func TestLogDamagedMidway(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	defer v.Close()
	var inos []Ino
	for i := range 3 {
		inos = append(inos, writeFile(t, v, RootIno, fmt.Sprint("f", i), pattern(5000, byte(i))))
		ok(t, v.Sync()) // a commit each
	}
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	sb, chunks := logChunks(t, img)
	if len(chunks) != 3 {
		t.Fatalf("log chunks at %v, want one per commit", chunks)
	}
	img.Bytes()[(sb.Log.Start+chunks[1])*uint64(sb.BlockSize)+format.ChunkHeaderSize+2] ^= 0xff

	before := bytes.Clone(img.Bytes())
	_, err = Open(img, Options{CommitInterval: -1})
	if !errors.Is(err, journal.ErrLogDamaged) || !IsCorrupt(err) {
		t.Fatalf("open of a log damaged midway: %v, want ErrLogDamaged", err)
	}
	if !bytes.Equal(img.Bytes(), before) {
		t.Error("the refused open changed the image")
	}

	r, err := Open(img, Options{CommitInterval: -1, Salvage: true})
	if err != nil {
		t.Fatalf("salvage: %v", err)
	}
	d := r.Recovery().LogDamage
	if d == nil || d.Block != chunks[1] || d.First >= d.Last {
		t.Fatalf("salvage: Recovery.LogDamage = %+v", d)
	}
	if got := readFile(t, r, inos[0]); !bytes.Equal(got, pattern(5000, 0)) {
		t.Error("salvage: the file before the damage differs")
	}
	for _, name := range []string{"f1", "f2"} {
		if _, err := r.Lookup(root, RootIno, name); err == nil {
			t.Errorf("salvage: %s, committed after the damage, is there", name)
		}
	}
	checkOK(t, r, img, "after the salvage")
	ok(t, r.Close())
	r, err = Open(img.Reopen(), Options{CommitInterval: -1})
	ok(t, err)
	if d := r.Recovery().LogDamage; d != nil {
		t.Errorf("after the salvage and a close: %v", d)
	}
	ok(t, r.Close())
}
