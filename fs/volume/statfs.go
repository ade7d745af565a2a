package volume

import "github.com/smallfs/smallfs/alloc"

// StatFS reports the volume's true block and inode figures. Blocks counts
// the data area only (superblocks and the log are not usable space); blocks
// freed by a transaction not yet durable count as free already (a write
// that needs them commits first). BlocksAvail leaves out the checkpoint headroom, which
// only checkpoints may take (as ext4 leaves out its reserved blocks).
func (v *Volume) StatFS() StatFS {
	v.mu.RLock()
	defer v.mu.RUnlock()
	free, avail := v.space.free(v.logUsed())
	return StatFS{
		BlockSize:   uint32(v.blockSize),
		Blocks:      v.space.dataBlocks,
		BlocksFree:  free,
		BlocksAvail: avail,
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

// logUsed returns the log blocks written since the newest checkpoint.
func (v *Volume) logUsed() uint64 {
	used, _ := v.j.Usage()
	return used
}

// metaRoom returns ErrNoSpace unless the metadata may grow by bytes and
// still leave the checkpoint headroom free (see space.headroom). When it
// does not, and frees wait for a commit or the log holds anything, one
// checkpoint settles both (the headroom counts the log since the newest
// checkpoint) and it asks again. A stopped volume (Failed) refuses
// first: no room would help. v.mu is held for writing.
func (v *Volume) metaRoom(bytes int) error {
	if err := v.refuseChange(); err != nil {
		return err
	}
	err := v.space.room(uint64(bytes), v.logUsed())
	if err == nil || v.logUsed() == 0 && !v.space.hasPending() {
		return err
	}
	if v.roomCheckpoint() != nil {
		return err
	}
	return v.space.room(uint64(bytes), v.logUsed())
}

// roomCheckpoint is the checkpoint a request that found no room takes to
// settle the headroom (v.mu held for writing). The request gets ENOSPC
// if it fails, so the failure, perhaps the device's, is logged here.
func (v *Volume) roomCheckpoint() error {
	err := v.checkpoint(false)
	if err != nil {
		v.opts.Logger.WithError(err).Error("checkpoint to make room failed; the request gets ENOSPC")
	}
	return err
}
