package alloc

import (
	"fmt"
	"math"

	"github.com/smallfs/smallfs/internal/invariants"
)

// space is a set of free extents held in both indexes, always coalesced:
// extents are disjoint and never adjacent. Callers validate extents first;
// space trusts them. The zero value is empty; init makes it ready for
// inserts.
type space struct {
	byOff  offSet
	bySize sizeSet
	blocks uint64 // sum of the lengths
	log    *[]op  // while a compaction runs, where add and carve record themselves
}

// init creates both indexes empty, keeping emptied nodes in nodes.
func (s *space) init(nodes *nodeList) {
	s.byOff.init(nodes)
	s.bySize.init(nodes)
}

// op is one mutation of free space recorded while a compaction runs, to be
// replayed onto the new indexes: the carve of piece out of extent from, or,
// when from is addOp, the free of piece (both as offset keys).
type op struct{ from, piece uint64 }

// addOp marks a free: no extent has this offset key (it would start at
// block 2^32-1 with 2^32 blocks).
const addOp = math.MaxUint64

// replay applies recorded mutations. They were valid on a space that held
// the same extents, so they are valid here.
func (s *space) replay(ops []op) {
	for _, o := range ops {
		p := fromOffKey(o.piece)
		if o.from != addOp {
			s.carve(fromOffKey(o.from), p)
		} else if f, ok := s.add(p); !ok && invariants.Enabled {
			panic(fmt.Sprintf("alloc: replayed free of %v overlaps %v", p, f))
		}
	}
}

func (s *space) extents() int { return s.byOff.len() }

// add frees e, merging it with the free extents that touch it. If e
// overlaps free space it changes nothing and returns the extent it
// overlaps.
func (s *space) add(e Extent) (overlap Extent, ok bool) {
	left, right, hasLeft, hasRight := s.byOff.around(e)
	if hasLeft && left.End() > e.Off {
		return left, false
	}
	if hasRight && right.Off < e.End() {
		return right, false
	}
	if s.log != nil {
		*s.log = append(*s.log, op{from: addOp, piece: offKey(e)})
	}
	s.blocks += e.Len
	mergeLeft := hasLeft && left.End() == e.Off
	mergeRight := hasRight && right.Off == e.End()
	switch {
	case mergeLeft && mergeRight:
		s.byOff.remove(right)
		s.bySize.remove(right)
		s.bySize.remove(left)
		e = Extent{Off: left.Off, Len: left.Len + e.Len + right.Len}
		s.byOff.resize(e)
	case mergeLeft:
		s.bySize.remove(left)
		e = Extent{Off: left.Off, Len: left.Len + e.Len}
		s.byOff.resize(e)
	case mergeRight:
		s.bySize.remove(right)
		e.Len += right.Len
		s.byOff.resize(e)
	default:
		s.byOff.insert(e)
	}
	s.bySize.insert(e)
	if invariants.Enabled {
		s.checkAround(e)
	}
	return Extent{}, true
}

// carve allocates p out of the free extent f that contains it, putting back
// what is left on either side.
func (s *space) carve(f, p Extent) {
	if invariants.Enabled && !f.contains(p) {
		panic(fmt.Sprintf("alloc: carving %v out of %v", p, f))
	}
	if s.log != nil {
		*s.log = append(*s.log, op{from: offKey(f), piece: offKey(p)})
	}
	s.blocks -= p.Len
	s.bySize.remove(f)
	head := Extent{Off: f.Off, Len: p.Off - f.Off}
	tail := Extent{Off: p.End(), Len: f.End() - p.End()}
	// The offset index keeps f's key in place for one remainder (see offLess).
	switch {
	case head.Len > 0:
		s.byOff.resize(head)
		s.bySize.insert(head)
		if tail.Len > 0 {
			s.byOff.insert(tail)
			s.bySize.insert(tail)
		}
	case tail.Len > 0:
		s.byOff.resize(tail)
		s.bySize.insert(tail)
	default:
		s.byOff.remove(f)
	}
}

// checkAround panics if e is not in both indexes or touches a neighbour.
func (s *space) checkAround(e Extent) {
	if f, ok := s.byOff.atOrBefore(e.Off); !ok || f != e {
		panic(fmt.Sprintf("alloc: %v missing from the offset index", e))
	}
	if f, _, ok, _ := s.bySize.sameLenNear(e.Len, e.Off); !ok || f != e {
		panic(fmt.Sprintf("alloc: %v missing from the size index", e))
	}
	if e.Off > 0 {
		if f, ok := s.byOff.atOrBefore(e.Off - 1); ok && f.End() >= e.Off {
			panic(fmt.Sprintf("alloc: %v not coalesced with %v", f, e))
		}
	}
	if f, ok := s.byOff.after(e.Off); ok && f.Off <= e.End() {
		panic(fmt.Sprintf("alloc: %v not coalesced with %v", e, f))
	}
	if s.byOff.len() != s.bySize.len() {
		panic(fmt.Sprintf("alloc: indexes hold %d and %d extents", s.byOff.len(), s.bySize.len()))
	}
}
