package volume

import "github.com/smallfs/smallfs/alloc"

// StatFS reports the volume's true block and inode figures. Blocks counts
// the data area only (superblocks and the log are not usable space); blocks
// freed by a transaction not yet durable count as used until they are
// allocatable again.
func (v *Volume) StatFS() StatFS {
	v.mu.RLock()
	defer v.mu.RUnlock()
	free := v.space.free()
	return StatFS{
		BlockSize:   uint32(v.blockSize),
		Blocks:      v.space.dataBlocks,
		BlocksFree:  free,
		BlocksAvail: free,
		Files:       v.inodes.limit,
		FilesFree:   v.inodes.limit - v.inodes.used,
		NameMax:     MaxNameLen,
	}
}

// AllocStats reports the allocator's view of free space: free extents, the
// largest, the fragmentation score and the histogram of free extent sizes,
// with the allocator's call counters. It walks every free extent (the
// score needs them all), so it is for info and stats, not for statfs; it
// takes only the allocator's lock and works after Close too.
func (v *Volume) AllocStats() alloc.Stats { return v.space.a.Stats() }
