package alloc

// Caps of Ceph's AvlAllocator first-fit search.
const (
	firstFitMaxVisits = 100
	firstFitMaxBlocks = 16 << 20 / 4096
)

// firstFit is like Ceph's AvlAllocator: the first extent at or after the
// hint that holds want, allocated from its start, searching at most 100
// extents and 16 MiB; then best fit by size; then the largest.
func firstFit(s *space, hint, want, min uint64, c *cost) (pick, bool) {
	n := 0
	c.seeks++
	for f := range s.byOff.from(hint, false) {
		c.visits++
		if n++; n > firstFitMaxVisits || f.Off-hint > firstFitMaxBlocks {
			break
		}
		if f.Len >= want {
			return place(f, f.Off, want, min)
		}
	}
	return bestFit(s, hint, want, min, c)
}
