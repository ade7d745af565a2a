package alloc

// bestFit chooses by size only: the shortest extent that holds want, the
// lowest offset among equals, allocated from its start; else the largest.
// It ignores the hint.
func bestFit(s *space, hint, want, min uint64, c *cost) (pick, bool) {
	c.seeks++
	if f, ok := s.bySize.atLeastLen(want); ok {
		c.visits++
		return place(f, f.Off, want, min)
	}
	return largestFit(s, hint, want, min, c)
}
