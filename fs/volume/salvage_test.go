package volume

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/journal"
)

// shortLog is an image whose newest checkpoint is damaged and whose log
// after the older checkpoint falls short of it.
type shortLog struct {
	img        *device.Mem
	cur, other *format.Superblock // the damaged newest checkpoint's, the older one's
	kept       map[string][]byte  // in the older checkpoint or the log after it
	lost       []string           // only in the damaged checkpoint or the log after it
	first      uint64             // the first transaction lost
	last       uint64             // the last committed transaction
}

// shortLogImage builds one: "in-older" is in the older checkpoint,
// "replayed" in the log after it, "lost" only in the newest checkpoint (a
// checkpoint is written before the log it covers, which never got there).
// With after > 0, that many commits follow the newest checkpoint ("after",
// "after1", ..., in the log from its position) and the log chunk of
// "lost", which the first of them writes, is then wiped, so that the log
// after the older checkpoint ends there: as a torn write with one commit
// (the chunk begins it), as damage before the end of the log with more
// (a later commit of the same journal instance is intact past it).
func shortLogImage(t *testing.T, mk MkfsOptions, after int) shortLog {
	t.Helper()
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, mk))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	defer v.Close()
	s := shortLog{kept: map[string][]byte{"in-older": pattern(9000, 1), "replayed": pattern(7000, 2)}}
	writeFile(t, v, RootIno, "in-older", s.kept["in-older"])
	ok(t, v.Sync())
	ok(t, v.checkpointConcurrent()) // the older checkpoint
	writeFile(t, v, RootIno, "replayed", s.kept["replayed"])
	ok(t, v.Sync())
	pos, first := v.j.Mark()
	s.first = first
	writeFile(t, v, RootIno, "lost", pattern(5000, 3))
	s.lost = append(s.lost, "lost")
	v.mu.Lock()
	err = v.checkpoint(false) // the newest checkpoint
	v.mu.Unlock()
	ok(t, err)
	for i := range after {
		name := "after" + fmt.Sprint(i)
		writeFile(t, v, RootIno, name, pattern(3000, byte(4+i)))
		s.lost = append(s.lost, name)
		ok(t, v.Sync())
	}
	_, end := v.j.Mark()
	s.last = end - 1

	s.img = must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	if after > 0 {
		sb := must[*format.Superblock](t)(format.ReadSuperblock(s.img))
		bs := uint64(sb.BlockSize)
		clear(s.img.Bytes()[(sb.Log.Start+pos.Block)*bs:][:bs])
	}
	s.cur, s.other = damageNewestCheckpoint(t, s.img)
	return s
}

// TestShortLogFallbackSalvaged: the newest checkpoint is damaged and the
// log after the older one falls short of it. Open refuses and writes
// nothing; with Salvage it keeps the older checkpoint and what the log
// replays, names the transactions lost (through the end of the log after
// the damaged checkpoint), and after Close the volume opens without
// Salvage, whole, also after a crash before that Close.
func TestShortLogFallbackSalvaged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		mk    MkfsOptions
		after int
	}{
		{"checkpoint-only", MkfsOptions{}, 0},
		{"log-after", MkfsOptions{}, 1},
		{"log-after-no-sums", MkfsOptions{NoDataSums: true}, 1},
		{"log-damaged", MkfsOptions{}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := shortLogImage(t, tc.mk, tc.after)
			before := bytes.Clone(s.img.Bytes())
			_, err := Open(s.img, Options{CommitInterval: -1})
			if !IsCorrupt(err) {
				t.Fatalf("open without salvage: %v, want ErrCorrupt", err)
			}
			logDamaged := tc.after > 1 && !tc.mk.NoDataSums
			if !logDamaged { // else the log damage refuses first
				if !errors.Is(err, ErrCheckpointLoss) {
					t.Errorf("open without salvage: %v, want ErrCheckpointLoss", err)
				}
				if want := fmt.Sprintf("transactions %d-%d would be lost", s.first, s.last); !strings.Contains(err.Error(), want) {
					t.Errorf("open without salvage: %v, does not say %q", err, want)
				}
			} else if !errors.Is(err, journal.ErrLogDamaged) {
				t.Errorf("open without salvage: %v, want ErrLogDamaged", err)
			}
			if !bytes.Equal(s.img.Bytes(), before) {
				t.Fatal("the refused open changed the image")
			}

			c := device.NewCrashFrom(bytes.Clone(before), 1)
			r, err := Open(c, Options{CommitInterval: -1, Salvage: true})
			if err != nil {
				t.Fatalf("open with salvage: %v", err)
			}
			d := r.Recovery().Damaged
			if ld := r.Recovery().LogDamage; logDamaged != (ld != nil) {
				t.Errorf("Recovery.LogDamage = %v, want it set: %v", ld, logDamaged)
			}
			if d == nil || !d.Lost || d.LostFirst != s.first || d.LostLast != s.last || d.Block != s.cur.Checkpoint || d.Loaded != s.other.Checkpoint {
				t.Fatalf("Recovery.Damaged = %+v, want checkpoint %d damaged, %d loaded, transactions %d-%d lost", d, s.cur.Checkpoint, s.other.Checkpoint, s.first, s.last)
			}
			if want := fmt.Sprintf("committed transactions %d-%d are lost", s.first, s.last); !strings.Contains(d.String(), want) {
				t.Errorf("damage %q does not say %q", d, want)
			}
			check := func(r *Volume, dev *device.Mem, when string) {
				t.Helper()
				for name, data := range s.kept {
					a, err := r.Lookup(root, RootIno, name)
					if err != nil {
						t.Fatalf("%s: %s: %v", when, name, err)
					}
					if got := readFile(t, r, a.Ino); !bytes.Equal(got, data) {
						t.Fatalf("%s: %s reads %d bytes, want %d", when, name, len(got), len(data))
					}
				}
				for _, name := range s.lost {
					if _, err := r.Lookup(root, RootIno, name); err == nil {
						t.Errorf("%s: %s, in the lost transactions, is there", when, name)
					}
				}
				checkOK(t, r, dev, when)
			}
			check(r, must[*device.Mem](t)(c.Crash(device.DropUnflushed)), "after the salvage")
			// A crash before the fresh checkpoint: what the salvaged
			// volume committed replays over the older checkpoint, and
			// the stale log past it (the lost transactions) does not.
			s.kept["new"] = pattern(4000, 5)
			writeFile(t, r, RootIno, "new", s.kept["new"])
			ok(t, r.Sync())
			crashed := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
			ok(t, r.Close())
			closed := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
			for when, img := range map[string]*device.Mem{"after a crash": crashed, "after the close": closed} {
				r, err := Open(img, Options{CommitInterval: -1})
				if err != nil {
					t.Fatalf("%s, open without salvage: %v", when, err)
				}
				if rec := r.Recovery(); rec.Damaged != nil || rec.LogDamage != nil {
					t.Errorf("%s: damage still reported: %v %v", when, rec.Damaged, rec.LogDamage)
				}
				check(r, img, when)
				ok(t, r.Close())
			}
		})
	}
}

// TestBothCheckpointsDamaged: with both checkpoints damaged nothing
// holds the metadata: Open says so, naming both, with or without Salvage,
// and writes nothing.
func TestBothCheckpointsDamaged(t *testing.T) {
	s := shortLogImage(t, MkfsOptions{}, 0)
	off := s.other.Checkpoint*uint64(s.other.BlockSize) + format.CheckpointHeaderSize + 3
	s.img.Bytes()[off] ^= 0x5a
	before := bytes.Clone(s.img.Bytes())
	for _, salvage := range []bool{false, true} {
		_, err := Open(s.img, Options{CommitInterval: -1, Salvage: salvage})
		if !errors.Is(err, ErrNoCheckpoint) || !IsCorrupt(err) {
			t.Fatalf("salvage %v: %v, want ErrNoCheckpoint and ErrCorrupt", salvage, err)
		}
		for _, want := range []string{"both checkpoints are damaged",
			fmt.Sprintf("newest checkpoint at block %d (superblock %c)", s.cur.Checkpoint, 'A'+s.cur.Slot),
			fmt.Sprintf("older checkpoint at block %d (superblock %c)", s.other.Checkpoint, 'A'+s.other.Slot)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("salvage %v: %q does not say %q", salvage, err, want)
			}
		}
		if !bytes.Equal(s.img.Bytes(), before) {
			t.Fatalf("salvage %v: the refused open changed the image", salvage)
		}
		t.Log(err)
	}
}

// TestOnlyCheckpointDamaged: both slots name one checkpoint (as after
// Open, before the first periodic commit), and it is damaged: Open says
// there is nothing to fall back to.
func TestOnlyCheckpointDamaged(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	defer v.Close()
	writeFile(t, v, RootIno, "a", pattern(9000, 1))
	ok(t, v.Sync())
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	sb := must[*format.Superblock](t)(format.ReadSuperblock(img))
	img.Bytes()[sb.Checkpoint*uint64(sb.BlockSize)+format.CheckpointHeaderSize+3] ^= 0x5a
	_, err = Open(img, Options{CommitInterval: -1, Salvage: true})
	if !errors.Is(err, ErrNoCheckpoint) || !strings.Contains(err.Error(), "no older checkpoint to fall back to") {
		t.Fatalf("open: %v, want ErrNoCheckpoint saying there is no older checkpoint", err)
	}
	t.Log(err)
}
