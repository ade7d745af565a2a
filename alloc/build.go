package alloc

import (
	"fmt"
	"slices"
	"strings"
)

// New returns an Allocator for a device of capacity blocks, all free.
func New(capacity uint64, opts Options) (*Allocator, error) {
	return NewWithUsed(capacity, nil, opts)
}

// NewWithUsed returns an Allocator for a device of capacity blocks where the
// used extents, in any order, are in use and the rest is free. It is how a
// mount rebuilds free space from the extents its metadata references.
// Overlapping used extents are an error that names them; used is not
// modified.
func NewWithUsed(capacity uint64, used []Extent, opts Options) (*Allocator, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if capacity == 0 || capacity > MaxCapacity {
		return nil, fmt.Errorf("%w: %d blocks not in [1, %d]", ErrCapacity, capacity, uint64(MaxCapacity))
	}
	a := &Allocator{opts: opts, capacity: capacity}
	// Sorting packed keys (offset-major) is several times faster than
	// sorting Extents with a comparison function, and takes half the memory.
	keys := make([]uint64, len(used))
	for i, e := range used {
		if err := a.checkRange(e); err != nil {
			return nil, fmt.Errorf("used extent: %w", err)
		}
		keys[i] = offKey(e)
	}
	slices.Sort(keys)
	if err := overlaps(keys); err != nil {
		return nil, err
	}
	a.free.build(gaps(keys, capacity))
	a.meter = newMeter(opts.Registry)
	a.account(true)
	return a, nil
}

// overlaps returns an error naming the overlapping pairs of extents given
// as sorted offset keys.
func overlaps(sorted []uint64) error {
	const shown = 8
	var pairs []string
	n := 0
	var prev Extent // the used extent that reaches farthest so far
	for i, k := range sorted {
		e := fromOffKey(k)
		if i > 0 && e.Off < prev.End() {
			if n++; n <= shown {
				pairs = append(pairs, prev.String()+" and "+e.String())
			}
		}
		if e.End() > prev.End() || i == 0 {
			prev = e
		}
	}
	if n == 0 {
		return nil
	}
	more := ""
	if n > shown {
		more = fmt.Sprintf(" (and %d more)", n-shown)
	}
	return fmt.Errorf("%w: %s%s", ErrOverlap, strings.Join(pairs, ", "), more)
}

// gaps returns the free extents between disjoint used extents given as
// sorted offset keys.
func gaps(sorted []uint64, capacity uint64) []Extent {
	free := make([]Extent, 0, len(sorted)+1)
	next := uint64(0)
	for _, k := range sorted {
		e := fromOffKey(k)
		if e.Off > next {
			free = append(free, Extent{Off: next, Len: e.Off - next})
		}
		next = max(next, e.End())
	}
	if next < capacity {
		free = append(free, Extent{Off: next, Len: capacity - next})
	}
	return free
}

// build fills empty space with free extents sorted by offset, disjoint and
// not adjacent. Each index is filled from keys in its own order, so that
// every insertion follows the same hot path down the tree.
func (s *space) build(free []Extent) {
	keys := make([]uint64, len(free))
	for i, e := range free {
		keys[i] = offKey(e)
		s.blocks += e.Len
	}
	s.byOff.ensure(offLess)
	s.byOff.fill(keys)
	for i, e := range free {
		keys[i] = sizeKey(e)
	}
	slices.Sort(keys)
	s.bySize.ensure(sizeLess)
	s.bySize.fill(keys)
}

// fill inserts sorted keys into an empty set. Inserting them in order would
// leave every node half full (a node splits in the middle and its left half
// never grows again), so the even-indexed keys go in first and the odd ones
// then fill each node up: about 19 instead of 38 bytes per free extent for
// both indexes.
func (s *keySet) fill(sorted []uint64) {
	for start := range 2 {
		for i := start; i < len(sorted); i += 2 {
			s.insert(sorted[i])
		}
	}
}
