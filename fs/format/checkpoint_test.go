package format

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/iobuf"
)

// bumpAlloc hands out at most maxRun blocks at a time from a cursor,
// skipping a block between extents so they are never adjacent, and records
// what is allocated and freed.
type bumpAlloc struct {
	next, maxRun uint64
	owned        map[uint64]bool
}

func newBumpAlloc(start, maxRun uint64) *bumpAlloc {
	return &bumpAlloc{next: start, maxRun: maxRun, owned: map[uint64]bool{}}
}

func (a *bumpAlloc) alloc(blocks uint64) (uint64, uint64, error) {
	n := min(blocks, a.maxRun)
	start := a.next
	a.next += n + 1
	for b := start; b < start+n; b++ {
		a.owned[b] = true
	}
	return start, n, nil
}

func (a *bumpAlloc) free(start, n uint64) {
	for b := start; b < start+n; b++ {
		if !a.owned[b] {
			panic("free of a block not allocated")
		}
		delete(a.owned, b)
	}
}

func writeCheckpoint(t *testing.T, dev device.Device, a *bumpAlloc, recs []Record, opts CheckpointOptions) CheckpointInfo {
	t.Helper()
	opts.Alloc, opts.Free = a.alloc, a.free
	if opts.BlockSize == 0 {
		opts.BlockSize = 512
	}
	w, err := NewCheckpointWriter(dev, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	info, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func readAll(dev device.Device, info CheckpointInfo, bs uint32) ([]Record, CheckpointInfo, error) {
	var got []Record
	ri, err := ReadCheckpoint(dev, CheckpointLoc{Block: info.Block, BlockSize: bs}, func(r Record) error {
		got = append(got, r)
		return nil
	})
	return got, ri, err
}

func TestCheckpointRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	recs := sampleRecords()
	for range 3000 {
		recs = append(recs, randomRecord(rng))
	}
	for _, tc := range []struct {
		name   string
		maxRun uint64
		bs     uint32
		buf    int
	}{
		{"one-extent", 1 << 20, 4096, 0},
		{"many-extents", 7, 512, 1000},
		{"single-block-extents", 1, 512, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := device.NewMem(64 << 20)
			a := newBumpAlloc(100, tc.maxRun)
			info := writeCheckpoint(t, dev, a, recs, CheckpointOptions{BlockSize: tc.bs, NextSeq: 99, NextGen: 1 << 40, BufferSize: tc.buf})
			got, ri, err := readAll(dev, info, tc.bs)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(recs) || ri.Records != uint64(len(recs)) || ri.NextSeq != 99 || ri.NextGen != 1<<40 || info.NextGen != 1<<40 || ri.PayloadLen != info.PayloadLen {
				t.Fatalf("read %d records (%+v), wrote %d", len(got), ri, len(recs))
			}
			for i := range recs {
				if !sameRecord(got[i], recs[i]) {
					t.Fatalf("record %d differs", i)
				}
			}
			if !slices.Equal(ri.Extents, info.Extents) {
				t.Fatalf("extents read %v, written %v", ri.Extents, info.Extents)
			}
			// Exactly the reported blocks remain allocated: the tail was freed.
			var used uint64
			for _, x := range info.Extents {
				used += x.Len
				for b := x.Start; b < x.End(); b++ {
					if !a.owned[b] {
						t.Fatalf("reported block %d not allocated", b)
					}
				}
			}
			if used != uint64(len(a.owned)) {
				t.Fatalf("%d blocks allocated, %d reported", len(a.owned), used)
			}
			t.Logf("%d records, %d payload bytes, %d extents", len(recs), info.PayloadLen, len(info.Extents))
		})
	}
}

func TestCheckpointEmpty(t *testing.T) {
	dev := device.NewMem(1 << 20)
	info := writeCheckpoint(t, dev, newBumpAlloc(50, 100), nil, CheckpointOptions{NextSeq: 1})
	got, ri, err := readAll(dev, info, 512)
	if err != nil || len(got) != 0 || len(ri.Extents) != 1 || ri.Extents[0].Len != 1 {
		t.Fatalf("empty checkpoint: %v %d %+v", err, len(got), ri)
	}
}

func TestCheckpointCorruption(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var recs []Record
	for range 500 {
		recs = append(recs, randomRecord(rng))
	}
	dev := device.NewMem(8 << 20)
	info := writeCheckpoint(t, dev, newBumpAlloc(40, 5), recs, CheckpointOptions{BufferSize: 700})
	img := dev.Bytes()
	// Flip one byte in the header, in a link header, in the payload of
	// the first, a middle and the last extent: each must be refused.
	spots := []int64{int64(info.Block)*512 + 9, int64(info.Extents[1].Start)*512 + 20}
	for _, i := range []int{0, len(info.Extents) / 2, len(info.Extents) - 1} {
		spots = append(spots, int64(info.Extents[i].Start)*512+100)
	}
	for _, at := range spots {
		img[at] ^= 0x04
		if _, _, err := readAll(dev, info, 512); !errors.Is(err, ErrCorrupt) {
			t.Errorf("flip at %d: %v", at, err)
		}
		img[at] ^= 0x04
	}
	if _, _, err := readAll(dev, info, 512); err != nil {
		t.Fatalf("restored: %v", err)
	}
	if _, err := ReadCheckpoint(dev, CheckpointLoc{Block: 3000, BlockSize: 512}, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("nothing there: %v", err)
	}
	if _, err := ReadCheckpoint(dev, CheckpointLoc{Block: 1 << 40, BlockSize: 512}, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("past the device: %v", err)
	}
	stop := errors.New("stop")
	if _, err := ReadCheckpoint(dev, CheckpointLoc{Block: info.Block, BlockSize: 512}, func(Record) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("callback error: %v", err)
	}
}

// TestCheckpointExtentPastPayload: a header claiming more blocks than its
// payload fills (with checksums right) is refused: the volume would mark
// them used, over whatever owns them.
func TestCheckpointExtentPastPayload(t *testing.T) {
	for _, maxRun := range []uint64{1 << 20, 3} { // the last extent is the first, or a later one
		dev := device.NewMem(8 << 20)
		info := writeCheckpoint(t, dev, newBumpAlloc(40, maxRun), sampleRecords(), CheckpointOptions{})
		last := info.Extents[len(info.Extents)-1]
		b := dev.Bytes()[last.Start*512:]
		h, err := DecodeCheckpointHead(b, uint32(len(info.Extents)-1))
		if err != nil {
			t.Fatal(err)
		}
		h.Len += 2
		h.encode(b) // checksums right
		if _, _, err := readAll(dev, info, 512); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d extents, the last of %d blocks: %v", len(info.Extents), h.Len, err)
		}
	}
}

func TestCheckpointWriterErrors(t *testing.T) {
	if _, err := NewCheckpointWriter(device.NewMem(1<<20), CheckpointOptions{BlockSize: 512}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no alloc: %v", err)
	}
	a := newBumpAlloc(50, 3)
	w, _ := NewCheckpointWriter(device.NewMem(1<<20), CheckpointOptions{BlockSize: 512, Alloc: a.alloc, Free: a.free})
	if err := w.Add(DirentRec{Parent: 1, Ino: 2, Name: "a/b"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid record: %v", err)
	}
	if err := w.Add(InodeFreeRec{Ino: 3}); err != nil {
		t.Errorf("writer unusable after a refused record: %v", err)
	}
	w.Abort()
	if len(a.owned) != 0 {
		t.Errorf("abort kept %d blocks", len(a.owned))
	}

	// A device failure mid-stream: the error surfaces, Abort frees all.
	f := device.NewFaulty(device.NewMem(1 << 20))
	f.FailFrom(device.OpWrite, 2, syscall.EIO)
	a = newBumpAlloc(50, 3)
	w, _ = NewCheckpointWriter(f, CheckpointOptions{BlockSize: 512, Alloc: a.alloc, Free: a.free, BufferSize: 512})
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		err = w.Add(InodeRec{Ino: uint64(i + 1)})
	}
	if err == nil {
		_, err = w.Finish()
	}
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("device failure: %v", err)
	}
	w.Abort()
	if len(a.owned) != 0 {
		t.Errorf("abort after failure kept %d blocks", len(a.owned))
	}

	// An allocator returning nonsense is refused.
	w, _ = NewCheckpointWriter(device.NewMem(1<<20), CheckpointOptions{BlockSize: 512, Alloc: func(uint64) (uint64, uint64, error) { return 0, 1, nil }})
	if err := w.Add(InodeFreeRec{Ino: 3}); !errors.Is(err, ErrInvalid) {
		t.Errorf("allocation over the superblocks: %v", err)
	}
}

func BenchmarkCheckpoint(b *testing.B) {
	const files = 100_000
	recs := make([]Record, 0, 2*files)
	for i := range uint64(files) {
		recs = append(recs, InodeRec{Ino: i + 2, Gen: 1, Mode: 0o100644, Nlink: 1, Size: 4096, Atime: 1e18, Mtime: 1e18, Ctime: 1e18},
			DirentRec{Parent: 1, Ino: i + 2, Cookie: i + 3, Name: "file-0000000"})
	}
	dev := device.NewMem(256 << 20)
	write := func() CheckpointInfo {
		a := newBumpAlloc(100, 1<<30)
		w, _ := NewCheckpointWriter(dev, CheckpointOptions{BlockSize: 4096, Alloc: a.alloc})
		for _, r := range recs {
			w.Add(r)
		}
		info, err := w.Finish()
		if err != nil {
			b.Fatal(err)
		}
		return info
	}
	info := write()
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			write()
		}
		b.ReportMetric(float64(info.PayloadLen)/files, "bytes/file")
	})
	for _, read := range []struct {
		name string
		fn   func(device.Device, CheckpointLoc, func(Record) error) (CheckpointInfo, error)
	}{{"read", ReadCheckpoint}, {"scan", ScanCheckpoint}} {
		b.Run(read.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := read.fn(dev, CheckpointLoc{Block: info.Block, BlockSize: 4096}, func(Record) error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
		})
	}
}

// TestRecordBuffer: records encoded into buffers and added whole, between
// records added directly, read back as the same stream; a record that
// fails its check is not kept, and the buffer hands its error to the
// writer. With a pool, the buffers' chunks and the writer's buffer are
// lent by it and all given back (Release, Finish).
func TestRecordBuffer(t *testing.T) {
	for _, pooled := range []bool{false, true} {
		t.Run(fmt.Sprintf("pooled=%v", pooled), func(t *testing.T) { testRecordBuffer(t, pooled) })
	}
}

func testRecordBuffer(t *testing.T, pooled bool) {
	rng := rand.New(rand.NewPCG(3, 4))
	recs := sampleRecords()
	for range 500 {
		recs = append(recs, randomRecord(rng))
	}
	reg := accounting.NewRegistry()
	var pool *iobuf.Pool
	if pooled {
		var err error
		if pool, err = iobuf.New(iobuf.Options{Registry: reg}); err != nil {
			t.Fatal(err)
		}
	}
	dev := device.NewMem(16 << 20)
	a := newBumpAlloc(100, 5)
	w, err := NewCheckpointWriter(dev, CheckpointOptions{BlockSize: 512, Alloc: a.alloc, Free: a.free, BufferSize: 700, Buffers: pool})
	if err != nil {
		t.Fatal(err)
	}
	var b *RecordBuffer
	for i, r := range recs {
		switch i % 7 {
		case 0, 1, 2: // into the current buffer
			if b == nil {
				b = &RecordBuffer{Pool: pool}
			}
			if err := b.Add(r); err != nil {
				t.Fatal(err)
			}
		default:
			if b != nil {
				if err := w.AddBuffer(b); err != nil {
					t.Fatal(err)
				}
				b.Release()
				if b.Len() != 0 {
					t.Fatalf("released buffer holds %d bytes", b.Len())
				}
				b = nil
			}
			if err := w.Add(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if b != nil {
		if err := w.AddBuffer(b); err != nil {
			t.Fatal(err)
		}
		b.Release()
	}
	info, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if pooled {
		l, _ := reg.Snapshot().Layer("iobuf")
		var gets uint64
		for _, ty := range l.Types {
			gets += ty.Total
			if ty.Live != 0 {
				t.Errorf("iobuf class %s: %d buffers still lent after Release and Finish", ty.Name, ty.Live)
			}
		}
		if gets == 0 {
			t.Error("the pool lent nothing")
		}
	}
	got, ri, err := readAll(dev, info, 512)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) || ri.Records != uint64(len(recs)) || ri.PayloadLen != info.PayloadLen {
		t.Fatalf("read %d records (%+v), wrote %d", len(got), ri, len(recs))
	}
	for i := range recs {
		if !sameRecord(got[i], recs[i]) {
			t.Fatalf("record %d differs", i)
		}
	}

	// Past a chunk: 1.5 MB of records in one buffer.
	var big RecordBuffer
	var bigRecs []Record
	for i := range 30 {
		r := XattrSetRec{Ino: uint64(10 + i), Name: "user.big", Value: make([]byte, 50<<10)}
		r.Value[i] = byte(i)
		bigRecs = append(bigRecs, r)
		if err := big.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if len(big.full) == 0 {
		t.Fatalf("%d bytes in one chunk", big.Len())
	}
	dev2 := device.NewMem(16 << 20)
	wb, err := NewCheckpointWriter(dev2, CheckpointOptions{BlockSize: 4096, Alloc: a.alloc, Free: a.free})
	if err != nil {
		t.Fatal(err)
	}
	if err := wb.AddBuffer(&big); err != nil {
		t.Fatal(err)
	}
	binfo, err := wb.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := readAll(dev2, binfo, 4096); err != nil || len(got) != len(bigRecs) || !sameRecord(got[29], bigRecs[29]) {
		t.Fatalf("a buffer of chunks read back as %d records (%v), want %d", len(got), err, len(bigRecs))
	}

	var bad RecordBuffer
	if err := bad.AddInode(&InodeRec{Ino: 5, Mode: syscall.S_IFREG | 0o644, Nlink: 1}); err != nil {
		t.Fatal(err)
	}
	n := bad.Len()
	if err := bad.AddDirent(&DirentRec{Parent: 1, Ino: 5, Cookie: 3, Name: "a/b"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("entry named a/b: %v, want ErrInvalid", err)
	}
	if bad.Len() != n {
		t.Errorf("a refused record grew the buffer from %d to %d bytes", n, bad.Len())
	}
	w2, err := NewCheckpointWriter(dev, CheckpointOptions{BlockSize: 512, Alloc: a.alloc, Free: a.free})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Abort()
	if err := w2.AddBuffer(&bad); !errors.Is(err, ErrInvalid) {
		t.Errorf("AddBuffer of a buffer that refused a record: %v, want ErrInvalid", err)
	}
}
