package alloc

// nearestFit takes the extent that holds want nearest to the hint, however
// far it must scan (the locality-only policy that shreds free space and the
// unbounded scan that makes latency cliffs); else the largest. It also
// serves as the exhaustive oracle for regret.
func nearestFit(s *space, hint, want, min uint64, c *cost) (pick, bool) {
	var best pick
	c.seeks++
	for f := range s.byOff.from(hint+1, false) {
		c.visits++
		if p, ok := place(f, hint, want, want); ok {
			best = p
			break
		}
	}
	c.seeks++
	for f := range s.byOff.from(hint, true) {
		c.visits++
		if best.ok && f.End()+best.rank.dist() < hint {
			break // farther than the best on the other side
		}
		if p, ok := place(f, hint, want, want); ok {
			if !best.ok || p.rank.dist() <= best.rank.dist() {
				best = p
			}
			break
		}
	}
	if best.ok {
		return best, true
	}
	return largestFit(s, hint, want, min, c)
}
