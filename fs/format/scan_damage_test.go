package format

import (
	"errors"
	"fmt"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestScanCheckpointDamageInOrder: a record damaged deep into a large
// checkpoint ends ScanCheckpoint where it ends ReadCheckpoint: fn sees
// exactly the records before the damaged one, and the error is the same,
// whether the frame is damaged or the body; an error of fn stops it
// there.
func TestScanCheckpointDamageInOrder(t *testing.T) {
	const files = 30000
	var recs []Record
	for i := range uint64(files) {
		recs = append(recs, InodeRec{Ino: i + 2, Gen: 1, Mode: 0o100644, Nlink: 1, Size: i},
			DirentRec{Parent: 1, Ino: i + 2, Cookie: i + 3, Name: fmt.Sprintf("file-%07d", i)})
	}
	// Offsets of the records in the payload.
	offs := make([]int, len(recs))
	off := 0
	for i, r := range recs {
		offs[i] = off
		off += len(AppendRecord(nil, r))
	}
	if off < readChunkSize {
		t.Fatalf("payload of %d bytes: want more than one read", off)
	}
	count := func(read func(device.Device, CheckpointLoc, func(Record) error) (CheckpointInfo, error), dev device.Device, loc CheckpointLoc, stopAt int) (int, error) {
		n := 0
		_, err := read(dev, loc, func(Record) error {
			n++
			if n == stopAt {
				return errStop
			}
			return nil
		})
		return n, err
	}
	for _, c := range []struct {
		name string
		rec  int  // record whose first byte is replaced
		typ  byte // the new type byte
	}{
		{"frame", 2*20000 + 1, 0xee},              // an unknown type
		{"body", 2*25000 + 1, byte(RecInodeFree)}, // a dirent's body read as an inode free: trailing bytes
		{"first", 0, 0xee},
	} {
		t.Run(c.name, func(t *testing.T) {
			dev := device.NewMem(64 << 20)
			info := writeCheckpoint(t, dev, newBumpAlloc(DataStart(4096), 1<<30), recs, CheckpointOptions{BlockSize: 4096, SizeHint: uint64(off)})
			if len(info.Extents) != 1 {
				t.Fatalf("%d extents, want 1", len(info.Extents))
			}
			loc := CheckpointLoc{Block: info.Block, BlockSize: 4096}
			at := int64(info.Block)*4096 + CheckpointHeaderSize + int64(offs[c.rec])
			if _, err := dev.WriteAt([]byte{c.typ}, at); err != nil {
				t.Fatal(err)
			}
			nRead, errRead := count(ReadCheckpoint, dev, loc, -1)
			nScan, errScan := count(ScanCheckpoint, dev, loc, -1)
			if nRead != c.rec || nScan != c.rec {
				t.Errorf("records before the damage: ReadCheckpoint %d, ScanCheckpoint %d, want %d", nRead, nScan, c.rec)
			}
			if !errors.Is(errScan, ErrCorrupt) || errRead == nil || errScan.Error() != errRead.Error() {
				t.Errorf("errors: ReadCheckpoint %v, ScanCheckpoint %v", errRead, errScan)
			}
		})
	}
	dev, loc := writeTestCheckpoint(t, recs)
	for _, stopAt := range []int{1, 12345, len(recs)} {
		if n, err := count(ScanCheckpoint, dev, loc, stopAt); n != stopAt || !errors.Is(err, errStop) {
			t.Errorf("fn failing at record %d: %d records, %v", stopAt, n, err)
		}
	}
}

var errStop = errors.New("stop")
