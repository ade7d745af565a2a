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

func (r rank) less(s rank) bool { return r.hi < s.hi || r.hi == s.hi && r.off < s.off }

// dist is the distance from the hint to the piece, in blocks.
func (r rank) dist() uint64 { return r.hi & distMask }

// full reports whether the piece has all the blocks asked for.
func (r rank) full() bool { return r.hi>>shortShift == 0 }

// window is the best candidate of the window search so far: its packed
// rank (rank.hi), the offset key of its extent and where the piece starts.
// exact is set when the piece starts at the hint in the first extent of
// the search: step 2, which ends the search.
type window struct {
	hi, key, off uint64
	ok, exact    bool
}

// beats reports whether the candidate ranks before every one at distance
// dist or more: it is a full-length exact fit (waste 0) nearer than dist.
func (w *window) beats(dist uint64) bool { return w.ok && w.hi>>wasteShift == 0 && w.hi < dist }

// pick expands the candidate into a pick.
func (w *window) pick(want uint64) pick {
	if !w.ok {
		return pick{}
	}
	f := fromOffKey(w.key)
	return pick{p: Extent{Off: w.off, Len: min(f.Len, want)}, from: f, rank: rank{hi: w.hi, off: w.off}, ok: true}
}

// shorter is the builtin min, which near's parameter shadows.
func shorter(a, b uint64) uint64 { return min(a, b) }

// rankHi is rank.hi of a piece of n of the want blocks asked for, carved
// from an extent of m blocks, dist blocks from the hint.
func rankHi(want, m, n, dist uint64) uint64 {
	return uint64(bits.Len64(want-n))<<shortShift | wasteOf(m, n)<<wasteShift | dist
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
	return p, rank{hi: rankHi(want, f.Len, n, dist), off: p.Off}, true
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

	// A partial candidate is taken only when no extent holds want, so
	// while one does, the window looks for full-length pieces only.
	if largest.Len >= want {
		min = want
	}

	// 2 and 3. Exact placement at the hint, then the window. The first
	// extent of the downward scan is the one that holds the hint, if any;
	// at hint 0 nothing lies below, and the upward scan starts there.
	// Each side stops at K extents, at D blocks, or where nothing farther
	// can beat the best candidate. A visit keeps its rank in registers and
	// stores the key of a better candidate only: within one side, equal
	// ranks mean the same extent, and across sides the lower offset (the
	// downward side) wins a tie, so a strict compare of hi is the order.
	var w window
	up := uint64(0)
	if hint > 0 {
		n := 0
		c.seeks++
		s.byOff.descend(pivot(hint), func(key uint64) bool {
			c.visits++
			f := fromOffKey(key)
			dist := uint64(0)
			if f.End() < hint {
				dist = hint - f.End()
			}
			if dist > d || w.beats(dist) {
				return false
			}
			if nb := shorter(f.Len, want); nb >= min {
				off := f.End() - nb // the end of f nearest the hint
				if dist == 0 && f.End()-hint >= nb {
					off = hint // f holds the hint and nb blocks from it
				}
				if hi := rankHi(want, f.Len, nb, dist); !w.ok || hi < w.hi {
					w = window{hi: hi, key: key, off: off, ok: true}
				}
				w.exact = n == 0 && nb == want && off == hint
			}
			n++
			return !w.exact && n < k
		})
		if w.exact {
			return w.pick(want), true
		}
		up = hint + 1
	}
	n := 0
	c.seeks++
	s.byOff.ascend(pivot(up), func(key uint64) bool {
		if key>>32 < up {
			return true // the extent that holds hint+1 and hint: seen below
		}
		c.visits++
		f := fromOffKey(key)
		dist := f.Off - hint
		if dist > d || w.beats(dist) {
			return false
		}
		if nb := shorter(f.Len, want); nb >= min {
			if hi := rankHi(want, f.Len, nb, dist); !w.ok || hi < w.hi {
				w = window{hi: hi, key: key, off: f.Off, ok: true}
			}
			w.exact = dist == 0 && nb == want // hint 0 only: f starts there
		}
		if dist > 0 { // at hint 0, the extent there is the downward side's
			n++
		}
		return !w.exact && n < k
	})
	best := w.pick(want)
	if w.ok && best.rank.full() {
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
	c.visits++
	fit, _ := s.bySize.atLeastLen(want)
	if fit.Off >= hint {
		// fit has the lowest offset of its length: the one nearest the
		// hint, as none of its length lies below the hint.
		p, _ := place(fit, hint, want, min)
		return p, true
	}
	c.seeks += 2
	c.visits++
	next, prev, okNext, _ := s.bySize.sameLenNear(fit.Len, hint) // prev: fit at least
	b, _ := place(prev, hint, want, min)
	if okNext {
		if a, _ := place(next, hint, want, min); a.rank.dist() <= b.rank.dist() {
			return a, true
		}
	}
	return b, true
}
