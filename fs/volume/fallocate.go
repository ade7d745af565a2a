package volume

import (
	"cmp"
	"math"
	"slices"
)

// Fallocate modes, as fallocate(2).
const FallocKeepSize uint32 = 1 // FALLOC_FL_KEEP_SIZE: do not change the size

// Lseek whences beyond io.Seek*, as lseek(2).
const (
	SeekData = 3
	SeekHole = 4
)

// Fallocate gives blocks to the holes of [off, off+length) of regular file
// ino, extending the file unless FallocKeepSize. The blocks are written with
// zeros, because the format has no unwritten-extent flag: the cost grows
// with length. With FallocKeepSize nothing is allocated past the end of the
// file: data is placed copy-on-write at write-back, so blocks reserved
// there could not be used by later writes anyway. Other modes (hole
// punching, zero range, collapse) give EOPNOTSUPP.
//
// Every block the holes need is reserved before anything changes, so a
// fallocate that does not fit fails with ENOSPC and leaves the file as it
// was. One that fails later (an I/O error) sizes the file back to what it
// was, which gives back what it took past the old end; holes inside the
// file it filled stay filled, with zeros.
func (v *Volume) Fallocate(ino Ino, mode uint32, off, length int64) error {
	switch {
	case mode&^FallocKeepSize != 0:
		return opErr("fallocate", "", ErrNotSupported)
	case off < 0 || length <= 0:
		return opErr("fallocate", "", ErrInvalid)
	case uint64(off)+uint64(length) > MaxFileSize:
		return opErr("fallocate", "", ErrFileTooBig)
	}
	err := v.withData(ino, func(n *inode, fd *fileData) error {
		size := fd.size.Load()
		start, end := uint64(off), uint64(off+length)
		if mode&FallocKeepSize != 0 {
			end = min(end, size)
		}
		holes := v.holes(n, fd, start, end)
		if err := v.prepay(fd, v.fallocBlocks(n, fd, holes, end)); err != nil {
			return err
		}
		err := v.fillHoles(ino, n, fd, holes, end)
		v.space.unreserve(fd.prepaid) // left if the count was high, or on failure
		fd.prepaid = 0
		if err != nil && fd.size.Load() > size {
			v.truncateDirty(fd, size)
			_ = v.writeBack(ino, n, fd) // the error to report is err
		}
		if err != nil && (len(fd.chunks) > 0 || fd.ahead.Load()) {
			v.markDirty(ino, fd) // what is left is written back by the commit
		}
		return err
	})
	return opErrOrNil("fallocate", "", err)
}

// fillHoles writes zeros into holes, extends the file to end and writes
// it back (fd.mu held).
func (v *Volume) fillHoles(ino Ino, n *inode, fd *fileData, holes [][2]uint64, end uint64) error {
	cs := v.chunkSize()
	zeros := make([]byte, cs)
	last := uint64(math.MaxUint64) // chunk written last
	for _, hole := range holes {
		for at := hole[0]; at < hole[1]; {
			c := at / cs
			// Write back between chunks only: a chunk written back
			// and filled again would be loaded, and reserved, anew.
			if c != last && fd.dirty >= v.opts.DirtyThreshold {
				if err := v.writeBack(ino, n, fd); err != nil {
					return err
				}
			}
			k := min(hole[1]-at, (c+1)*cs-at)
			if _, err := v.writeSpace(n, fd, zeros[:k], at); err != nil {
				return err
			}
			at, last = at+k, c
		}
	}
	if fd.size.Load() < end { // only when the holes were all inside
		if err := v.extendTo(n, fd, end); err != nil {
			return err
		}
	}
	fd.ahead.Store(true)
	return v.writeBack(ino, n, fd)
}

// fallocBlocks returns the blocks filling holes of a file growing to end
// takes, as chunkUpTo and growing will reserve them: for each chunk
// touched, the blocks of its buffer once filled past those it holds now;
// a chunk not dirty yet is loaded whole (copy-on-write rewrites it).
// fd.mu is held.
func (v *Volume) fallocBlocks(n *inode, fd *fileData, holes [][2]uint64, end uint64) uint64 {
	cs, size := v.chunkSize(), fd.size.Load()
	grown := map[uint64]uint64{} // chunk: its length once filled
	for _, h := range holes {
		for c := h[0] / cs; c*cs < h[1]; c++ {
			grown[c] = max(grown[c], min(cs, h[1]-c*cs))
		}
	}
	if c, ok := v.growingChunk(n, fd, end); ok {
		grown[c] = max(grown[c], 0)
	}
	var blocks uint64
	for c, l := range grown {
		if bb, ok := fd.chunks[c]; ok {
			have := uint64(len(bb.B))
			blocks += blocksFor(max(have, l), v.blockSize) - blocksFor(have, v.blockSize)
			continue
		}
		have := min(cs, size-min(c*cs, size))
		blocks += blocksFor(max(have, l), v.blockSize)
	}
	return blocks
}

// prepay reserves blocks for fd's chunks up front (fd.prepaid). As a
// write does (writeSpace), when they are not free it makes frees waiting
// for a commit allocatable, then checkpoints to settle the headroom, and
// asks again.
func (v *Volume) prepay(fd *fileData, blocks uint64) error {
	err := v.space.reserve(blocks, v.logUsed())
	if err == ErrNoSpace && v.space.hasPending() {
		if serr := v.settleFrees(); serr != nil {
			return serr
		}
		err = v.space.reserve(blocks, v.logUsed())
	}
	if err == ErrNoSpace && v.logUsed() > 0 {
		v.mu.Lock()
		cerr := v.checkpoint(false)
		v.mu.Unlock()
		if cerr == nil {
			err = v.space.reserve(blocks, v.logUsed())
		}
	}
	if err == nil {
		fd.prepaid = blocks
	}
	return err
}

// Lseek answers SEEK_DATA and SEEK_HOLE on regular file ino: the first
// offset at or after off that is data (resp. in a hole; the end of the file
// counts as a hole). Offsets at or past the end give ENXIO.
func (v *Volume) Lseek(ino Ino, off int64, whence int) (int64, error) {
	if whence != SeekData && whence != SeekHole {
		return 0, opErr("lseek", "", ErrInvalid)
	}
	if off < 0 {
		return 0, opErr("lseek", "", ErrNoOffset)
	}
	var res uint64
	err := v.withData(ino, func(n *inode, fd *fileData) error {
		size, at := fd.size.Load(), uint64(off)
		if at >= size {
			return ErrNoOffset
		}
		holes := v.holes(n, fd, at, size)
		switch {
		case whence == SeekHole && len(holes) > 0:
			res = holes[0][0]
		case whence == SeekHole:
			res = size
		case len(holes) == 0 || holes[0][0] > at:
			res = at
		case holes[0][1] < size:
			res = holes[0][1]
		default:
			return ErrNoOffset
		}
		return nil
	})
	if err != nil {
		return 0, opErr("lseek", "", err)
	}
	return int64(res), nil
}

// holes returns the ranges of [start, end) that hold no data, in order:
// not inline, not mapped by an extent, not in a dirty chunk. Data is
// tracked per block, so holes are block-aligned inside the file.
func (v *Volume) holes(n *inode, fd *fileData, start, end uint64) [][2]uint64 {
	if start >= end {
		return nil
	}
	bs, cs := uint64(v.blockSize), v.chunkSize()
	var data [][2]uint64
	if l := uint64(len(n.x.inline)); l > 0 {
		data = append(data, [2]uint64{0, l})
	}
	for _, e := range n.extents() {
		data = append(data, [2]uint64{e.Logical * bs, (e.Logical + e.Len) * bs})
	}
	for c, b := range fd.chunks {
		data = append(data, [2]uint64{c * cs, c*cs + uint64(len(b.B))})
	}
	slices.SortFunc(data, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	var out [][2]uint64
	at := start
	for _, d := range data {
		if d[1] <= at {
			continue
		}
		if d[0] >= end {
			break
		}
		if d[0] > at {
			out = append(out, [2]uint64{at, d[0]})
		}
		at = d[1]
		if at >= end {
			return out
		}
	}
	return append(out, [2]uint64{at, end})
}
