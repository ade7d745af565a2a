package format

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// writeTestCheckpoint writes recs as a checkpoint on a fresh device.
func writeTestCheckpoint(t *testing.T, recs []Record) (device.Device, CheckpointLoc) {
	t.Helper()
	dev := device.NewMem(64 << 20)
	info := writeCheckpoint(t, dev, newBumpAlloc(DataStart(4096), 1<<30), recs, CheckpointOptions{BlockSize: 4096})
	return dev, CheckpointLoc{Block: info.Block, BlockSize: 4096}
}

// TestScanCheckpoint: ScanCheckpoint hands over the records ReadCheckpoint
// does, the hot types by pointer.
func TestScanCheckpoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := sampleRecords()
	for range 5000 {
		recs = append(recs, randomRecord(rng))
	}
	dev, loc := writeTestCheckpoint(t, recs)
	var read, scanned []Record
	if _, err := ReadCheckpoint(dev, loc, func(r Record) error { read = append(read, r); return nil }); err != nil {
		t.Fatal(err)
	}
	pointers := 0
	if _, err := ScanCheckpoint(dev, loc, func(r Record) error {
		switch r.(type) {
		case *InodeRec, *DirentRec, *ExtentsRec:
			pointers++
		}
		scanned = append(scanned, kept(r))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read, scanned) {
		t.Fatal("ScanCheckpoint and ReadCheckpoint disagree")
	}
	if pointers == 0 {
		t.Fatal("no record came by pointer")
	}
}

// kept is a record a scanner handed over, by value and with nothing the
// scanner reuses: what a caller that keeps it would make of it.
func kept(r Record) Record {
	if b, ok := r.(*BlockSumsRec); ok {
		return BlockSumsRec{Block: b.Block, Sums: slices.Clone(b.Sums)}
	}
	return deref(r)
}

// TestScanCheckpointAllocs: beyond extent maps, scanning allocates per
// block of names and per read buffer, not per record.
func TestScanCheckpointAllocs(t *testing.T) {
	const files = 20000
	recs := make([]Record, 0, 2*files)
	for i := range uint64(files) {
		recs = append(recs, InodeRec{Ino: i + 2, Gen: 1, Mode: 0o100644, Nlink: 1},
			DirentRec{Parent: 1, Ino: i + 2, Cookie: i + 3, Name: fmt.Sprintf("file-%07d", i)})
	}
	dev, loc := writeTestCheckpoint(t, recs)
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := ScanCheckpoint(dev, loc, func(Record) error { return nil }); err != nil {
			t.Fatal(err)
		}
	})
	if per := allocs / float64(len(recs)); per > 0.01 {
		t.Fatalf("%.0f allocations for %d records: %.3f per record, want at most 0.01", allocs, len(recs), per)
	}
}

// TestTxnScanner: the scanner hands over what DecodeTxns does, the hot
// types by pointer, and a warm scanner allocates nothing for them.
func TestTxnScanner(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var txns [][]Record
	for range 300 {
		txn := make([]Record, 1+rng.IntN(6))
		for i := range txn {
			txn[i] = randomRecord(rng)
		}
		txns = append(txns, txn)
	}
	txns = append(txns, sampleRecords())
	_, payload, err := CheckChunk(chunkOnly(buildChunk(ChunkHeader{Seq: 1}, txns, 4096)))
	if err != nil {
		t.Fatal(err)
	}
	var s TxnScanner
	err = s.Scan(payload, uint32(len(txns)), func(i int, recs []Record) error {
		if len(recs) != len(txns[i]) {
			return fmt.Errorf("txn %d: %d records, want %d", i, len(recs), len(txns[i]))
		}
		for k, r := range recs {
			if !sameRecord(deref(r), txns[i][k]) {
				return fmt.Errorf("txn %d record %d: %#v, want %#v", i, k, r, txns[i][k])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A replay-like transaction: unlink (entry removed, parent and child
	// inodes set, child freed) and create (inode, entry, parent).
	hot := [][]Record{
		{DirentDelRec{Parent: 1, Name: "gone"}, InodeRec{Ino: 1, Mode: 0o40755, Nlink: 2}, InodeFreeRec{Ino: 7}},
		{InodeRec{Ino: 8, Mode: 0o100644, Nlink: 1}, DirentRec{Parent: 1, Ino: 8, Cookie: 9, Name: "new"}, InodeRec{Ino: 1, Mode: 0o40755, Nlink: 2}},
	}
	_, payload, err = CheckChunk(chunkOnly(buildChunk(ChunkHeader{Seq: 1}, hot, 4096)))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	scan := func() {
		if err := s.Scan(payload, 2, func(_ int, recs []Record) error { seen += len(recs); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	scan()
	// One name interned per scan: an arena block every few thousand.
	if allocs := testing.AllocsPerRun(100, scan); allocs > 0.1 {
		t.Fatalf("%.2f allocations per scan of two transactions", allocs)
	}
	if seen == 0 {
		t.Fatal("nothing scanned")
	}
}

func chunkOnly(b []byte, _ uint32) []byte { return b }
