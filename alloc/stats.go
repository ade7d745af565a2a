package alloc

import "math/bits"

// Stats describes free space and the work done so far.
type Stats struct {
	Capacity       uint64 // blocks on the device
	FreeBlocks     uint64 // allocatable blocks
	FreeExtents    uint64 // allocatable extents
	LargestFree    uint64 // blocks in the largest free extent
	PendingBlocks  uint64 // freed under epochs not yet committed: not free
	PendingExtents uint64

	// Score is Ceph's fragmentation score of free space, from 0 (one
	// extent) to 1 (every extent one block).
	Score float64
	// Histogram[k] counts the free extents of 2^k to 2^(k+1)-1 blocks.
	Histogram [33]uint64

	Calls     uint64 // Alloc calls that passed validation
	Failed    uint64 // of which returned ErrNoSpace
	AtHint    uint64 // served at the hint itself
	Near      uint64 // served within WindowBlocks of the hint, not at it
	Visits    uint64 // extents looked at by all calls
	Seeks     uint64 // B-tree descents by all calls
	MaxVisits uint64 // most extents looked at by one call
	MaxSeeks  uint64 // most B-tree descents by one call
}

// counters accumulate the per-call figures of Stats.
type counters struct {
	calls, failed, atHint, near     uint64
	visits, seeks, maxVis, maxSeeks uint64
	window                          uint64 // D, to class calls as near
}

func (s *counters) record(c cost, p pick, ok bool, hint uint64) {
	s.calls++
	s.visits += c.visits
	s.seeks += c.seeks
	s.maxVis = max(s.maxVis, c.visits)
	s.maxSeeks = max(s.maxSeeks, c.seeks)
	switch {
	case !ok:
		s.failed++
	case p.p.Off == hint:
		s.atHint++
	case p.rank.dist <= s.window:
		s.near++
	}
}

// Stats returns the figures of free space. It walks every free extent, so
// it costs O(free extents) under the lock: for a monitor, not a hot path.
func (a *Allocator) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := Stats{
		Capacity:       a.capacity,
		FreeBlocks:     a.free.blocks,
		FreeExtents:    uint64(a.free.extents()),
		PendingBlocks:  a.pending.blocks,
		PendingExtents: uint64(a.pending.set.len()),
		Calls:          a.stats.calls,
		Failed:         a.stats.failed,
		AtHint:         a.stats.atHint,
		Near:           a.stats.near,
		Visits:         a.stats.visits,
		Seeks:          a.stats.seeks,
		MaxVisits:      a.stats.maxVis,
		MaxSeeks:       a.stats.maxSeeks,
	}
	if l, ok := a.free.bySize.largest(); ok {
		st.LargestFree = l.Len
	}
	st.Score = FragmentationScore(func(yield func(uint64) bool) {
		for e := range a.free.byOff.all() {
			st.Histogram[bits.Len64(e.Len)-1]++
			if !yield(e.Len) {
				return
			}
		}
	}, a.opts.BlockSize)
	return st
}
