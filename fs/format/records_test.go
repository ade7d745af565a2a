package format

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// sampleRecords has one record of every type, with edge values.
func sampleRecords() []Record {
	return []Record{
		InodeRec{Ino: 1, Gen: 7, Mode: 0o40755, Nlink: 2, UID: 1000, GID: math.MaxUint32, Rdev: 0, Flags: 3, Size: 4096,
			Atime: 1_700_000_000_123_456_789, Mtime: -5, Ctime: math.MaxInt64},
		InodeFreeRec{Ino: math.MaxUint64},
		DirentRec{Parent: 1, Ino: 2, Cookie: 3, Name: strings.Repeat("n", MaxNameLen)},
		DirentDelRec{Parent: 1, Name: "x"},
		ExtentsRec{Ino: 5, Extents: []Extent{{0, 100, 1}, {1, 50, 2}, {10, math.MaxUint64 - 3, 3}}},
		ExtentsRec{Ino: 5},
		InlineRec{Ino: 9, Data: []byte("tiny file")},
		InlineRec{Ino: 9, Data: []byte{}},
		XattrSetRec{Ino: 9, Name: "user.k", Value: bytes.Repeat([]byte{1}, MaxXattrValueLen)},
		XattrDelRec{Ino: 9, Name: "user.k"},
		SymlinkRec{Ino: 4, Target: "../a/b"},
		DataSumRec{Ino: 4, Ranges: []SumRange{{Block: 100, Len: 1, CRC: 0xdeadbeef}, {Block: math.MaxUint64 - 1, Len: 1, CRC: 0}}},
		BlockSumsRec{Block: 7, Sums: []uint32{0xdeadbeef, 0, 1}},
		BlockSumsRec{Block: math.MaxUint64 - 1, Sums: []uint32{42}},
	}
}

// randomRecord returns a valid record of a random type.
func randomRecord(rng *rand.Rand) Record {
	name := func() string {
		b := make([]byte, 1+rng.IntN(20))
		for i := range b {
			b[i] = byte('a' + rng.IntN(26))
		}
		return string(b)
	}
	ino := func() uint64 { return 1 + rng.Uint64N(1<<uint(rng.IntN(64))) }
	switch rng.IntN(11) {
	case 9:
		sums := make([]uint32, 1+rng.IntN(20))
		for i := range sums {
			sums[i] = rng.Uint32()
		}
		return BlockSumsRec{Block: 1 + rng.Uint64N(1<<40), Sums: sums}
	case 0:
		return InodeRec{Ino: ino(), Gen: rng.Uint64(), Mode: rng.Uint32(), Nlink: rng.Uint32(), UID: rng.Uint32(),
			GID: rng.Uint32(), Rdev: rng.Uint32(), Flags: rng.Uint32(), Size: rng.Uint64(),
			Atime: int64(rng.Uint64()), Mtime: int64(rng.Uint64()), Ctime: int64(rng.Uint64())}
	case 1:
		return InodeFreeRec{Ino: ino()}
	case 2:
		return DirentRec{Parent: ino(), Ino: ino(), Cookie: rng.Uint64(), Name: name()}
	case 3:
		return DirentDelRec{Parent: ino(), Name: name()}
	case 4:
		xs := make([]Extent, rng.IntN(5))
		var log uint64
		for i := range xs {
			xs[i] = Extent{Logical: log + rng.Uint64N(10), Physical: rng.Uint64N(1 << 40), Len: 1 + rng.Uint64N(100)}
			log = xs[i].Logical + xs[i].Len
		}
		return ExtentsRec{Ino: ino(), Extents: xs}
	case 5:
		d := make([]byte, rng.IntN(100))
		for i := range d {
			d[i] = byte(rng.Uint32())
		}
		return InlineRec{Ino: ino(), Data: d}
	case 6:
		return XattrSetRec{Ino: ino(), Name: name(), Value: []byte(name())}
	case 7:
		return XattrDelRec{Ino: ino(), Name: name()}
	case 8:
		xs := make([]SumRange, 1+rng.IntN(4))
		for i := range xs {
			xs[i] = SumRange{Block: rng.Uint64N(1 << 40), Len: 1 + rng.Uint64N(100), CRC: rng.Uint32()}
		}
		return DataSumRec{Ino: ino(), Ranges: xs}
	}
	return SymlinkRec{Ino: ino(), Target: name() + "/" + name()}
}

// sameRecord compares records treating nil and empty slices alike.
func sameRecord(a, b Record) bool {
	return reflect.DeepEqual(AppendRecord(nil, a), AppendRecord(nil, b)) && a.Type() == b.Type()
}

func TestRecordRoundTrip(t *testing.T) {
	recs := sampleRecords()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		recs = append(recs, randomRecord(rng))
	}
	var stream []byte
	for _, r := range recs {
		if err := Validate(r); err != nil {
			t.Fatalf("%#v: %v", r, err)
		}
		stream = AppendRecord(stream, r)
	}
	for i, want := range recs {
		got, n, err := DecodeRecord(stream)
		if err != nil {
			t.Fatalf("record %d (%v): %v", i, want.Type(), err)
		}
		if !reflect.DeepEqual(got, want) && !sameRecord(got, want) {
			t.Fatalf("record %d:\n got %#v\nwant %#v", i, got, want)
		}
		stream = stream[n:]
	}
	if len(stream) != 0 {
		t.Fatalf("%d bytes left", len(stream))
	}
}

func TestRecordByPointer(t *testing.T) {
	v := DirentRec{Parent: 1, Ino: 2, Cookie: 3, Name: "p"}
	if !bytes.Equal(AppendRecord(nil, &v), AppendRecord(nil, v)) || Validate(&v) != nil {
		t.Fatal("pointer and value encode differently")
	}
	// The unboxed encoders give AppendRecord's bytes, short and long
	// bodies alike (a long one moves to make room for its length).
	for _, r := range sampleRecords() {
		var got []byte
		switch r := r.(type) {
		case InodeRec:
			got = AppendInode([]byte{9}, &r)
		case DirentRec:
			got = AppendDirent([]byte{9}, &r)
		case ExtentsRec:
			got = AppendExtents([]byte{9}, &r)
		default:
			continue
		}
		if want := AppendRecord([]byte{9}, r); !bytes.Equal(got, want) {
			t.Fatalf("%v: unboxed encoder gives %x, want %x", r.Type(), got, want)
		}
	}
	long := ExtentsRec{Ino: 3, Extents: make([]Extent, 100)}
	for i := range long.Extents {
		long.Extents[i] = Extent{Logical: uint64(2 * i), Physical: uint64(1000 * i), Len: 1}
	}
	b := AppendExtents(nil, &long)
	if got, n, err := DecodeRecord(b); err != nil || n != len(b) || !reflect.DeepEqual(got, long) {
		t.Fatalf("long extent map: %v, %d of %d bytes", err, n, len(b))
	}
}

type alienRecord struct{}

func (alienRecord) Type() RecType { return 200 }

func TestValidateRejects(t *testing.T) {
	bad := []Record{
		nil,
		alienRecord{},
		InodeRec{},
		DirentRec{Parent: 1, Ino: 2, Name: ""},
		DirentRec{Parent: 1, Ino: 2, Name: strings.Repeat("n", MaxNameLen+1)},
		DirentRec{Parent: 1, Ino: 2, Name: "a/b"},
		DirentRec{Parent: 1, Ino: 2, Name: ".."},
		DirentRec{Parent: 1, Ino: 2, Name: "a\x00"},
		DirentDelRec{Parent: 0, Name: "a"},
		ExtentsRec{Ino: 1, Extents: []Extent{{0, 1, 0}}},
		ExtentsRec{Ino: 1, Extents: []Extent{{5, 1, 1}, {5, 9, 1}}},
		ExtentsRec{Ino: 1, Extents: []Extent{{5, 1, 2}, {6, 9, 1}}},
		ExtentsRec{Ino: 1, Extents: []Extent{{math.MaxUint64, 1, 2}}},
		InlineRec{Ino: 1, Data: make([]byte, MaxInlineLen+1)},
		XattrSetRec{Ino: 1, Name: "", Value: nil},
		XattrSetRec{Ino: 1, Name: "a", Value: make([]byte, MaxXattrValueLen+1)},
		XattrDelRec{Ino: 1, Name: strings.Repeat("x", 256)},
		SymlinkRec{Ino: 1, Target: ""},
		SymlinkRec{Ino: 1, Target: strings.Repeat("x", MaxSymlinkLen+1)},
		DataSumRec{Ino: 1},
		DataSumRec{Ino: 1, Ranges: []SumRange{{Block: 1, Len: 0}}},
		DataSumRec{Ino: 1, Ranges: []SumRange{{Block: math.MaxUint64, Len: 2}}},
		DataSumRec{Ino: 0, Ranges: []SumRange{{Block: 1, Len: 1}}},
		BlockSumsRec{Block: 1},
		BlockSumsRec{Block: 0, Sums: []uint32{1}},
		BlockSumsRec{Block: math.MaxUint64, Sums: []uint32{1, 2}},
		BlockSumsRec{Block: 1, Sums: make([]uint32, MaxBlockSums+1)},
	}
	for _, r := range bad {
		if err := Validate(r); !errors.Is(err, ErrInvalid) {
			t.Errorf("%#v: %v", r, err)
		}
	}
	if got := AppendRecord([]byte{9}, alienRecord{}); !bytes.Equal(got, []byte{9}) {
		t.Errorf("unknown record appended %v", got)
	}
}

// TestDecodeRejects feeds truncations and bit flips of valid records: every
// result is a clean error wrapping ErrCorrupt or a record that validates.
func TestDecodeRejects(t *testing.T) {
	for _, r := range sampleRecords() {
		enc := AppendRecord(nil, r)
		for n := range len(enc) {
			if _, _, err := DecodeRecord(enc[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v truncated to %d: %v", r.Type(), n, err)
			}
		}
		for i := range min(len(enc), 64) {
			for bit := range 8 {
				b := bytes.Clone(enc)
				b[i] ^= 1 << bit
				got, _, err := DecodeRecord(b)
				if err != nil && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("flip: %v", err)
				}
				if err == nil && Validate(got) != nil {
					t.Fatalf("flip decoded an invalid record %#v", got)
				}
			}
		}
	}
	// A name the encoder would refuse is refused on decode too.
	enc := AppendRecord(nil, DirentRec{Parent: 1, Ino: 2, Name: "ab"})
	enc[len(enc)-1] = '/'
	if _, _, err := DecodeRecord(enc); !errors.Is(err, ErrCorrupt) {
		t.Errorf("slash in name: %v", err)
	}
}

func TestInodeRecordIsCompact(t *testing.T) {
	now := int64(1_700_000_000_000_000_000)
	r := InodeRec{Ino: 123456, Gen: 1, Mode: 0o100644, Nlink: 1, UID: 1000, GID: 1000, Size: 4096, Atime: now, Mtime: now, Ctime: now}
	if n := len(AppendRecord(nil, r)); n > 32 {
		t.Errorf("typical inode record takes %d bytes, want <= 32", n)
	}
}

func BenchmarkRecord(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	recs := make([]Record, 1024)
	for i := range recs {
		recs[i] = randomRecord(rng)
	}
	var buf []byte
	b.Run("append", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			buf = AppendRecord(buf[:0], recs[i%len(recs)])
		}
	})
	b.Run("decode", func(b *testing.B) {
		encs := make([][]byte, len(recs))
		for i, r := range recs {
			encs[i] = AppendRecord(nil, r)
		}
		for i := 0; b.Loop(); i++ {
			if _, _, err := DecodeRecord(encs[i%len(encs)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
