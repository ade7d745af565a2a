package volume

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/iobuf"
)

// fileData is the open-file state of a regular inode, shared by all its
// handles: the data lock, and the dirty data not yet written to the device.
//
// Dirty data is kept in chunks of chunkSize bytes, keyed by chunk index. A
// dirty chunk's buffer holds the chunk's whole current content up to the end
// of the chunk or of the file, whichever comes first: it is filled from the
// device when first touched, so write-back writes whole chunks and never
// reads. Size and mtime run ahead of the inode's committed ones while
// ahead is set; GetAttr reads them atomically under the metadata lock.
type fileData struct {
	mu     sync.RWMutex // the data lock: read for reads, write for the rest
	chunks map[uint64]*iobuf.Buf
	dirty  int64  // bytes in chunks
	blocks uint64 // blocks reserved for the chunks (space.reserve)
	// prepaid: blocks a fallocate reserved up front for the chunks it
	// will fill, which chunkUpTo takes before asking the space for more.
	// Under the data lock; 0 outside Fallocate.
	prepaid uint64
	// unwritten is the chunks' blocks until the write-back that places
	// them commits (under v.mu): GetAttr adds it to st_blocks, as ext4
	// counts delayed allocation, without taking the data lock.
	unwritten atomic.Int64
	writers   atomic.Int32 // handles open for writing: open adds under mu, Release drops under the data lock
	// pinned: a Release whose write-back failed left its open of the
	// inode to the volume, so the dirty data outlives the last handle
	// until a write-back succeeds (unpin). Under the data lock.
	pinned bool
	// syncing: the write-back running is an fsync's (fsyncWriteBack).
	// Under the data lock.
	syncing bool
	home    Ino // directory whose cursor places the data

	size  atomic.Uint64
	mtime atomic.Int64
	ahead atomic.Bool // size and mtime differ from the committed inode

	q dirtyLink // place in the volume's dirty queue (Volume.dirtyMu)
}

// chunkSize is the unit of dirty data: big enough that a large sequential
// write costs few map entries and device writes, small enough that a random
// small write reads and rewrites little.
func (v *Volume) chunkSize() uint64 { return max(64<<10, uint64(v.blockSize)) }

// attach returns ino's fileData, creating it (v.mu held for writing).
func (v *Volume) attach(n *inode, home Ino) *fileData {
	x := n.ext()
	if x.data == nil {
		v.acct.files.Alloc(fileBytes)
		x.data = &fileData{home: home}
		x.data.size.Store(n.size)
		x.data.mtime.Store(n.mtime)
	}
	return x.data
}

// detach drops ino's fileData once no handle uses it and it holds no dirty
// data (v.mu held for writing).
func (v *Volume) detach(n *inode) {
	if n.x != nil && n.x.data != nil && n.opens == 0 && len(n.x.data.chunks) == 0 && !n.x.data.ahead.Load() {
		n.x.data = nil
		v.acct.files.Free(fileBytes)
		if n.x.empty() {
			n.x = nil // most files need none: see "# Memory" in doc.go
		}
	}
}

// readAt copies file bytes [off, off+len(p)) into p: dirty chunks from
// memory, the rest from inline data or the device, holes as zeros. The range
// lies below the file size. A run of chunks without dirty data is one
// committed read, so a large read of one extent is one device read. fd.mu
// is held (read or write).
func (v *Volume) readAt(n *inode, fd *fileData, p []byte, off uint64) error {
	cs := v.chunkSize()
	for len(p) > 0 {
		c := off / cs
		k := min(uint64(len(p)), (c+1)*cs-off)
		if bb, ok := fd.chunks[c]; ok {
			b := bb.B
			at := off - c*cs
			m := copy(p[:k], b[min(at, uint64(len(b))):])
			clear(p[m:k])
		} else {
			for k < uint64(len(p)) {
				if _, dirty := fd.chunks[(off+k)/cs]; dirty {
					break
				}
				k = min(uint64(len(p)), k+cs)
			}
			if err := v.readCommitted(n, p[:k], off); err != nil {
				return err
			}
		}
		p, off = p[k:], off+k
	}
	return nil
}

// readCommitted reads committed data: inline bytes, or extents from the
// device (verified, readData), zeros in holes.
func (v *Volume) readCommitted(n *inode, p []byte, off uint64) error {
	x := n.x
	if x.inline != nil {
		m := 0
		if off < uint64(len(x.inline)) {
			m = copy(p, x.inline[off:])
		}
		clear(p[m:])
		return nil
	}
	bs := uint64(v.blockSize)
	for len(p) > 0 {
		b := off / bs
		e, ok := n.findExtent(b)
		var k uint64
		switch {
		case ok: // inside e: read to its end
			k = min(uint64(len(p)), (e.Logical+e.Len)*bs-off)
			if err := v.readData(p[:k], int64(e.Physical*bs+off-e.Logical*bs), off); err != nil {
				return err
			}
		default: // in a hole: zeros up to the next extent
			k = uint64(len(p))
			if e.Len > 0 {
				k = min(k, e.Logical*bs-off)
			}
			clear(p[:k])
		}
		p, off = p[k:], off+k
	}
	return nil
}

// findExtent returns the extent holding logical block b (ok), or else the
// first extent after b (Len 0 if none).
func findExtent(es []format.Extent, b uint64) (format.Extent, bool) {
	i, _ := slices.BinarySearchFunc(es, b, func(e format.Extent, b uint64) int {
		switch {
		case e.Logical+e.Len <= b:
			return -1
		case e.Logical > b:
			return 1
		}
		return 0
	})
	if i == len(es) {
		return format.Extent{}, false
	}
	return es[i], es[i].Logical <= b
}

// chunk returns chunk c ready for writing, loading it from committed data
// and growing it to hold file bytes up to end (zeros beyond the old size).
// It reserves the blocks the chunk will need at write-back and fails with
// ErrNoSpace, changing nothing, when they are not there. fd.mu is held for
// writing.
func (v *Volume) chunk(n *inode, fd *fileData, c, end uint64) ([]byte, error) {
	return v.chunkUpTo(n, fd, c, end, end)
}

// chunkUpTo is chunk for a write of file bytes [from, end), which the
// caller copies into the returned chunk at once, as far as it reaches:
// when the blocks up to end are not all free, it grows the chunk as far
// as whole free blocks take it, but past from at the least, so the
// returned chunk may end before end. The chunk's content below the file
// size is always kept whole (copy-on-write rewrites it). A new chunk the
// write covers from its start is neither loaded nor zeroed where the
// write covers it.
func (v *Volume) chunkUpTo(n *inode, fd *fileData, c, from, end uint64) ([]byte, error) {
	least := min(from+1, end)
	cs, bs := v.chunkSize(), uint64(v.blockSize)
	start := c * cs
	bb, ok := fd.chunks[c]
	var b []byte
	if ok {
		b = bb.B
	}
	have := uint64(len(b))
	if !ok {
		// Load what the file holds of this chunk below its current size.
		have = min(cs, fd.size.Load()-min(start, fd.size.Load()))
	}
	want := max(have, min(cs, end-start))
	var held uint64
	if ok {
		held = blocksFor(have, v.blockSize)
	}
	need := blocksFor(want, v.blockSize)
	must := max(blocksFor(have, v.blockSize), blocksFor(min(cs, least-min(least, start)), v.blockSize))
	if need > held {
		pre := min(fd.prepaid, need-held)
		fd.prepaid -= pre
		got, err := v.space.reserveUpTo(max(must, held+pre)-held-pre, need-held-pre, v.logUsed())
		if err != nil {
			fd.prepaid += pre
			return nil, err
		}
		got += pre
		if held+got < need { // short of space: up to the last block held
			need = held + got
			want = max(have, need*bs)
		}
		fd.blocks += need - held
		fd.unwritten.Add(int64(need - held))
	}
	if !ok {
		var covered uint64 // chunk bytes the caller overwrites next
		if from <= start {
			covered = min(want, end-start)
		}
		bb = v.getBuf(roundUp(want, bs), covered)
		b = bb.B[:have]
		if err := v.readCommitted(n, b[min(covered, have):], start+min(covered, have)); err != nil {
			v.putBuf(bb)
			v.space.unreserve(need - held)
			fd.blocks -= need - held
			fd.unwritten.Add(-int64(need - held))
			return nil, err
		}
		if fd.chunks == nil {
			fd.chunks = make(map[uint64]*iobuf.Buf)
		}
		fd.dirty += int64(have)
	}
	if want > uint64(len(b)) {
		fd.dirty += int64(want) - int64(len(b))
		if want > uint64(cap(b)) { // move to a buffer of a larger class
			nb := v.getBuf(roundUp(want, bs), uint64(len(b)))
			copy(nb.B, b)
			v.putBuf(bb)
			bb = nb
		}
		b = bb.B[:want] // the bytes past the old length are zero
	}
	bb.B = b
	fd.chunks[c] = bb
	return b, nil
}

// getBuf returns a dirty-data buffer of n bytes of capacity at least,
// zeroed from byte from to its capacity: bytes past a chunk's length are
// kept zero, so that the last block of a file is written padded with
// zeros. The caller fills the bytes before from at once (a pooled buffer
// holds old data there).
func (v *Volume) getBuf(n, from uint64) *iobuf.Buf {
	bb := v.opts.Pool.Get(int(n))
	clear(bb.B[min(from, uint64(cap(bb.B))):cap(bb.B)])
	v.acct.dirty.Alloc(int64(cap(bb.B)))
	v.dirtyMem.Add(int64(cap(bb.B)))
	return bb
}

func (v *Volume) putBuf(bb *iobuf.Buf) {
	v.acct.dirty.Free(int64(cap(bb.B)))
	v.dirtyMem.Add(-int64(cap(bb.B)))
	bb.B = bb.B[:cap(bb.B)]
	v.opts.Pool.Put(bb)
}

func blocksFor(bytes uint64, blockSize int) uint64 {
	return (bytes + uint64(blockSize) - 1) / uint64(blockSize)
}

func roundUp(x, unit uint64) uint64 { return (x + unit - 1) / unit * unit }

// write copies p into the file at off through dirty chunks, extending the
// file as the bytes land. Space is reserved chunk by chunk: a write that
// meets the end of the space fills what is left, block by block, and
// returns the bytes written with ErrNoSpace; the size follows the data, so
// no byte the count leaves out is in the file. fd.mu is held for writing.
func (v *Volume) write(n *inode, fd *fileData, p []byte, off uint64) (int, error) {
	if err := v.growing(n, fd, off+uint64(len(p))); err != nil {
		return 0, err
	}
	cs := v.chunkSize()
	done := 0
	for len(p) > 0 {
		c := off / cs
		k := min(uint64(len(p)), (c+1)*cs-off)
		b, err := v.chunkUpTo(n, fd, c, off, off+k)
		if err != nil {
			return done, err
		}
		m := copy(b[off-c*cs:], p[:k])
		p, off, done = p[m:], off+uint64(m), done+m
		if off > fd.size.Load() {
			fd.size.Store(off)
			fd.ahead.Store(true)
		}
		if uint64(m) < k {
			return done, ErrNoSpace
		}
	}
	return done, nil
}

// extendTo grows the file to size end, if it is smaller (fd.mu held for
// writing).
func (v *Volume) extendTo(n *inode, fd *fileData, end uint64) error {
	if end <= fd.size.Load() {
		return nil
	}
	if err := v.growing(n, fd, end); err != nil {
		return err
	}
	fd.size.Store(end)
	fd.ahead.Store(true)
	return nil
}

// growing makes dirty, before the file grows to end, what write-back will
// have to rewrite because of it, so that its blocks are reserved now and
// write-back never runs out of space for data already taken: the chunk
// holding an old end inside a block (the device bytes past that end are
// stale, and are rewritten as zeros), and inline data the new size moves
// to blocks. Only their current bytes are loaded: write-back places the
// blocks a dirty chunk holds, and the rest of the file stays a hole until
// written. fd.mu is held for writing.
func (v *Volume) growing(n *inode, fd *fileData, end uint64) error {
	c, ok := v.growingChunk(n, fd, end)
	if !ok {
		return nil
	}
	_, err := v.chunk(n, fd, c, fd.size.Load())
	return err
}

// growingChunk returns the chunk growing makes dirty, if any. Nothing is
// stale past an old end in a hole, or in inline data that stays inline
// (the bytes past it read as zeros), so those need no block.
func (v *Volume) growingChunk(n *inode, fd *fileData, end uint64) (uint64, bool) {
	size, bs := fd.size.Load(), uint64(v.blockSize)
	inline := uint64(len(n.x.inline))
	switch {
	case end <= size:
	case inline > 0 && end > uint64(v.opts.InlineThreshold):
		return 0, true // inline data is below the block size
	case inline > 0 && inline <= size:
	case size%bs != 0 && inline == 0 && !v.mapped(n, fd, size/bs):
	case size%bs != 0:
		return size / v.chunkSize(), true
	}
	return 0, false
}

// mapped reports whether file block b holds data: in a dirty chunk or
// in a committed extent.
func (v *Volume) mapped(n *inode, fd *fileData, b uint64) bool {
	bs := uint64(v.blockSize)
	if bb, ok := fd.chunks[b*bs/v.chunkSize()]; ok && b*bs%v.chunkSize() < uint64(len(bb.B)) {
		return true
	}
	_, ok := n.findExtent(b)
	return ok
}

// truncateDirty cuts the dirty chunks to size (fd.mu held for writing).
func (v *Volume) truncateDirty(fd *fileData, size uint64) {
	cs := v.chunkSize()
	for c, bb := range fd.chunks {
		b := bb.B
		start := c * cs
		keep := min(uint64(len(b)), size-min(size, start))
		if keep == uint64(len(b)) {
			continue
		}
		fd.dirty -= int64(uint64(len(b)) - keep)
		freed := blocksFor(uint64(len(b)), v.blockSize) - blocksFor(keep, v.blockSize)
		v.space.unreserve(freed)
		fd.blocks -= freed
		fd.unwritten.Add(-int64(freed))
		clear(b[keep:]) // bytes past len stay zero (see writeBlocks)
		if keep == 0 {
			v.putBuf(bb)
			delete(fd.chunks, c)
			continue
		}
		bb.B = b[:keep]
	}
	fd.size.Store(size)
	fd.ahead.Store(true)
}
