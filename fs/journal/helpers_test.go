package journal

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

const testBS = 512

// testOpts is a log of blocks blocks starting at block 16.
func testOpts(blocks uint64) Options {
	return Options{Region: format.BlockRange{Start: 16, Len: blocks}, BlockSize: testBS, NextSeq: 1, Head: Position{Prev: 0x5eed}}
}

// testTxn is transaction seq of a workload: its first record names seq, so
// replay output identifies itself; size varies with rng.
func testTxn(seq uint64, rng *rand.Rand, maxExtra int) []format.Record {
	txn := []format.Record{format.InodeRec{Ino: seq, Size: seq * 3}}
	for i := range rng.IntN(maxExtra + 1) {
		txn = append(txn, format.DirentRec{Parent: seq, Ino: uint64(i + 1), Name: fmt.Sprintf("entry-%d-%d", seq, i)})
	}
	return txn
}

// replayAll replays from opts and returns the sequence numbers seen,
// checking each transaction is the one testTxn made for it.
func replayAll(t *testing.T, dev device.Device, opts Options) ([]uint64, Position, uint64) {
	t.Helper()
	var seqs []uint64
	head, next, err := Replay(dev, opts, func(seq uint64, txn []format.Record) error {
		if r, ok := txn[0].(format.InodeRec); !ok || r.Ino != seq || r.Size != seq*3 {
			return fmt.Errorf("transaction %d starts with %#v", seq, txn[0])
		}
		seqs = append(seqs, seq)
		return nil
	})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return seqs, head, next
}

// expectRun fails unless seqs is from, from+1, ..., from+len-1.
func expectRun(t *testing.T, seqs []uint64, from uint64) {
	t.Helper()
	for i, s := range seqs {
		if s != from+uint64(i) {
			t.Fatalf("replayed %v: not a run from %d", seqs, from)
		}
	}
}

func mustOpen(t *testing.T, dev device.Device, opts Options) *Journal {
	t.Helper()
	j, err := Open(dev, opts)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func mustAppend(t *testing.T, j *Journal, txn []format.Record) uint64 {
	t.Helper()
	seq, err := j.Append(txn)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

func seqRange(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}
