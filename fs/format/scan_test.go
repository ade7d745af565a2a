package format

import (
	"fmt"
	"math/rand/v2"
	"reflect"
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
		scanned = append(scanned, deref(r))
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
