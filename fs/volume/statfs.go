package volume

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
