package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

func testSuperblock() *Superblock {
	return &Superblock{
		UUID:      [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		BlockSize: 4096,
		Blocks:    256,
		Log:       BlockRange{Start: 2, Len: 64},
		LogHead:   5,
		LogSeq:    77,
		LogPrev:   0xdeadbeef,
		NextIno:   2,
		// LogDurable is stored as a count above LogSeq.
		LogDurable: 77 + 12345,
		LogWriter:  0xfeedface,
	}
}

// TestSuperblockLogDurable: LogDurable below LogSeq (not recorded) reads
// as LogSeq, and a count past 32 bits is capped, which keeps it a lower
// bound; an image written before the fields reads as nothing recorded.
func TestSuperblockLogDurable(t *testing.T) {
	for _, c := range []struct{ durable, want uint64 }{
		{0, 77},
		{76, 77},
		{77 + 1<<32 + 5, 77 + 1<<32 - 1},
	} {
		sb := testSuperblock()
		sb.Version, sb.LogDurable = FormatVersion, c.durable
		b := make([]byte, SuperblockSize)
		sb.Encode(b)
		got, err := DecodeSuperblock(b)
		if err != nil {
			t.Fatal(err)
		}
		if got.LogDurable != c.want {
			t.Errorf("LogDurable %d read back as %d, want %d", c.durable, got.LogDurable, c.want)
		}
	}
	b := make([]byte, SuperblockSize)
	sb := testSuperblock()
	sb.Version = FormatVersion
	sb.Encode(b)
	clear(b[108:112])
	clear(b[120:124])
	binary.LittleEndian.PutUint32(b[124:], Checksum(b[:124]))
	got, err := DecodeSuperblock(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.LogWriter != 0 || got.LogDurable != got.LogSeq {
		t.Errorf("superblock without the fields: writer %d, durable %d, seq %d", got.LogWriter, got.LogDurable, got.LogSeq)
	}
}

func TestSuperblockRoundTrip(t *testing.T) {
	dev := device.NewMem(1 << 20)
	sb := testSuperblock()
	if err := InitSuperblocks(dev, sb); err != nil {
		t.Fatal(err)
	}
	if sb.Generation != 2 || sb.Version != FormatVersion {
		t.Fatalf("after init: gen %d version %d", sb.Generation, sb.Version)
	}
	got, err := ReadSuperblock(dev)
	if err != nil {
		t.Fatal(err)
	}
	if *got != *sb {
		t.Fatalf("read back\n got %+v\nwant %+v", got, sb)
	}
	for i := range 5 {
		sb.Flags ^= FlagClean
		sb.Checkpoint = uint64(100 + i)
		if err := WriteSuperblock(dev, sb); err != nil {
			t.Fatal(err)
		}
		got, err := ReadSuperblock(dev)
		if err != nil || *got != *sb {
			t.Fatalf("write %d: %v\n got %+v\nwant %+v", i, err, got, sb)
		}
		if got.Slot != int(got.Generation%2) {
			t.Fatalf("slot %d for generation %d", got.Slot, got.Generation)
		}
	}
}

func TestSuperblockFallsBackToOtherSlot(t *testing.T) {
	dev := device.NewMem(1 << 20)
	sb := testSuperblock()
	InitSuperblocks(dev, sb)
	WriteSuperblock(dev, sb) // generation 3, slot B
	dev.Bytes()[SuperblockBOffset+50] ^= 1
	got, err := ReadSuperblock(dev)
	if err != nil || got.Generation != 2 || got.Slot != 0 {
		t.Fatalf("torn newest slot: %v %+v", err, got)
	}
	dev.Bytes()[SuperblockAOffset+60] ^= 1
	_, err = ReadSuperblock(dev)
	if !errors.Is(err, ErrNoValidSuperblock) || !strings.Contains(err.Error(), "superblock A: ") || !strings.Contains(err.Error(), "superblock B: ") {
		t.Fatalf("both bad: %v", err)
	}
}

func TestSuperblockErrors(t *testing.T) {
	if _, err := ReadSuperblock(device.NewMem(1 << 20)); !errors.Is(err, ErrNotSmallfs) {
		t.Errorf("blank device: %v", err)
	}
	if _, err := ReadSuperblock(device.NewMem(4096)); !errors.Is(err, ErrNotSmallfs) {
		t.Errorf("tiny device: %v", err)
	}

	dev := device.NewMem(1 << 20)
	sb := testSuperblock()
	InitSuperblocks(dev, sb)
	newer := *sb
	newer.Version = FormatVersion + 1
	newer.Generation++
	buf := make([]byte, SuperblockSize)
	newer.Encode(buf)
	dev.WriteAt(buf, SuperblockAOffset)
	_, err := ReadSuperblock(dev)
	if !errors.Is(err, ErrNewerVersion) || !strings.Contains(err.Error(), "version 2, this smallfs reads up to 1") {
		t.Errorf("newer version: %v", err)
	}
	feat := *sb
	feat.Features = 1 << 5
	feat.Encode(buf)
	dev.WriteAt(buf, SuperblockAOffset)
	if _, err := ReadSuperblock(dev); !errors.Is(err, ErrUnknownFeature) {
		t.Errorf("unknown feature: %v", err)
	}

	// The device shrank below what the superblock describes.
	dev = device.NewMem(1 << 20)
	sb = testSuperblock()
	InitSuperblocks(dev, sb)
	small := device.NewMemFrom(dev.Bytes()[:128<<10])
	if _, err := ReadSuperblock(small); !errors.Is(err, ErrNoValidSuperblock) {
		t.Errorf("shrunk device: %v", err)
	}
}

func TestWriteSuperblockRefusesAndChangesNothing(t *testing.T) {
	dev := device.NewMem(1 << 20)
	sb := testSuperblock()
	InitSuperblocks(dev, sb)
	before := bytes.Clone(dev.Bytes()[:2*SuperblockSlotSize])
	bad := []func(*Superblock){
		func(s *Superblock) { s.BlockSize = 3000 },
		func(s *Superblock) { s.Log = BlockRange{0, 10} },
		func(s *Superblock) { s.Log.Len = 1 },
		func(s *Superblock) { s.LogHead = s.Log.Len },
		func(s *Superblock) { s.Checkpoint = 3 }, // inside the log
		func(s *Superblock) { s.Blocks = 1 << 40 },
		func(s *Superblock) { s.Features = 1 << 9 },
		func(s *Superblock) { s.Flags = 1 << 7 },
	}
	for i, mutate := range bad {
		s := *sb
		mutate(&s)
		want := s
		if err := WriteSuperblock(dev, &s); !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: %v", i, err)
		}
		if s != want {
			t.Errorf("case %d: superblock changed on error", i)
		}
	}
	if !bytes.Equal(before, dev.Bytes()[:2*SuperblockSlotSize]) {
		t.Fatal("refused writes changed the device")
	}

	f := device.NewFaulty(dev)
	f.FailNth(device.OpWrite, 1, syscall.EIO)
	gen := sb.Generation
	if err := WriteSuperblock(f, sb); !errors.Is(err, syscall.EIO) || sb.Generation != gen {
		t.Errorf("failed write: %v, generation %d -> %d", err, gen, sb.Generation)
	}
}

// TestSuperblockSurvivesCrashes writes superblocks on a crash device and
// checks that every crash leaves a readable superblock, the newest flushed
// one or a newer one.
func TestSuperblockSurvivesCrashes(t *testing.T) {
	c := device.NewCrash(1<<20, 9)
	sb := testSuperblock()
	if err := InitSuperblocks(c, sb); err != nil {
		t.Fatal(err)
	}
	c.KeepHistory()
	for range 6 {
		sb.LogSeq++
		if err := WriteSuperblock(c, sb); err != nil {
			t.Fatal(err)
		}
	}
	for p := 0; p <= c.FlushPoints(); p++ {
		for _, mode := range device.CrashModes {
			m, _ := c.CrashAt(p, mode)
			got, err := ReadSuperblock(m)
			if err != nil {
				t.Fatalf("point %d %v: %v", p, mode, err)
			}
			// Every WriteSuperblock flushes twice: by point p, floor(p/2) are durable.
			if min := uint64(2 + p/2); got.Generation < min {
				t.Fatalf("point %d %v: generation %d < %d", p, mode, got.Generation, min)
			}
		}
	}
}

// TestReadSuperblocksOther: the other slot comes back too while it is
// valid, and not once it is damaged.
func TestReadSuperblocksOther(t *testing.T) {
	dev := device.NewMem(1 << 20)
	sb := testSuperblock()
	if err := InitSuperblocks(dev, sb); err != nil {
		t.Fatal(err)
	}
	sb.Checkpoint = 100
	if err := WriteSuperblock(dev, sb); err != nil {
		t.Fatal(err)
	}
	cur, other, err := ReadSuperblocks(dev)
	if err != nil || cur.Checkpoint != 100 || other == nil || other.Checkpoint != 0 || other.Generation != cur.Generation-1 || other.Slot == cur.Slot {
		t.Fatalf("ReadSuperblocks: %+v, %+v, %v", cur, other, err)
	}
	dev.Bytes()[other.Slot*SuperblockSlotSize+60] ^= 1
	if cur2, other, err := ReadSuperblocks(dev); err != nil || *cur2 != *cur || other != nil {
		t.Fatalf("other slot damaged: %+v, %+v, %v", cur2, other, err)
	}
}

// TestSuperblockShrunkImage: an image shorter than its filesystem says
// how long it should be, whether the cut leaves both slots, one, or less.
func TestSuperblockShrunkImage(t *testing.T) {
	dev := device.NewMem(1 << 20)
	sb := testSuperblock() // 256 blocks of 4 KiB
	if err := InitSuperblocks(dev, sb); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{200 << 10, 8192, 5000} {
		_, err := ReadSuperblock(device.NewMemFrom(bytes.Clone(dev.Bytes()[:size])))
		var shrunk *ShrunkError
		if !errors.As(err, &shrunk) || shrunk.Size != int64(size) || shrunk.Want != 1<<20 || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("image cut to %d bytes: %v", size, err)
		}
		if want := "it was cut short; truncate -s 1048576 brings back its size, not the data cut off"; !strings.Contains(err.Error(), want) {
			t.Errorf("image cut to %d bytes: %q does not say %q", size, err, want)
		}
	}
	if _, err := ReadSuperblock(device.NewMemFrom(bytes.Clone(dev.Bytes()[:100]))); !errors.Is(err, ErrNotSmallfs) {
		t.Fatalf("100 bytes left: %v", err)
	}
}
