package alloc

import (
	"fmt"
	"iter"
	"math"

	"github.com/google/btree"

	"github.com/smallfs/smallfs/internal/invariants"
)

// degree is the B-tree degree of both indexes: nodes hold 31 to 63 keys,
// which fills a 64-key (512 B) array; see "Memory and compaction" in doc.go.
const degree = 32

// freeNodes is how many emptied nodes the trees of one Allocator keep for
// reuse, in one list they share (google/btree's default is 32 per tree, 18
// KiB each). A node with its arrays is 0.6-1.1 KB: at a few hundred free
// extents the list is a large part of the memory, and four absorb all but
// about one in 10^4 of the splits of Alloc+Free churn (see "Memory and
// compaction" in doc.go).
const freeNodes = 4

// nodeList holds emptied nodes for reuse. google/btree guards it with its
// own mutex, so the trees a compaction builds may share it with the live
// ones.
type nodeList = btree.FreeListG[uint64]

func newNodeList() *nodeList { return btree.NewFreeListG[uint64](freeNodes) }

// keySet is an ordered set of packed extent keys on a google/btree. A set
// is created empty by init; the zero value is an empty set that must not
// be inserted into. It is not safe for concurrent use: the Allocator's
// mutex guards it.
type keySet struct{ t *btree.BTreeG[uint64] }

// Orders of the two indexes. The offset order puts a before b when a ends
// at or before b's start, so overlapping extents compare equal: the set's
// extents are disjoint, and one whose blocks shrink or grow in place
// (carved from its front or back, merged with a neighbour) replaces the
// old key with one ReplaceOrInsert instead of a delete and an insert.
func offLess(a, b uint64) bool  { return a>>32+a&(1<<32-1) < b>>32 }
func sizeLess(a, b uint64) bool { return a < b }

func (s *keySet) init(less btree.LessFunc[uint64], nodes *nodeList) {
	s.t = btree.NewWithFreeListG(degree, less, nodes)
}

func (s *keySet) len() int {
	if s.t == nil {
		return 0
	}
	return s.t.Len()
}

func (s *keySet) insert(k uint64) {
	if _, dup := s.t.ReplaceOrInsert(k); dup && invariants.Enabled {
		panic(fmt.Sprintf("alloc: key %#x inserted twice", k))
	}
}

func (s *keySet) remove(k uint64) {
	var ok bool
	if s.t != nil {
		_, ok = s.t.Delete(k)
	}
	if !ok && invariants.Enabled {
		panic(fmt.Sprintf("alloc: key %#x removed but absent", k))
	}
}

// atMost returns the greatest key <= k.
func (s *keySet) atMost(k uint64) (out uint64, ok bool) {
	s.descend(k, func(x uint64) bool { out, ok = x, true; return false })
	return out, ok
}

// atLeast returns the least key >= k.
func (s *keySet) atLeast(k uint64) (out uint64, ok bool) {
	s.ascend(k, func(x uint64) bool { out, ok = x, true; return false })
	return out, ok
}

func (s *keySet) max() (uint64, bool) {
	if s.t == nil {
		return 0, false
	}
	return s.t.Max()
}

// ascend calls f on the keys >= k in increasing order until f returns false.
func (s *keySet) ascend(k uint64, f func(uint64) bool) {
	if s.t != nil {
		s.t.AscendGreaterOrEqual(k, f)
	}
}

// descend calls f on the keys <= k in decreasing order until f returns false.
func (s *keySet) descend(k uint64, f func(uint64) bool) {
	if s.t != nil {
		s.t.DescendLessOrEqual(k, f)
	}
}

// clone returns a copy of the set that shares its nodes until either is
// changed (google/btree's copy on write): O(1). The copy may be read by
// another goroutine while the set goes on changing under its guard.
func (s *keySet) clone() keySet {
	if s.t == nil {
		return keySet{}
	}
	return keySet{s.t.Clone()}
}

// keys yields every key in the set's order.
func (s *keySet) keys() iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		if s.t != nil {
			s.t.Ascend(yield)
		}
	}
}

// offSet is a set of disjoint extents ordered by offset.
type offSet struct{ keySet }

func (s *offSet) init(nodes *nodeList) { s.keySet.init(offLess, nodes) }
func (s *offSet) insert(e Extent)      { s.keySet.insert(offKey(e)) }
func (s *offSet) remove(e Extent)      { s.keySet.remove(offKey(e)) }

// resize replaces the one extent that overlaps e by e.
func (s *offSet) resize(e Extent) {
	if _, ok := s.t.ReplaceOrInsert(offKey(e)); !ok && invariants.Enabled {
		panic(fmt.Sprintf("alloc: resize of %v: no extent overlaps it", e))
	}
}

// atOrBefore returns the extent with the greatest offset <= off.
func (s *offSet) atOrBefore(off uint64) (Extent, bool) {
	k, ok := s.atMost(off << 32)
	return fromOffKey(k), ok
}

// after returns the extent with the least offset > off.
func (s *offSet) after(off uint64) (out Extent, ok bool) {
	for f := range s.from(off+1, false) {
		return f, true
	}
	return Extent{}, false
}

// around returns, for an extent e that is not in the set, the extent with
// the greatest offset <= e.Off (left) and, if it starts at or before
// e.End(), the one after it (right). One descent finds both: every extent
// that could overlap or touch e is among them.
func (s *offSet) around(e Extent) (left, right Extent, hasLeft, hasRight bool) {
	s.descend(pivot(e.End()), func(k uint64) bool {
		f := fromOffKey(k)
		if f.Off > e.Off {
			right, hasRight = f, true
			return f.Off == e.End() // an overlap ends the search
		}
		left, hasLeft = f, true
		return false
	})
	return left, right, hasLeft, hasRight
}

// pivot is the offset-index key of block off: extents that hold it compare
// equal to it, those after it greater. Past MaxCapacity it sorts after
// every extent.
func pivot(off uint64) uint64 {
	if off >= MaxCapacity {
		return math.MaxUint64
	}
	return off << 32
}

// overlapping returns an extent of the set that shares a block with e.
func (s *offSet) overlapping(e Extent) (Extent, bool) {
	if f, ok := s.atOrBefore(e.Off); ok && f.overlaps(e) {
		return f, true
	}
	if f, ok := s.after(e.Off); ok && f.overlaps(e) {
		return f, true
	}
	return Extent{}, false
}

// from yields the extents with offset >= off in increasing order, or, when
// down is set, those with offset <= off in decreasing order.
func (s *offSet) from(off uint64, down bool) iter.Seq[Extent] {
	return func(yield func(Extent) bool) {
		if down {
			s.descend(pivot(off), func(k uint64) bool { return yield(fromOffKey(k)) })
		} else if off < MaxCapacity {
			// The scan starts at the extent that holds off, if any.
			s.ascend(pivot(off), func(k uint64) bool { return k>>32 < off || yield(fromOffKey(k)) })
		}
	}
}

// all yields every extent in offset order.
func (s *offSet) all() iter.Seq[Extent] { return s.from(0, false) }

// sizeSet is a set of extents ordered by (length, offset). It remembers
// its greatest key while it is known, so that Alloc's quick reject costs no
// descent: an insert can only raise it, and only removing it forgets it.
type sizeSet struct {
	keySet
	top      uint64 // the greatest key, if topOK
	topOK    bool
	removals uint64 // keys removed since the set was built: the turnover
}

func (s *sizeSet) init(nodes *nodeList) { s.keySet.init(sizeLess, nodes) }

func (s *sizeSet) insert(e Extent) {
	k := sizeKey(e)
	s.keySet.insert(k)
	if s.topOK && k > s.top {
		s.top = k
	}
}

func (s *sizeSet) remove(e Extent) {
	k := sizeKey(e)
	s.keySet.remove(k)
	s.removals++
	if k == s.top {
		s.topOK = false
	}
}

// atLeastLen returns the shortest extent of at least n blocks, the one with
// the lowest offset among equals.
func (s *sizeSet) atLeastLen(n uint64) (Extent, bool) {
	k, ok := s.atLeast(sizeKey(Extent{Len: n}))
	return fromSizeKey(k), ok
}

// sameLenNear returns, among the extents of length n, the one at or after off
// and the one before it, if any.
func (s *sizeSet) sameLenNear(n, off uint64) (next, prev Extent, okNext, okPrev bool) {
	if k, ok := s.atLeast(sizeKey(Extent{Off: off, Len: n})); ok && fromSizeKey(k).Len == n {
		next, okNext = fromSizeKey(k), true
	}
	if off > 0 {
		if k, ok := s.atMost(sizeKey(Extent{Off: off - 1, Len: n})); ok && fromSizeKey(k).Len == n {
			prev, okPrev = fromSizeKey(k), true
		}
	}
	return next, prev, okNext, okPrev
}

// largest returns the longest extent, the one with the highest offset among
// equals.
func (s *sizeSet) largest() (Extent, bool) {
	if !s.topOK {
		k, ok := s.max()
		if !ok {
			return Extent{}, false
		}
		s.top, s.topOK = k, true
	}
	return fromSizeKey(s.top), true
}

// all yields every extent in (length, offset) order.
func (s *sizeSet) all() iter.Seq[Extent] {
	return func(yield func(Extent) bool) {
		s.ascend(0, func(k uint64) bool { return yield(fromSizeKey(k)) })
	}
}
