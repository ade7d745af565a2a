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

// rank orders candidates lexicographically: full length first, then the
// tightest power-of-two fit, then nearest to the hint, then lowest offset.
type rank struct{ short, waste, dist, off uint64 }

func (r rank) less(s rank) bool {
	if r.short != s.short {
		return r.short < s.short
	}
	if r.waste != s.waste {
		return r.waste < s.waste
	}
	if r.dist != s.dist {
		return r.dist < s.dist
	}
	return r.off < s.off
}

// perfect reports whether b is a full-length, zero-waste fit touching the
// hint: nothing can rank better.
func (b *pick) perfect() bool {
	return b.ok && b.rank.short == 0 && b.rank.waste == 0 && b.rank.dist == 0
}

// place returns where a request of [min, want] blocks goes in free extent f:
// as close to hint as f allows, at hint itself when f holds it.
func place(f Extent, hint, want, min uint64) (pick, bool) {
	n := f.Len
	if n > want {
		n = want
	}
	if n < min {
		return pick{}, false
	}
	var p Extent
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
	r := rank{
		short: uint64(bits.Len64(want - n)),
		waste: uint64(bits.Len64(f.Len - n)),
		dist:  dist,
		off:   p.Off,
	}
	return pick{p: p, from: f, rank: r, ok: true}, true
}

func (b *pick) consider(c pick) {
	if !b.ok || c.rank.less(b.rank) {
		*b = c
	}
}

// near chooses where to allocate [min, want] blocks near hint, or returns
// !ok when no free extent holds min blocks. It changes nothing. See
// "The near search" in doc.go.
func (s *space) near(hint, want, min uint64, k int, d uint64, c *cost) (pick, bool) {
	// 1. Quick reject.
	c.seeks++
	largest, ok := s.bySize.largest()
	if !ok || largest.Len < min {
		return pick{}, false
	}

	// 2 and 3. Exact placement at the hint, then the window. The first
	// extent of the downward scan is the one that holds the hint, if any.
	var best pick
	stop := false
	n := 0
	c.seeks++
	for f := range s.byOff.from(hint, true) {
		c.visits++
		if f.End()+d < hint {
			break
		}
		if cand, ok := place(f, hint, want, min); ok {
			best.consider(cand)
			if n == 0 && cand.rank.dist == 0 && cand.rank.short == 0 && cand.p.Off == hint {
				stop = true // exact placement at the hint
			}
		}
		if n++; stop || best.perfect() || n >= k {
			break
		}
	}
	if !stop && !best.perfect() {
		n = 0
		c.seeks++
		for f := range s.byOff.from(hint+1, false) {
			c.visits++
			if f.Off > hint+d {
				break
			}
			if cand, ok := place(f, hint, want, min); ok {
				best.consider(cand)
			}
			if n++; n >= k {
				break
			}
		}
	}
	if best.ok && best.rank.short == 0 {
		return best, true
	}

	// 4. Fallback by size: the shortest extent that holds want, nearest to
	// the hint among equals; else the largest, which holds at least min.
	if largest.Len < want {
		cand, _ := place(largest, hint, want, min)
		best.consider(cand)
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
		if b.rank.dist < a.rank.dist {
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
