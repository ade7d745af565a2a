package format

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/smallfs/smallfs/fs/device"
)

// BadSlot is a superblock slot that does not hold a valid superblock while
// the other slot does (ReadSuperblocks reads past it). Readers lose
// nothing, but until the slot is written again the volume has a single
// superblock and a single checkpoint it can fall back to.
type BadSlot struct {
	Slot   int    // 0 = A
	Reason string // why it does not decode
	// Torn is set when the slot looks like a superblock write cut short by
	// a crash (see LooksTorn); otherwise it was damaged some other way
	// (zeros, bytes of something else, damage to fields every write
	// repeats).
	Torn bool
	// Generation is the generation field as it stands in the slot, when
	// the fields every write repeats are intact; 0 otherwise.
	Generation uint64
	Good       *Superblock // the valid superblock of the other slot
}

func (b BadSlot) String() string {
	s := fmt.Sprintf("superblock %c is damaged (%s)", 'A'+b.Slot, b.Reason)
	if b.Torn {
		s += fmt.Sprintf(": it looks like the write of generation %d cut short by a crash, which the two slots are there to survive", b.Good.Generation+1)
	} else {
		s += fmt.Sprintf(": not as a crash leaves it (fields every superblock write repeats differ from superblock %c's): check the device", 'A'+b.Good.Slot)
	}
	return s + fmt.Sprintf("; superblock %c (generation %d) is the only one left, with nothing to fall back to", 'A'+b.Good.Slot, b.Good.Generation)
}

// FindBadSlot reads both superblock slots of dev and returns the one that
// is not valid while the other is, or nil when both are valid (or neither
// is: then ReadSuperblocks' error says more).
func FindBadSlot(dev device.Device) (*BadSlot, error) {
	if dev.Size() < 2*SuperblockSlotSize {
		return nil, nil
	}
	var raw [2][]byte
	var sbs [2]*Superblock
	var errs [2]error
	for slot := range 2 {
		raw[slot] = make([]byte, SuperblockSize)
		if _, err := dev.ReadAt(raw[slot], int64(slot)*SuperblockSlotSize); err != nil {
			return nil, fmt.Errorf("format: read superblock %c: %w", 'A'+slot, err)
		}
		sbs[slot], errs[slot] = DecodeSuperblock(raw[slot])
		if errs[slot] == nil {
			sbs[slot].Slot = slot
		}
	}
	if (sbs[0] == nil) == (sbs[1] == nil) {
		return nil, nil
	}
	bad := 0
	if sbs[0] != nil {
		bad = 1
	}
	good := sbs[1-bad]
	b := &BadSlot{Slot: bad, Reason: errs[bad].Error(), Good: good}
	b.Torn, b.Generation = LooksTorn(raw[bad], good)
	return b, nil
}

// LooksTorn tells whether the undecodable slot bytes b could be a write of
// the slot cut short by a crash, the other slot holding good. The slot is
// written with the generation after good's (good was current when it was
// written), over the superblock two generations older, which named the
// same volume. Both carry the same fields that every write repeats (magic,
// version, length, features, UUID, block size, size and log region), so
// any mix of the two, however the write was cut, has those intact and a
// generation of good's plus or minus one (or, cut inside the field, a
// mix of the two numbers' bytes); only the fields a write changes and
// the checksum can disagree. Damage of another kind (zeros, another
// format's bytes, a bit flipped in a repeated field) does not look like
// that. A flipped bit in a changing field or in the checksum does, and
// cannot be told from a tear; on a device that writes 512-byte sectors
// whole a 128-byte write cannot tear at all, so there the damage is more
// likely than the crash. It returns the generation field when the
// repeated fields are intact.
func LooksTorn(b []byte, good *Superblock) (bool, uint64) {
	if len(b) < SuperblockSize {
		return false, 0
	}
	var want [SuperblockSize]byte
	good.Encode(want[:])
	le := binary.LittleEndian
	for _, f := range [][2]int{{0, 24}, {24, 40}, {40, 44}, {48, 56}, {72, 88}} { // magic to features, uuid, block size, blocks, log region
		if !bytes.Equal(b[f[0]:f[1]], want[f[0]:f[1]]) {
			return false, 0
		}
	}
	gen := le.Uint64(b[56:])
	lo, hi := good.Generation-1, good.Generation+1
	if gen == lo || gen == hi {
		return true, gen
	}
	// Cut inside the field: each byte is the older's or the newer's.
	for i := range 8 {
		g, l, h := byte(gen>>(8*i)), byte(lo>>(8*i)), byte(hi>>(8*i))
		if g != l && g != h {
			return false, gen
		}
	}
	return true, gen
}
