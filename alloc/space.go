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

func (s *space) insert(e Extent) {
	s.byOff.insert(e)
	s.bySize.insert(e)
	s.blocks += e.Len
}

func (s *space) remove(e Extent) {
	s.byOff.remove(e)
	s.bySize.remove(e)
	s.blocks -= e.Len
}

// add frees e, merging it with the free extents that touch it. e must not
// overlap free space.
func (s *space) add(e Extent) {
	if left, ok := s.byOff.atOrBefore(e.Off); ok && left.End() == e.Off {
		s.remove(left)
		e = Extent{Off: left.Off, Len: left.Len + e.Len}
	}
	if right, ok := s.byOff.after(e.Off); ok && right.Off == e.End() {
		s.remove(right)
		e.Len += right.Len
	}
	s.insert(e)
	if invariants.Enabled {
		s.checkAround(e)
	}
}

// carve allocates p out of the free extent f that contains it, putting back
// what is left on either side.
func (s *space) carve(f, p Extent) {
	if invariants.Enabled && !f.contains(p) {
		panic(fmt.Sprintf("alloc: carving %v out of %v", p, f))
	}
	s.remove(f)
	if p.Off > f.Off {
		s.insert(Extent{Off: f.Off, Len: p.Off - f.Off})
	}
	if p.End() < f.End() {
		s.insert(Extent{Off: p.End(), Len: f.End() - p.End()})
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
