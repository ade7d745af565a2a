package alloc

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"sync/atomic"
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
	a := &Allocator{opts: opts, capacity: capacity, autoAt: math.MaxUint64, swapOps: defaultSwapOps, nodes: newNodeList()}
	a.free.init(a.nodes)
	a.pending.set.init(a.nodes)
	if opts.CompactExtents > 0 {
		a.autoAt = uint64(opts.CompactExtents)
	}
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

// build fills an empty space (init called) with free extents sorted by offset, disjoint
// and not adjacent. Each index is filled from keys in its own order.
func (s *space) build(free []Extent) {
	keys := make([]uint64, len(free))
	for i, e := range free {
		keys[i] = offKey(e)
		s.blocks += e.Len
	}
	sizes := make([]uint64, len(free))
	for i, e := range free {
		sizes[i] = sizeKey(e)
	}
	slices.Sort(sizes)
	s.fill(slices.Values(keys), slices.Values(sizes), nil)
}

// fill fills both indexes of an empty space (init called) from keys in each index's
// order; it is the build of NewWithUsed and of a compaction. It returns
// false, leaving the indexes partly filled, if stop is set meanwhile.
func (s *space) fill(offKeys, sizeKeys iter.Seq[uint64], stop *atomic.Bool) bool {
	return s.byOff.fill(offKeys, stop) && s.bySize.fill(sizeKeys, stop)
}

// The first pass of a fill inserts firstPassNum keys in firstPassDen, in
// order; the second the others. Inserting sorted keys in order leaves
// every node with degree-1 keys (a node splits in the middle and its left
// half never grows again): half full. The second pass then adds 21 keys to
// the 31 of each node: 52 of 63, 82 % full, about 23 bytes per free extent
// for both indexes. Fuller nodes are not better: a 97 %-full build (every
// other key first, 19 B) splits at the first inserts of any churn and
// costs 24.5 B after 3 % of a turnover, while 82 %-full nodes stay at or
// below 24.2 B until the population has turned over once, when an
// automatic compaction rebuilds them (see "Memory and compaction").
const firstPassNum, firstPassDen = 3, 5

// stopEvery is how many keys a fill inserts between looks at its stop flag.
const stopEvery = 4096

func inFirstPass(i int) bool { return (i+1)*firstPassNum/firstPassDen != i*firstPassNum/firstPassDen }

// fill inserts keys, sorted in the set's order, into an empty set in two
// passes over keys (see firstPassNum). It returns false if stop is set
// meanwhile.
func (s *keySet) fill(keys iter.Seq[uint64], stop *atomic.Bool) bool {
	for pass := range 2 {
		i := 0
		for k := range keys {
			if stop != nil && i%stopEvery == 0 && stop.Load() {
				return false
			}
			if inFirstPass(i) == (pass == 0) {
				s.insert(k)
			}
			i++
		}
	}
	return true
}
