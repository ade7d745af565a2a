package main

import (
	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/fs/volume"
)

// volumeAlloc is the allocator section of info and stats: free extents,
// fragmentation and the histogram of free extent sizes, from
// (*volume.Volume).AllocStats. A daemon's Stats fills control.Stats.Alloc
// with it.
func volumeAlloc(vol *volume.Volume) *control.Alloc {
	return allocSection(vol.AllocStats())
}

// allocSection converts the allocator's figures, cutting the histogram's
// trailing empty buckets.
func allocSection(st alloc.Stats) *control.Alloc {
	h := st.Histogram[:]
	for len(h) > 0 && h[len(h)-1] == 0 {
		h = h[:len(h)-1]
	}
	return &control.Alloc{
		FreeBlocks: st.FreeBlocks, FreeExtents: st.FreeExtents, LargestFree: st.LargestFree,
		PendingBlocks: st.PendingBlocks, Score: st.Score,
		Histogram: append([]uint64{}, h...),
		Calls:     st.Calls, Failed: st.Failed,
	}
}
