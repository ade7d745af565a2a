package volume

import (
	"cmp"
	"errors"
	"math"
	"slices"
)

// Fallocate modes, as fallocate(2).
const (
	FallocKeepSize  uint32 = 0x01 // FALLOC_FL_KEEP_SIZE: do not change the size
	FallocPunchHole uint32 = 0x02 // FALLOC_FL_PUNCH_HOLE: make the range a hole (with FallocKeepSize only)
	FallocZeroRange uint32 = 0x10 // FALLOC_FL_ZERO_RANGE: zeros in the range, its blocks allocated
)

// Lseek whences beyond io.Seek*, as lseek(2).
const (
	SeekData = 3
	SeekHole = 4
)

// Fallocate changes the space of [off, off+length) of regular file ino, by
// mode:
//
//   - 0 or FallocKeepSize gives blocks to the holes of the range, extending
//     the file unless FallocKeepSize. The blocks are written with zeros,
//     because the format has no unwritten-extent flag: the cost grows with
//     length. With FallocKeepSize nothing is allocated past the end of the
//     file: data is placed copy-on-write at write-back, so blocks reserved
//     there could not be used by later writes anyway.
//   - FallocPunchHole|FallocKeepSize makes the range read as zeros and
//     gives back the blocks wholly inside it (inside the file: the size
//     stays). Dirty data there is dropped, with its reservation. The
//     blocks at the range's edges keep their bytes outside it and are
//     rewritten, copy-on-write, with zeros inside it, one fresh block
//     each; an inline file's bytes are zeroed in the metadata. The whole
//     blocks are cut in the same transaction as the edges when a block is
//     free for them; on a full volume they are cut in a transaction of
//     their own first, so that the edges can use their space; if no
//     block is free even then (no whole block inside the range), the
//     punch fails with ENOSPC, after the whole blocks if any.
//   - FallocZeroRange, with or without FallocKeepSize, makes the range
//     read as zeros and, as mode 0 does, leaves every block of it
//     allocated (written with zeros, a chunk at a time, as a write
//     would), counted in st_blocks and statfs; without FallocKeepSize the
//     file grows to cover it, with it nothing past the end is allocated.
//     It punches the range first, as FallocPunchHole does (so it reads
//     as zeros, and its whole blocks' space goes to what follows), then
//     writes zeros over the whole range as mode 0 writes them into holes,
//     with every block that takes reserved up front: ENOSPC there leaves
//     the range reading as zeros, the size as it was, and the range's
//     whole blocks unallocated. A file that is and stays inline is
//     zeroed in the metadata: inline data has no blocks to allocate.
//
// Neither mode 0 nor FallocZeroRange promises a later write inside the
// range its space, as Linux's unwritten extents do: data is written
// copy-on-write, so overwriting allocated blocks takes fresh ones until
// the write-back frees the old, and on a full volume gets ENOSPC. What
// they promise is the blocks themselves: the range is allocated and its
// space taken from statfs, not left to other files.
//
// FALLOC_FL_PUNCH_HOLE without FALLOC_FL_KEEP_SIZE, with
// FALLOC_FL_ZERO_RANGE, and the other modes (COLLAPSE_RANGE,
// INSERT_RANGE, UNSHARE_RANGE) give EOPNOTSUPP, as Linux gives them where
// a filesystem lacks them; a negative offset or a length of 0 gives
// EINVAL.
//
// For mode 0 and FallocKeepSize, every block the holes need is reserved
// before anything changes, so a fallocate that does not fit fails with
// ENOSPC and leaves the file as it was. One that fails later (an I/O
// error) sizes the file back to what it was, which gives back what it took
// past the old end; holes inside the file it filled stay filled, with
// zeros.
func (v *Volume) Fallocate(ino Ino, mode uint32, off, length int64) error {
	const known = FallocKeepSize | FallocPunchHole | FallocZeroRange
	switch {
	case off < 0 || length <= 0:
		return opErr("fallocate", "", ErrInvalid)
	case mode&^known != 0,
		mode&FallocPunchHole != 0 && mode&FallocZeroRange != 0,
		mode&FallocPunchHole != 0 && mode&FallocKeepSize == 0:
		return opErr("fallocate", "", ErrNotSupported)
	case uint64(off)+uint64(length) > MaxFileSize:
		return opErr("fallocate", "", ErrFileTooBig)
	}
	if err := v.refuseChange(); err != nil {
		return opErr("fallocate", "", err)
	}
	start, end := uint64(off), uint64(off+length)
	keep := mode&FallocKeepSize != 0
	err := v.withData(ino, func(n *inode, fd *fileData) error {
		switch {
		case mode&FallocPunchHole != 0:
			return v.punch(ino, n, fd, start, end)
		case mode&FallocZeroRange != 0:
			return v.zeroRange(ino, n, fd, start, end, keep)
		}
		return v.preallocate(ino, n, fd, start, end, keep, false)
	})
	return opErrOrNil("fallocate", "", err)
}

// preallocate fills [start, end) of the file with zeros, extending it to
// end unless keep: its holes only, or the whole range if whole. The
// blocks that takes are reserved up front (fd.mu held).
func (v *Volume) preallocate(ino Ino, n *inode, fd *fileData, start, end uint64, keep, whole bool) error {
	size := fd.size.Load()
	if keep {
		end = min(end, size)
	}
	fill := v.holes(n, fd, start, end)
	if whole && start < end {
		fill = [][2]uint64{{start, end}}
	}
	if err := v.prepay(fd, v.fallocBlocks(n, fd, fill, end)); err != nil {
		return err
	}
	err := v.fillHoles(ino, n, fd, fill, end)
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
}

// zeroRange is Fallocate's FallocZeroRange (fd.mu held): the range is
// punched, then filled with zeros, as mode 0 fills holes; a file that is
// and stays inline only has its bytes zeroed and its size set.
func (v *Volume) zeroRange(ino Ino, n *inode, fd *fileData, start, end uint64, keep bool) error {
	if err := v.punch(ino, n, fd, start, end); err != nil {
		return err
	}
	size := fd.size.Load()
	newSize := max(size, end)
	if keep {
		newSize = size
	}
	if start >= newSize {
		return nil // all past the end, with KEEP_SIZE: nothing is allocated there
	}
	fd.mtime.Store(v.now())
	fd.ahead.Store(true)
	if newSize <= uint64(v.opts.InlineThreshold) && !n.hasExtents() {
		// punch zeroed the inline bytes (it wrote the file back, so nothing
		// is dirty); the bytes past them read as zeros, and growing an
		// inline file that stays inline dirties nothing (growingChunk).
		if err := v.extendTo(n, fd, newSize); err != nil {
			return err
		}
		return v.writeBack(ino, n, fd)
	}
	err := v.preallocate(ino, n, fd, start, end, keep, true)
	if err != nil && fd.ahead.Load() {
		v.markDirty(ino, fd) // the new mtime, if nothing else: for the commit
	}
	return err
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

// prepay reserves blocks for fd's chunks up front (fd.prepaid).
func (v *Volume) prepay(fd *fileData, blocks uint64) error {
	err := v.reserveSettling(blocks)
	if err == nil {
		fd.prepaid = blocks
	}
	return err
}

// reserveSettling reserves blocks (space.reserve). As a write does
// (writeSpace), when they are not free it makes frees waiting for a
// commit allocatable, then checkpoints to settle the headroom, and asks
// again.
func (v *Volume) reserveSettling(blocks uint64) error {
	err := v.space.reserve(blocks, v.logUsed())
	if errors.Is(err, ErrNoSpace) && v.space.hasPending() {
		if serr := v.settleFrees(); serr != nil {
			return serr
		}
		err = v.space.reserve(blocks, v.logUsed())
	}
	if errors.Is(err, ErrNoSpace) && v.logUsed() > 0 {
		v.mu.Lock()
		cerr := v.roomCheckpoint()
		v.mu.Unlock()
		if cerr == nil {
			err = v.space.reserve(blocks, v.logUsed())
		}
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
