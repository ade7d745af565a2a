package format

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// The fuzz targets read their seeds from testdata/fuzz/<Name>/, written by
// `go test -run TestFuzzSeeds -update-seeds ./fs/format`. Plain `go test`
// runs each target over its seeds; fuzz by hand with
// `go test -run XXX -fuzz FuzzRecord -fuzztime 10m ./fs/format`.

var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz seeds")

// corruptOnly fails unless err wraps one of the format's decode sentinels.
func corruptOnly(t *testing.T, err error) {
	t.Helper()
	for _, s := range []error{ErrCorrupt, ErrNotSmallfs, ErrNewerVersion, ErrUnknownFeature} {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error wraps no format sentinel: %v", err)
}

func FuzzSuperblock(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		sb, err := DecodeSuperblock(b)
		if err != nil {
			corruptOnly(t, err)
			return
		}
		enc := make([]byte, SuperblockSize)
		sb.Encode(enc)
		again, err := DecodeSuperblock(enc)
		if err != nil || !reflect.DeepEqual(sb, again) {
			t.Fatalf("decode(encode(x)) != x: %v\n%+v\n%+v", err, sb, again)
		}
	})
}

func FuzzRecord(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := DecodeRecord(b)
		if err != nil {
			corruptOnly(t, err)
			return
		}
		if n <= 0 || n > len(b) || Validate(r) != nil {
			t.Fatalf("decoded %d of %d bytes, validate %v", n, len(b), Validate(r))
		}
		again, _, err := DecodeRecord(AppendRecord(nil, r))
		if err != nil || !sameRecord(r, again) {
			t.Fatalf("decode(encode(x)) != x: %v\n%#v\n%#v", err, r, again)
		}
		// The streaming decoder agrees whatever the split.
		var got []Record
		s := recordStream{fn: func(r Record) error { got = append(got, r); return nil }}
		split := int(b[0]) % (n + 1)
		if err := s.feed(b[:split]); err != nil {
			t.Fatalf("stream, first piece: %v", err)
		}
		if err := s.feed(b[split:n]); err != nil || len(got) != 1 || len(s.carry) != 0 || !sameRecord(got[0], r) {
			t.Fatalf("stream: %v, %d records, %d carried", err, len(got), len(s.carry))
		}
	})
}

func FuzzChunk(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		h, payload, err := CheckChunk(b)
		if err != nil {
			corruptOnly(t, err)
			return
		}
		var txns [][]Record
		err = DecodeTxns(payload, h.Txns, func(_ int, recs []Record) error {
			txns = append(txns, recs)
			return nil
		})
		if err != nil {
			corruptOnly(t, err)
			return
		}
		re, _ := buildChunk(h, txns, MinBlockSize)
		h2, _, err := CheckChunk(re)
		if err != nil || h2.Seq != h.Seq || h2.Txns != h.Txns || h2.Prev != h.Prev || h2.Flags != h.Flags {
			t.Fatalf("decode(encode(x)) != x: %v %+v %+v", err, h, h2)
		}
	})
}

func FuzzCheckpointHead(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte, index uint32) {
		h, err := DecodeCheckpointHead(b, index)
		if err != nil {
			corruptOnly(t, err)
			return
		}
		enc := make([]byte, CheckpointHeaderSize)
		h.Index = index
		h.encode(enc)
		again, err := DecodeCheckpointHead(enc, index)
		if err != nil || again != h {
			t.Fatalf("decode(encode(x)) != x: %v\n%+v\n%+v", err, h, again)
		}
	})
}

// FuzzCheckpoint reads a whole checkpoint from a fuzzed image: no panic,
// and every failure is corruption.
func FuzzCheckpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, img []byte) {
		if len(img) < 2*SuperblockSlotSize+MinBlockSize {
			return
		}
		dev := device.NewMemFrom(img)
		loc := CheckpointLoc{Block: DataStart(MinBlockSize), BlockSize: MinBlockSize}
		var read, scanned []Record
		_, err := ReadCheckpoint(dev, loc, func(r Record) error { read = append(read, r); return nil })
		if err != nil {
			corruptOnly(t, err)
		}
		// ScanCheckpoint decodes the same bytes the same way.
		_, serr := ScanCheckpoint(dev, loc, func(r Record) error { scanned = append(scanned, kept(r)); return nil })
		if (err == nil) != (serr == nil) || !reflect.DeepEqual(read, scanned) {
			t.Fatalf("ReadCheckpoint: %v, %d records; ScanCheckpoint: %v, %d records", err, len(read), serr, len(scanned))
		}
	})
}

// TestFuzzSeeds writes the seed corpora from valid encodings, with -update-seeds.
func TestFuzzSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("run with -update-seeds to rewrite testdata/fuzz")
	}
	write := func(target string, i int, args ...any) {
		dir := filepath.Join("testdata", "fuzz", target)
		os.MkdirAll(dir, 0o755)
		s := "go test fuzz v1\n"
		for _, a := range args {
			switch a := a.(type) {
			case []byte:
				s += fmt.Sprintf("[]byte(%q)\n", a)
			case uint32:
				s += fmt.Sprintf("uint32(%d)\n", a)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Superblocks: a fresh one and one with a checkpoint, clean.
	dev := device.NewMem(1 << 20)
	sb := testSuperblock()
	InitSuperblocks(dev, sb)
	write("FuzzSuperblock", 0, append([]byte(nil), dev.Bytes()[:SuperblockSize]...))
	sb.Checkpoint, sb.Flags = 200, FlagClean
	WriteSuperblock(dev, sb)
	write("FuzzSuperblock", 1, append([]byte(nil), dev.Bytes()[SuperblockBOffset:SuperblockBOffset+SuperblockSize]...))
	// One record of every type.
	for i, r := range sampleRecords() {
		if len(AppendRecord(nil, r)) < 4096 {
			write("FuzzRecord", i, AppendRecord(nil, r))
		}
	}
	// Chunks: a wrap chunk and one with transactions.
	w := make([]byte, ChunkHeaderSize)
	SealChunk(w, ChunkHeader{Flags: ChunkFlagWrap, Seq: 3, Prev: 1})
	write("FuzzChunk", 0, w)
	rng := rand.New(rand.NewPCG(1, 1))
	c, _ := buildChunk(ChunkHeader{Seq: 10, Prev: 2, Nonce: 3}, [][]Record{{randomRecord(rng), randomRecord(rng)}, {randomRecord(rng)}}, MinBlockSize)
	write("FuzzChunk", 1, c)
	// A checkpoint of a few records over three extents: its image
	// (from DataStart) and the headers.
	img := device.NewMem(32 << 10)
	a := newBumpAlloc(DataStart(MinBlockSize), 2)
	var recs []Record
	for range 120 {
		recs = append(recs, randomRecord(rng))
	}
	info := writeCheckpoint(t, img, a, recs, CheckpointOptions{BlockSize: MinBlockSize, NextSeq: 5})
	if len(info.Extents) < 3 {
		t.Fatalf("seed checkpoint has %d extents", len(info.Extents))
	}
	write("FuzzCheckpoint", 0, append([]byte(nil), img.Bytes()...))
	for i, x := range info.Extents[:2] {
		off := int(x.Start) * MinBlockSize
		write("FuzzCheckpointHead", i, append([]byte(nil), img.Bytes()[off:off+CheckpointHeaderSize]...), uint32(i))
	}
}
