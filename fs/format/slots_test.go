package format

import (
	"encoding/binary"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestFindBadSlot: a slot that does not decode beside a valid one is
// found, and told torn when its repeated fields match the valid slot and
// its generation is one from it (or a byte-wise mix of the two
// neighbours, a cut inside the field); damage elsewhere is not torn.
func TestFindBadSlot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte, good *Superblock)
		torn   bool
	}{
		{"next generation, checksum off", func(b []byte, good *Superblock) {
			next := *good
			next.Generation++
			next.LogHead++
			next.Encode(b)
			b[124] ^= 1
		}, true},
		{"older generation, a changing field off", func(b []byte, good *Superblock) { b[90] ^= 0x10 }, true},
		{"generation with a byte of neither neighbour", func(b []byte, good *Superblock) {
			lo, hi := good.Generation-1, good.Generation+1
			g := lo&^0xff | hi&0xff // low byte new, the rest old
			binary.LittleEndian.PutUint64(b[56:], g|1<<40)
		}, false},
		{"generation far off", func(b []byte, good *Superblock) { binary.LittleEndian.PutUint64(b[56:], good.Generation+9) }, false},
		{"uuid", func(b []byte, _ *Superblock) { b[25] ^= 1 }, false},
		{"block size", func(b []byte, _ *Superblock) { b[41] ^= 1 }, false},
		{"log region", func(b []byte, _ *Superblock) { b[80] ^= 1 }, false},
		{"zeros", func(b []byte, _ *Superblock) { clear(b) }, false},
	} {
		dev := device.NewMem(1 << 20)
		sb := testSuperblock()
		sb.Generation = 0x1ff // the neighbours differ in two bytes
		if err := InitSuperblocks(dev, sb); err != nil {
			t.Fatal(err)
		}
		if b, err := FindBadSlot(dev); b != nil || err != nil {
			t.Fatalf("two valid slots: %v %v", b, err)
		}
		other := 1 - sb.Slot
		img := dev.Bytes()[other*SuperblockSlotSize:][:SuperblockSize]
		tc.damage(img, sb)
		b, err := FindBadSlot(dev)
		if err != nil || b == nil {
			t.Fatalf("%s: %v %v", tc.name, b, err)
		}
		if b.Slot != other || b.Good.Slot != sb.Slot || b.Torn != tc.torn {
			t.Errorf("%s: slot %d (good %d) torn %v; want slot %d torn %v: %s", tc.name, b.Slot, b.Good.Slot, b.Torn, other, tc.torn, b)
		}
	}
}

// TestFindBadSlotMixedGeneration: a cut inside the generation field leaves
// each byte the older's or the newer's.
func TestFindBadSlotMixedGeneration(t *testing.T) {
	good := testSuperblock()
	good.Generation = 0x10000 // neighbours 0xffff and 0x10001
	var b [SuperblockSize]byte
	good.Encode(b[:])
	binary.LittleEndian.PutUint64(b[56:], 0xff01) // low byte of 0x10001, the next of 0xffff
	if torn, gen := LooksTorn(b[:], good); !torn || gen != 0xff01 {
		t.Errorf("mixed generation bytes: torn %v gen %#x", torn, gen)
	}
}
