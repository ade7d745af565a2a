package volume

import "hash/maphash"

// nameHash is the hash of a name in a directory index; a variable so
// tests can make names collide.
var nameHash = func(name string) uint64 { return maphash.String(nameSeed, name) }

// nameIndex is a directory's hash index from name to position in its
// ents: open addressing with linear probing, one uint64 a slot, holding
// the position + 1 in the low 32 bits (0: an empty slot) and the upper
// 32 bits of the name's hash above, which also pick the slot (scaled to
// the table, which need not be a power of two). A probe compares the
// stored hash bits first and the name in ents only on a match, so names
// whose hashes collide are told apart by the names themselves. At most
// 4/5 of the slots are used; removal shifts the following entries back
// instead of leaving tombstones. It costs 8 bytes a slot: 10 a name in a
// directory loaded from a checkpoint, 10 to 20 in one that grew, where a
// Go map from hash to position cost about 37.
type nameIndex struct {
	slots []uint64
	n     int // names held
}

const (
	indexMinSlots = 32
	indexLoadNum  = 4 // at most indexLoadNum/indexLoadDen of the slots are used
	indexLoadDen  = 5
)

// newNameIndex makes an index with room for n names.
func newNameIndex(n int) *nameIndex {
	return &nameIndex{slots: make([]uint64, indexSlotsFor(n))}
}

// indexSlotsFor is the slots that hold n names.
func indexSlotsFor(n int) int {
	return max(indexMinSlots, (n*indexLoadDen+indexLoadNum-1)/indexLoadNum+1)
}

func tagOf(h uint64) uint64 { return h >> 32 }

// home is the slot a name of hash bits tag is placed from: tag scaled
// to the table.
func (x *nameIndex) home(tag uint64) int { return int(tag * uint64(len(x.slots)) >> 32) }

// next is the slot after i, wrapping around.
func (x *nameIndex) next(i int) int {
	if i++; i == len(x.slots) {
		return 0
	}
	return i
}

// dist is how many slots on from a b is, wrapping around.
func (x *nameIndex) dist(a, b int) int {
	if d := b - a; d >= 0 {
		return d
	}
	return b - a + len(x.slots)
}

// find returns the position of name (hash h) in ents, or -1, and the
// slot where the probe ended (the name's, or the empty one).
func (x *nameIndex) find(ents []dent, name string, h uint64) (pos, slot int) {
	tag := tagOf(h)
	for i := x.home(tag); ; i = x.next(i) {
		s := x.slots[i]
		if s == 0 {
			return -1, i
		}
		if s>>32 == tag {
			if p := int(uint32(s)) - 1; ents[p].name == name {
				return p, i
			}
		}
	}
}

// add records name (hash h, not in the index) at position p of ents.
func (x *nameIndex) add(ents []dent, name string, h uint64, p int) {
	if (x.n+1)*indexLoadDen > len(x.slots)*indexLoadNum {
		x.grow()
	}
	_, i := x.find(ents, name, h)
	x.slots[i] = tagOf(h)<<32 | uint64(p+1)
	x.n++
}

// grow doubles the slots, placing every name again from its stored hash
// bits.
func (x *nameIndex) grow() {
	old := x.slots
	x.slots = make([]uint64, 2*len(old))
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := x.home(s >> 32)
		for x.slots[i] != 0 {
			i = x.next(i)
		}
		x.slots[i] = s
	}
}

// remove drops name (hash h) and reports whether it was there.
func (x *nameIndex) remove(ents []dent, name string, h uint64) bool {
	p, i := x.find(ents, name, h)
	if p < 0 {
		return false
	}
	x.deleteSlot(i)
	x.n--
	return true
}

// deleteSlot empties slot i and moves back each following entry of the
// run whose home slot would then no longer reach it.
func (x *nameIndex) deleteSlot(i int) {
	for j := x.next(i); x.slots[j] != 0; j = x.next(j) {
		// The entry at j may move to i if its home is not in (i, j],
		// cyclically.
		if x.dist(x.home(x.slots[j]>>32), j) >= x.dist(i, j) {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = 0
}
