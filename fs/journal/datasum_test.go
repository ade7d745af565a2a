package journal

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// dataTxn writes one block of data for transaction seq at block and
// returns testTxn's transaction with the DataSumRec naming it.
func dataTxn(t *testing.T, dev device.Device, seq, block uint64, fill byte) []format.Record {
	t.Helper()
	b := bytes.Repeat([]byte{fill}, testBS)
	if _, err := dev.WriteAt(b, int64(block)*testBS); err != nil {
		t.Fatal(err)
	}
	return []format.Record{
		format.InodeRec{Ino: seq, Size: seq * 3},
		format.DataSumRec{Ino: seq, Ranges: []format.SumRange{{Block: block, Len: 1, CRC: format.Checksum(b)}}},
	}
}

func dataSumOpts() Options {
	o := testOpts(40)
	o.DataSums = true
	return o
}

func TestDataSumsOneFlushPerCommit(t *testing.T) {
	dev := device.NewFaulty(device.NewMem(128 << 10))
	j := mustOpen(t, dev, dataSumOpts())
	for i := uint64(1); i <= 3; i++ {
		mustAppend(t, j, dataTxn(t, dev, i, 100+i, byte(i)))
		if err := j.Sync(i); err != nil {
			t.Fatal(err)
		}
	}
	if n := dev.Count(device.OpFlush); n != 3 {
		t.Errorf("3 commits with data took %d flushes, want 3", n)
	}
}

// Only the last commit is checked: a commit followed by another had
// flushed before the next one wrote anything.
func TestDataSumsReplayDropsLastCommitWithoutData(t *testing.T) {
	dev := device.NewMem(128 << 10)
	opts := dataSumOpts()
	j := mustOpen(t, dev, opts)
	for i := uint64(1); i <= 2; i++ {
		mustAppend(t, j, dataTxn(t, dev, i, 100+i, byte(i)))
		if err := j.Sync(i); err != nil {
			t.Fatal(err)
		}
	}
	if seqs, _, next := replayAll(t, dev, opts); len(seqs) != 2 || next != 3 {
		t.Fatalf("intact: replayed %v, next %d", seqs, next)
	}

	dev.WriteAt([]byte("lost"), 102*testBS) // the last commit's data did not land
	var from, n uint64
	o := opts
	o.OnDropped = func(f, k uint64) { from, n = f, k }
	seqs, head, next := replayAll(t, dev, o)
	if len(seqs) != 1 || next != 2 {
		t.Fatalf("last commit's data lost: replayed %v, next %d; want [1], 2", seqs, next)
	}
	if from != 2 || n != 1 {
		t.Errorf("OnDropped(%d, %d), want (2, 1)", from, n)
	}
	dev.WriteAt([]byte("lost"), 101*testBS) // not the last commit: not checked
	if seqs, _, _ := replayAll(t, dev, opts); len(seqs) != 1 {
		t.Fatalf("earlier commit's data changed: replayed %v, want [1]", seqs)
	}

	// A new run continues where the dropped commit was.
	o = opts
	o.Head, o.NextSeq = head, next
	j2 := mustOpen(t, dev, o)
	mustAppend(t, j2, dataTxn(t, dev, 2, 110, 9))
	if err := j2.Sync(2); err != nil {
		t.Fatal(err)
	}
	if seqs, _, next := replayAll(t, dev, opts); len(seqs) != 2 || next != 3 {
		t.Fatalf("after the new run: replayed %v, next %d; want [1 2], 3", seqs, next)
	}
}

// A commit of several chunks keeps the chunks before the first one whose
// data is missing.
func TestDataSumsDropFromFirstBadChunk(t *testing.T) {
	dev := device.NewMem(128 << 10)
	opts := dataSumOpts()
	opts.ChunkSize = 16 // every transaction seals its own chunk
	j := mustOpen(t, dev, opts)
	for i := uint64(1); i <= 3; i++ {
		mustAppend(t, j, dataTxn(t, dev, i, 100+i, byte(i)))
	}
	if err := j.Sync(3); err != nil {
		t.Fatal(err)
	}
	dev.WriteAt([]byte("lost"), 102*testBS)
	if seqs, _, next := replayAll(t, dev, opts); len(seqs) != 1 || next != 2 {
		t.Fatalf("replayed %v, next %d; want [1], 2", seqs, next)
	}
}

// TestDataSumsCrash writes a data block per transaction with no barrier
// before its commit and crashes at every flush point in every mode:
// replay must give a run including every synced transaction, and every
// transaction it gives must find its data on the device.
func TestDataSumsCrash(t *testing.T) {
	for seed := range int64(8) {
		c := device.NewCrash(640*testBS, seed)
		opts := testOpts(400)
		opts.DataSums = true
		c.KeepHistory()
		j := mustOpen(t, c, opts)
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		durable := []uint64{0} // durable[p]: synced by flush point p
		fills := map[uint64]byte{}
		for i := uint64(1); i <= 60; i++ {
			fills[i] = byte(rng.Uint32())
			mustAppend(t, j, dataTxn(t, c, i, 500+i, fills[i]))
			if rng.IntN(3) == 0 {
				if err := j.Sync(i); err != nil {
					t.Fatal(err)
				}
				for len(durable) <= c.FlushPoints() {
					durable = append(durable, durable[len(durable)-1])
				}
				durable[c.FlushPoints()] = i
			}
		}
		for p := 0; p <= c.FlushPoints(); p++ {
			for _, mode := range device.CrashModes {
				m, err := c.CrashAt(p, mode)
				if err != nil {
					t.Fatal(err)
				}
				seqs, _, _ := replayAll(t, m, opts)
				expectRun(t, seqs, 1)
				if d := durable[min(p, len(durable)-1)]; uint64(len(seqs)) < d {
					t.Fatalf("seed %d point %d %v: replayed %d transactions, %d were synced", seed, p, mode, len(seqs), d)
				}
				got := make([]byte, testBS)
				for _, s := range seqs {
					m.ReadAt(got, int64(500+s)*testBS)
					if !bytes.Equal(got, bytes.Repeat([]byte{fills[s]}, testBS)) {
						t.Fatalf("seed %d point %d %v: transaction %d replayed without its data", seed, p, mode, s)
					}
				}
			}
		}
	}
}
