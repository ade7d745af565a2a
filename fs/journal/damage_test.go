package journal

import (
	"errors"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// threeCommits writes transactions 1-3, one commit (and one one-block
// chunk, at log blocks 0-2) each.
func threeCommits(t *testing.T, opts Options) *device.Mem {
	t.Helper()
	dev := device.NewMem(128 << 10)
	j := mustOpen(t, dev, opts)
	for i := uint64(1); i <= 3; i++ {
		mustAppend(t, j, dataTxn(t, dev, i, 100+i, byte(i)))
		if err := j.Sync(i); err != nil {
			t.Fatal(err)
		}
	}
	return dev
}

// damageChunk flips a payload byte of the chunk at log block b.
func damageChunk(dev *device.Mem, opts Options, b uint64) {
	dev.Bytes()[(opts.Region.Start+b)*uint64(opts.BlockSize)+50] ^= 0xff
}

// TestReplayLogDamagedMidway: a chunk in the middle of the log fails its
// checksum while a later commit is intact past it. That is damage, not the
// end of the log: Replay fails with ErrLogDamaged naming what is lost, or
// with Salvage keeps what is before it.
func TestReplayLogDamagedMidway(t *testing.T) {
	opts := dataSumOpts()
	dev := threeCommits(t, opts)
	damageChunk(dev, opts, 1)

	_, _, err := Replay(dev, opts, func(uint64, []format.Record) error { return nil })
	var de *DamageError
	if !errors.Is(err, ErrLogDamaged) || !errors.As(err, &de) {
		t.Fatalf("replay of a log damaged in its middle: %v, want ErrLogDamaged", err)
	}
	if want := (Damage{Block: 1, Seq: 2, Last: 3, ProofBlock: 2, ProofSeq: 3}); de.Damage != want {
		t.Errorf("damage %+v, want %+v", de.Damage, want)
	}

	o := opts
	o.Salvage = true
	var got *Damage
	o.OnDamaged = func(d Damage) { got = &d }
	seqs, head, next := replayAll(t, dev, o)
	if len(seqs) != 1 || next != 2 || head.Block != 1 {
		t.Fatalf("salvage: replayed %v, head %d, next %d; want [1], 1, 2", seqs, head.Block, next)
	}
	if got == nil || *got != de.Damage {
		t.Errorf("salvage: OnDamaged(%v), want %+v", got, de.Damage)
	}
}

// TestReplayDamagedLastCommitEndsLog: damage to the last commit looks like
// a torn write (nothing later proves it had been durable) and ends the
// log, as does any damage on a log without commit marks (no DataSums).
func TestReplayDamagedLastCommitEndsLog(t *testing.T) {
	opts := dataSumOpts()
	dev := threeCommits(t, opts)
	damageChunk(dev, opts, 2)
	if seqs, _, next := replayAll(t, dev, opts); len(seqs) != 2 || next != 3 {
		t.Fatalf("last commit damaged: replayed %v, next %d; want [1 2], 3", seqs, next)
	}

	opts.DataSums = false
	dev = threeCommits(t, opts)
	damageChunk(dev, opts, 1)
	if seqs, _, next := replayAll(t, dev, opts); len(seqs) != 1 || next != 2 {
		t.Fatalf("no commit marks: replayed %v, next %d; want [1], 2", seqs, next)
	}
}
