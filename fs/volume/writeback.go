package volume

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
)

// writeBack makes fd's dirty state committed: the dirty chunks get fresh
// blocks near the file's directory cursor (copy-on-write: committed blocks
// are never overwritten), the data is written, and then one transaction
// sets the inode's size and times and its whole data map. Blocks the new
// map no longer references are freed once that transaction is durable.
// A file that fits Options.InlineThreshold is stored inline instead.
// Once a device error has stopped the volume it writes nothing and fails
// with ErrNotDurable: the data stays dirty, readable, never written.
//
// fd.mu is held for writing; v.mu is not held (it is taken to commit).
func (v *Volume) writeBack(ino Ino, n *inode, fd *fileData) error {
	if len(fd.chunks) == 0 && !fd.ahead.Load() {
		return nil
	}
	if err := v.refuseSync(); err != nil {
		return opErr("write", "", err)
	}
	v.wbGate.RLock()
	defer v.wbGate.RUnlock()
	size := fd.size.Load()
	var (
		recs    []format.Record
		dropped []alloc.Extent
		fresh   []alloc.Extent
		err     error
	)
	held := fd.blocks // what placing takes from the reservation
	if size <= uint64(v.opts.InlineThreshold) {
		recs, dropped, err = v.inlineRecs(ino, n, fd, size)
	} else if err = v.inlineToBlocks(n, fd); err == nil {
		held = fd.blocks
		recs, dropped, fresh, err = v.placeRecs(ino, n, fd, size)
	}
	if err != nil {
		v.unplace(fd, fresh, held)
		return err
	}
	v.mu.Lock()
	r := n.record(ino)
	r.Size = size
	r.Mtime = fd.mtime.Load()
	r.Ctime = max(r.Ctime, r.Mtime)
	recs[0] = r
	seq, err := v.commit(recs...)
	if err != nil {
		v.mu.Unlock()
		v.unplace(fd, fresh, held)
		if errors.Is(err, ErrReadOnly) { // stopped meanwhile: for an fsync, EIO
			err = v.refuseSync()
		}
		return opErr("write", "", err)
	}
	v.freeAfter(dropped, seq)
	if size == 0 {
		n.flags &^= inodeLost // emptied: nothing lost is in it
	}
	fd.ahead.Store(false)
	fd.unwritten.Store(0) // now in n's extents
	v.mu.Unlock()
	v.dropDirty(fd)
	v.acct.writebacks.Inc()
	v.countUnsynced(fresh)
	if fd.pinned {
		v.unpin(ino, n, fd)
	}
	return nil
}

// zeroAheadBelow: an fsync's extents shorter than this are zeroed ahead.
// The zeros cost a region's worth of disk writes at the next flush, which
// small files share (256 of 4 KiB per region: fsync-ed creates 1.10-1.29×
// faster) and large ones do not (64 KiB swift-put ran at 0.81×).
const zeroAheadBelow = 64 << 10

// maxUnsynced bounds the data one commit covers on a volume with data
// sums, and so what replay reads back after a crash: 256 MiB, under a
// second of reading here. A variable for tests.
var maxUnsynced int64 = 256 << 20

// countUnsynced adds a write-back's blocks to those the next commit will
// cover and, past maxUnsynced, asks the committer to commit now.
func (v *Volume) countUnsynced(written []alloc.Extent) {
	if !v.dataSums {
		return
	}
	if v.unsynced.Add(int64(blocksIn(written))*int64(v.blockSize)) > maxUnsynced {
		select {
		case v.syncKick <- struct{}{}:
		default:
		}
	}
}

// fsyncWriteBack is writeBack for an fsync: the data goes to the device
// and is flushed at once, so the blocks of its small extents are zeroed
// ahead on the host (device.ZeroAheader) and the flush has no conversion
// to commit (fd.mu held).
func (v *Volume) fsyncWriteBack(ino Ino, n *inode, fd *fileData) error {
	fd.syncing = true
	defer func() { fd.syncing = false }()
	return v.writeBack(ino, n, fd)
}

// unpin gives back the open a failed Release left to the volume, now that
// the data is written (fd.mu held, v.mu not).
func (v *Volume) unpin(ino Ino, n *inode, fd *fileData) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.dropPin(ino, n, fd)
}

// dropPin gives back the pin's open of the inode, letting the inode go if
// it was the last (fd.mu and v.mu held).
func (v *Volume) dropPin(ino Ino, n *inode, fd *fileData) {
	fd.pinned = false
	n.opens--
	if n.opens == 0 {
		v.detach(n)
		v.freeIfUnused(ino, n)
	}
}

// inlineRecs builds the records storing a file of size bytes inline; the
// first record is a placeholder for the inode's.
func (v *Volume) inlineRecs(ino Ino, n *inode, fd *fileData, size uint64) ([]format.Record, []alloc.Extent, error) {
	var data []byte
	if size > 0 {
		data = make([]byte, size)
		if err := v.readAt(n, fd, data, 0); err != nil {
			return nil, nil, err
		}
	}
	recs := []format.Record{nil, format.InlineRec{Ino: uint64(ino), Data: data}}
	if n.hasExtents() {
		recs = append(recs, format.ExtentsRec{Ino: uint64(ino)})
	}
	return recs, physical(n.extents()), nil
}

// inlineToBlocks makes the chunk of inline data that moves to blocks
// dirty, so that placeRecs places it. The growth past the inline
// threshold did already (growing), with its blocks reserved; this is for
// a volume last mounted with a larger threshold.
func (v *Volume) inlineToBlocks(n *inode, fd *fileData) error {
	if len(n.x.inline) == 0 {
		return nil
	}
	_, err := v.chunk(n, fd, 0, 0)
	return err
}

// placeRecs allocates and writes the dirty chunks of a file of size bytes
// and builds the records of its new extent map; the first record is a
// placeholder for the inode's. It returns the blocks the new map drops and
// the blocks it allocated (to give back if the commit fails).
func (v *Volume) placeRecs(ino Ino, n *inode, fd *fileData, size uint64) (recs []format.Record, dropped, fresh []alloc.Extent, err error) {
	bs, cs := uint64(v.blockSize), v.chunkSize()
	inline := n.x.inline
	endBlock := blocksFor(size, v.blockSize)
	extents, dropped := cutExtents(n.extents(), endBlock, math.MaxUint64)
	sums := v.newWriteSums()
	cks := make([]uint64, 0, len(fd.chunks))
	for c := range fd.chunks {
		cks = append(cks, c)
	}
	slices.Sort(cks)
	for len(cks) > 0 {
		// A run of consecutive chunks, each whole but the last: a chunk
		// ends short only where the file ended when it was loaded, and
		// the blocks after its bytes stay a hole (nothing reserved them).
		k := 1
		for k < len(cks) && cks[k] == cks[k-1]+1 && uint64(len(fd.chunks[cks[k-1]].B)) == cs {
			k++
		}
		last := cks[k-1]
		lb := cks[0] * cs / bs
		le := min(last*cs/bs+blocksFor(uint64(len(fd.chunks[last].B)), v.blockSize), endBlock)
		placed, err := v.place(fd, lb, le, sums)
		fresh = append(fresh, physical(placed)...)
		if err != nil {
			return nil, nil, fresh, err
		}
		var cut []alloc.Extent
		extents, cut = cutExtents(extents, lb, le)
		dropped = append(dropped, cut...)
		extents = insertExtents(extents, placed)
		cks = cks[k:]
	}
	rec := format.ExtentsRec{Ino: uint64(ino), Extents: extents}
	if err := v.loggable(&rec, sums); err != nil {
		return nil, nil, fresh, err
	}
	recs = append([]format.Record{nil, rec}, sums.records(ino)...)
	if inline != nil {
		recs = append(recs, format.InlineRec{Ino: uint64(ino)})
	}
	return recs, dropped, fresh, nil
}

// loggable refuses, with ErrNoSpace, an extent map too large for one
// record in one log transaction (free space too fragmented for the file):
// write-back then fails with nothing changed instead of committing a
// record the log cannot take. Only a map that might not fit is encoded to
// find out.
func (v *Volume) loggable(r *format.ExtentsRec, sums *writeSums) error {
	n := len(r.Extents)
	if n*maxExtentBytes+sums.logBytes() <= v.txnRoom {
		return nil
	}
	size := len(format.AppendRecord(nil, r)) + sums.logBytes()
	if n > format.MaxExtents || size > v.txnRoom {
		return fmt.Errorf("extent map of %d extents (%d bytes) over the %d bytes a log transaction holds: free space too fragmented: %w",
			n, size, v.txnRoom, ErrNoSpace)
	}
	return nil
}

// place allocates device blocks for logical blocks [lb, le), as few
// extents as free space allows, near the file's directory cursor, and
// writes the dirty chunks' bytes there, adding their checksums to sums.
func (v *Volume) place(fd *fileData, lb, le uint64, sums *writeSums) ([]format.Extent, error) {
	bs, cs := uint64(v.blockSize), v.chunkSize()
	hint := v.hint(fd)
	var placed []format.Extent
	for l := lb; l < le; {
		e, err := v.space.alloc(hint, le-l, &fd.blocks)
		if err != nil {
			return placed, err
		}
		placed = append(placed, format.Extent{Logical: l, Physical: e.Off, Len: e.Len})
		if z, ok := v.dev.(device.ZeroAheader); ok && fd.syncing && e.Len*bs < zeroAheadBelow {
			if err := z.ZeroAhead(int64(e.Off*bs), int64(e.Len*bs)); err != nil {
				return placed, opErr("write", "", err)
			}
		}
		// Write the bytes of logical blocks [l, l+e.Len), chunk by chunk.
		sums.extent(e.Off, e.Len)
		for off, end := l*bs, (l+e.Len)*bs; off < end; {
			c := off / cs
			b := fd.chunks[c].B
			at := off - c*cs
			k := min(end, (c+1)*cs) - off
			if err := v.writeBlocks(b, at, k, int64(e.Off*bs+off-l*bs), sums); err != nil {
				return placed, err
			}
			off += k
		}
		hint = e.End()
		l += e.Len
	}
	v.setCursor(fd, hint)
	return placed, nil
}

// writeBlocks writes k bytes of chunk buffer b from at to device offset
// devOff, and adds their checksums to sums; bytes past the buffer's end
// are zeros (the end of the file). A buffer whose capacity ends short of
// the last block (a block larger than its class) is copied into a pooled
// one first.
func (v *Volume) writeBlocks(b []byte, at, k uint64, devOff int64, sums *writeSums) error {
	p := b[min(at, uint64(cap(b))):min(at+k, uint64(cap(b)))]
	if at+k > uint64(cap(b)) {
		bb := v.opts.Pool.Get(int(k))
		defer v.opts.Pool.Put(bb)
		m := copy(bb.B, b[min(at, uint64(len(b))):])
		clear(bb.B[m:])
		p = bb.B
	}
	if _, err := v.dev.WriteAt(p, devOff); err != nil {
		return opErr("write", "", err)
	}
	sums.wrote(p)
	return nil
}

// dropDirty forgets fd's dirty chunks, gives back their reservation and
// takes fd out of the dirty queue.
func (v *Volume) dropDirty(fd *fileData) {
	for _, bb := range fd.chunks {
		v.putBuf(bb)
	}
	clear(fd.chunks)
	fd.dirty = 0
	v.unmarkDirty(fd)
	v.space.unreserve(fd.blocks)
	fd.blocks = 0
	fd.unwritten.Store(0)
}

// unplace gives back the blocks a failed write-back placed and returns
// to fd's reservation what placing took from it (fd.blocks was held
// before), in one step: the data stays dirty, and its retry must find its
// blocks still promised, not taken by other writers meanwhile.
func (v *Volume) unplace(fd *fileData, fresh []alloc.Extent, held uint64) {
	taken := held - fd.blocks
	if err := v.space.releaseReserving(fresh, taken); err != nil {
		v.opts.Logger.WithError(err).WithField("extents", fresh).Error("cannot give back blocks")
	}
	fd.blocks += taken
}

// releaseAll gives back at once blocks no durable record needs: those of
// a failed write-back, of a checkpoint not made current, or of one no
// superblock slot names any more.
func (v *Volume) releaseAll(es []alloc.Extent) {
	for _, e := range es {
		if err := v.space.release(e); err != nil {
			v.opts.Logger.WithError(err).WithField("extent", e).Error("cannot give back blocks")
		}
	}
}

// freeAfter frees blocks dropped by transaction seq once it is durable
// (v.mu held for writing, so frees reach the allocator in sequence order).
func (v *Volume) freeAfter(es []alloc.Extent, seq uint64) {
	for _, e := range es {
		if err := v.space.freeAfter(e, seq); err != nil {
			v.opts.Logger.WithError(err).WithField("extent", e).Error("cannot free blocks")
		}
	}
}

// hint returns where to place a file's next data: its directory's cursor,
// or the directory's home region if it has placed nothing yet.
func (v *Volume) hint(fd *fileData) uint64 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if d := v.homeDir(fd); d != nil {
		if c := d.cursor.Load(); c != 0 {
			return c
		}
	}
	// Spread directories over the data area by hashing the inode number.
	h := uint64(fd.home) * 0x9e3779b97f4a7c15
	return v.dataStart + h%v.space.dataBlocks
}

func (v *Volume) setCursor(fd *fileData, at uint64) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if d := v.homeDir(fd); d != nil {
		d.cursor.Store(at)
	}
}

// homeDir returns the live directory that places fd's data (v.mu held).
func (v *Volume) homeDir(fd *fileData) *dir {
	if n := v.inodes.get(fd.home); n != nil {
		return n.dirOf()
	}
	return v.inodes.get(RootIno).dirOf()
}
