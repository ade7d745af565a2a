package volume

// FilesBeyond returns the inodes with data in device blocks at or past
// block, in inode-number order: what an image cut short at that block has
// lost, since growing the image back gives those blocks back as zeros.
// It walks every inode's extent map: O(inodes + extents).
func (v *Volume) FilesBeyond(block uint64) []Ino {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []Ino
	v.inodes.all(func(ino Ino, n *inode) bool {
		for _, e := range n.extents() {
			if e.Physical+e.Len > block {
				out = append(out, ino)
				break
			}
		}
		return true
	})
	return out
}
