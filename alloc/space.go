package alloc

import (
	"fmt"

	"github.com/smallfs/smallfs/internal/invariants"
)

// space is a set of free extents held in both indexes, always coalesced:
// extents are disjoint and never adjacent. Callers validate extents first;
// space trusts them. The zero value is empty.
type space struct {
	byOff  offSet
	bySize sizeSet
	blocks uint64 // sum of the lengths
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
	s.blocks += e.Len
	mergeRight := hasRight && right.Off == e.End()
	if mergeRight {
		s.byOff.remove(right)
		s.bySize.remove(right)
		e.Len += right.Len
	}
	if hasLeft && left.End() == e.Off {
		e = Extent{Off: left.Off, Len: left.Len + e.Len}
		s.byOff.resize(e)
		s.bySize.remove(left)
	} else {
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
	s.blocks -= p.Len
	s.bySize.remove(f)
	if p.Off > f.Off {
		head := Extent{Off: f.Off, Len: p.Off - f.Off}
		s.byOff.resize(head)
		s.bySize.insert(head)
	} else {
		s.byOff.remove(f)
	}
	if p.End() < f.End() {
		tail := Extent{Off: p.End(), Len: f.End() - p.End()}
		s.byOff.insert(tail)
		s.bySize.insert(tail)
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
