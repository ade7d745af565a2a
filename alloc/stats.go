package alloc

import "math/bits"

// Usage is how much space is free and pending: the part of Stats that is
// cheap to get.
type Usage struct {
	Capacity       uint64 // blocks on the device
	FreeBlocks     uint64 // allocatable blocks
	FreeExtents    uint64 // allocatable extents
	LargestFree    uint64 // blocks in the largest free extent
	PendingBlocks  uint64 // freed under epochs not yet committed: not free
	PendingExtents uint64
}

// Stats describes free space and the work done so far.
type Stats struct {
	Usage

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

	Compactions    uint64     // compactions completed
	LastCompaction Compaction // the figures of the last one
}

// counters accumulate the per-call figures of Stats.
type counters struct {
	calls, failed, atHint, near     uint64
	visits, seeks, maxVis, maxSeeks uint64
}

// record adds one call; window is D ([Options].WindowBlocks), which
// classes a call as near.
func (s *counters) record(c cost, p pick, ok bool, hint, window uint64) {
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
	case p.rank.dist() <= window:
		s.near++
	}
}

// Usage returns the free and pending space in O(log free extents): for
// statfs.
func (a *Allocator) Usage() Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usage()
}

func (a *Allocator) usage() Usage {
	u := Usage{
		Capacity:       a.capacity,
		FreeBlocks:     a.free.blocks,
		FreeExtents:    uint64(a.free.extents()),
		PendingBlocks:  a.pending.blocks,
		PendingExtents: uint64(a.pending.set.len()),
	}
	if l, ok := a.free.bySize.largest(); ok {
		u.LargestFree = l.Len
	}
	return u
}

// Stats returns the figures of free space. It walks every free extent, so
// it costs O(free extents) under the lock: for a monitor, not a hot path.
// It also brings accounting up to date.
func (a *Allocator) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.account(true)
	st := Stats{
		Usage:     a.usage(),
		Calls:     a.stats.calls,
		Failed:    a.stats.failed,
		AtHint:    a.stats.atHint,
		Near:      a.stats.near,
		Visits:    a.stats.visits,
		Seeks:     a.stats.seeks,
		MaxVisits: a.stats.maxVis,
		MaxSeeks:  a.stats.maxSeeks,

		Compactions:    a.compactions,
		LastCompaction: a.lastCompaction,
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
