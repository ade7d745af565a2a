package alloc

import "math/bits"

// cost counts the work of one search: seeks are descents from a B-tree root,
// visits are extents looked at. Both are deterministic, so tests bound them.
type cost struct{ visits, seeks uint64 }

// pick is a candidate placement: piece p carved out of free extent from,
// ranked by rank (smaller is better).
type pick struct {
	p, from Extent
	rank    rank
	ok      bool
}

// rank orders candidates lexicographically: full length first (short is
// the power-of-two class of the blocks missing), then the tightest fit
// (waste, see wasteOf: 0 for an exact fit, 1 when the extent is less than
// twice the piece), then nearest to the hint, then lowest offset.
// The first three are packed into hi (short, waste, dist from the top) so
// that the window's ranking is two integer compares: a visit compares
// every extent it looks at.
type rank struct{ hi, off uint64 }

const (
	shortShift = 56
	wasteShift = 48
	distMask   = 1<<wasteShift - 1 // distances are below MaxCapacity
)

func makeRank(short, waste, dist, off uint64) rank {
	return rank{hi: short<<shortShift | waste<<wasteShift | dist, off: off}
}

func (r rank) less(s rank) bool { return r.hi < s.hi || r.hi == s.hi && r.off < s.off }

// dist is the distance from the hint to the piece, in blocks.
func (r rank) dist() uint64 { return r.hi & distMask }

// full reports whether the piece has all the blocks asked for.
func (r rank) full() bool { return r.hi>>shortShift == 0 }

// beats reports whether b ranks before every candidate at distance dist or
// more: b is a full-length exact fit (waste 0) nearer than dist.
func (b *pick) beats(dist uint64) bool {
	return b.ok && b.rank.hi>>wasteShift == 0 && b.rank.hi < dist
}

// place returns where a request of [min, want] blocks goes in free extent f:
// as close to hint as f allows, at hint itself when f holds it.
func place(f Extent, hint, want, min uint64) (pick, bool) {
	p, r, ok := placeIn(f, hint, want, min)
	return pick{p: p, from: f, rank: r, ok: ok}, ok
}

// placeIn is place without the pick: its results stay in registers, so
// that the window's visits store only the candidates that rank better.
func placeIn(f Extent, hint, want, min uint64) (p Extent, r rank, ok bool) {
	n := f.Len
	if n > want {
		n = want
	}
	if n < min {
		return p, r, false
	}
	var dist uint64
	switch {
	case f.Off >= hint:
		p, dist = Extent{Off: f.Off, Len: n}, f.Off-hint
	case f.End() <= hint:
		p, dist = Extent{Off: f.End() - n, Len: n}, hint-f.End()
	case f.End()-hint >= n:
		p = Extent{Off: hint, Len: n}
	default: // f holds hint but too few blocks follow it: end at f's end
		p = Extent{Off: f.End() - n, Len: n}
	}
	return p, makeRank(uint64(bits.Len64(want-n)), wasteOf(f.Len, n), dist, p.Off), true
}

// wasteOf ranks the fit of a piece of n blocks in an extent of m: 0 when
// it takes the whole extent (one free extent less, nothing left to
// fragment), else 1 + floor(log2(m/n)). Measured on W2, the exact-fit
// class lowers S at 3 of 4 fills (docs/PERFORMANCE.md).
func wasteOf(m, n uint64) uint64 {
	if m == n {
		return 0
	}
	return wasteClass(m, n) + 1
}

// wasteClass is floor(log2(m/n)) for 0 < n <= m, without a division: the
// bit lengths give it or one more.
func wasteClass(m, n uint64) uint64 {
	w := bits.Len64(m) - bits.Len64(n)
	if m < n<<w {
		w--
	}
	return uint64(w)
}

// consider makes piece p of f with rank r the best candidate if it ranks
// before b.
func (b *pick) consider(p, f Extent, r rank) {
	if !b.ok || r.less(b.rank) {
		*b = pick{p: p, from: f, rank: r, ok: true}
	}
}

// near chooses where to allocate [min, want] blocks near hint, or returns
// !ok when no free extent holds min blocks. It changes nothing. See
// "The near search" in doc.go.
func (s *space) near(hint, want, min uint64, k int, d uint64, c *cost) (pick, bool) {
	// 1. Quick reject: a seek only when the largest key is not known.
	if !s.bySize.topOK {
		c.seeks++
	}
	largest, ok := s.bySize.largest()
	if !ok || largest.Len < min {
		return pick{}, false
	}

	// 2 and 3. Exact placement at the hint, then the window. The first
	// extent of the downward scan is the one that holds the hint, if any.
	// Each side stops at K extents, at D blocks, or where nothing farther
	// can beat the best candidate.
	var best pick
	exact := false
	n := 0
	c.seeks++
	s.byOff.descend(pivot(hint), func(key uint64) bool {
		f := fromOffKey(key)
		c.visits++
		dist := uint64(0)
		if f.End() < hint {
			dist = hint - f.End()
		}
		if dist > d || best.beats(dist) {
			return false
		}
		if p, r, ok := placeIn(f, hint, want, min); ok {
			best.consider(p, f, r)
			exact = n == 0 && r.full() && p.Off == hint
		}
		n++
		return !exact && n < k
	})
	if exact {
		return best, true
	}
	n = 0
	c.seeks++
	s.byOff.ascend(pivot(hint+1), func(key uint64) bool {
		if key>>32 <= hint {
			return true // the extent that holds hint+1 and hint: seen below
		}
		f := fromOffKey(key)
		c.visits++
		if dist := f.Off - hint; dist > d || best.beats(dist) {
			return false
		}
		if p, r, ok := placeIn(f, hint, want, min); ok {
			best.consider(p, f, r)
		}
		n++
		return n < k
	})
	if best.ok && best.rank.full() {
		return best, true
	}

	// 4. Fallback by size: the shortest extent that holds want, nearest to
	// the hint among equals; else the largest, which holds at least min.
	if largest.Len < want {
		p, r, _ := placeIn(largest, hint, want, min)
		best.consider(p, largest, r)
		return best, true
	}
	c.seeks++
	fit, _ := s.bySize.atLeastLen(want)
	c.seeks += 2
	next, prev, okNext, okPrev := s.bySize.sameLenNear(fit.Len, hint)
	c.visits += 2
	switch {
	case okNext && okPrev:
		a, _ := place(next, hint, want, min)
		b, _ := place(prev, hint, want, min)
		if b.rank.dist() < a.rank.dist() {
			return b, true
		}
		return a, true
	case okPrev:
		b, _ := place(prev, hint, want, min)
		return b, true
	default:
		a, _ := place(next, hint, want, min)
		return a, true
	}
}
