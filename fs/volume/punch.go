package volume

import (
	"errors"
	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/iobuf"
)

// Hole punching (Fallocate's FallocPunchHole, and the first step of
// FallocZeroRange, whose second fills the range as mode 0 fills holes). The format has extents and holes only, so a punch is
// an extent map without the range's whole blocks, committed like any
// write-back's map, their blocks freed once it is durable; the blocks at
// the edges, partly inside the range, are rewritten copy-on-write with
// zeros inside it, as a write rewrites them, and logged with the same
// transaction (and data sums). Dirty data is written back first, so the
// punch works on committed state alone: dirty chunks wholly inside the
// range are set aside instead (never written, their reservation given
// back), and put back if the punch fails.

// punch makes the whole blocks of [start, end) inside the file holes and
// zeroes the range's bytes in the blocks at its edges (see Fallocate).
// fd.mu is held.
func (v *Volume) punch(ino Ino, n *inode, fd *fileData, start, end uint64) error {
	size := fd.size.Load()
	end = min(end, size) // past the end is a hole already
	if start >= end {
		return nil
	}
	bs := uint64(v.blockSize)
	pb, pe := blocksFor(start, v.blockSize), end/bs
	if end == size {
		pe = blocksFor(size, v.blockSize) // the last block's bytes past the end are no data
	}
	aside := v.setAside(fd, pb*bs, pe*bs)
	if err := v.writeBack(ino, n, fd); err != nil {
		v.putBack(ino, fd, aside)
		return err
	}
	cut, err := v.punchCommitted(ino, n, fd, start, end, pb, pe)
	if cut {
		v.dropAside(aside)
	} else {
		v.putBack(ino, fd, aside)
	}
	return err
}

// aside holds dirty chunks a punch took out of a file, and the blocks
// still reserved for them.
type aside struct {
	chunks map[uint64]*iobuf.Buf
	blocks uint64
	dirty  int64
}

// setAside takes out of fd the dirty chunks whose bytes lie within file
// bytes [from, to), keeping their reservation (fd.mu held).
func (v *Volume) setAside(fd *fileData, from, to uint64) aside {
	var a aside
	cs := v.chunkSize()
	for c, bb := range fd.chunks {
		if c*cs < from || c*cs+uint64(len(bb.B)) > to {
			continue
		}
		if a.chunks == nil {
			a.chunks = make(map[uint64]*iobuf.Buf)
		}
		a.chunks[c] = bb
		delete(fd.chunks, c)
		b := blocksFor(uint64(len(bb.B)), v.blockSize)
		a.blocks += b
		a.dirty += int64(len(bb.B))
		fd.blocks -= b
		fd.unwritten.Add(-int64(b))
		fd.dirty -= int64(len(bb.B))
	}
	return a
}

// putBack returns chunks set aside to fd, dirty again, when the punch did
// not happen: their data is still the file's (fd.mu held).
func (v *Volume) putBack(ino Ino, fd *fileData, a aside) {
	if len(a.chunks) == 0 {
		return
	}
	if fd.chunks == nil {
		fd.chunks = make(map[uint64]*iobuf.Buf)
	}
	for c, bb := range a.chunks {
		fd.chunks[c] = bb
	}
	fd.blocks += a.blocks
	fd.unwritten.Add(int64(a.blocks))
	fd.dirty += a.dirty
	v.markDirty(ino, fd)
}

// dropAside forgets chunks set aside and gives back their reservation.
func (v *Volume) dropAside(a aside) {
	for _, bb := range a.chunks {
		v.putBuf(bb)
	}
	v.space.unreserve(a.blocks)
}

// edgeZero is a block at a punch's edge: the bytes [from, to) of file
// block b are zeroed, the rest kept.
type edgeZero struct{ b, from, to uint64 }

// punchCommitted punches the committed file (nothing is dirty): it cuts
// logical blocks [pb, pe) out of the extent map and zeroes the bytes of
// [start, end) in the mapped blocks at its edges, or, for an inline
// file, the inline bytes. It reports whether the whole blocks
// are punched (committed, or there was nothing to cut), which an error
// for the edges leaves true (fd.mu held, nothing dirty).
func (v *Volume) punchCommitted(ino Ino, n *inode, fd *fileData, start, end, pb, pe uint64) (bool, error) {
	if n.x != nil && n.x.inline != nil {
		return true, v.zeroInline(ino, n, fd, start, end)
	}
	extents, cut := n.extents(), []alloc.Extent(nil)
	if pb < pe {
		extents, cut = cutExtents(extents, pb, pe)
	}
	eds := v.edges(n, start, end, fd.size.Load())
	if len(cut) == 0 && len(eds) == 0 {
		return true, nil // all holes already
	}
	held := uint64(len(eds))
	err := v.reserveSettling(held)
	if errors.Is(err, ErrNoSpace) && len(cut) > 0 {
		// A full volume: the whole blocks go first, in a transaction of
		// their own, and their space, once that is durable, is what the
		// edges take.
		if err := v.commitPunch(ino, n, fd, extents, cut, nil, nil); err != nil {
			return false, err
		}
		extents, cut = n.extents(), nil
		err = v.reserveSettling(held)
		if err != nil {
			return true, err
		}
	} else if err != nil {
		return false, err
	}
	v.wbGate.RLock() // fresh blocks belong to nothing until the commit
	defer v.wbGate.RUnlock()
	extents, dropped, fresh, sums, err := v.zeroEdges(extents, eds, &held)
	if err == nil {
		err = v.commitPunch(ino, n, fd, extents, append(cut, dropped...), fresh, sums)
	}
	if err != nil {
		v.releaseAll(fresh) // never referenced by a durable record
	}
	v.space.unreserve(held) // an edge that became all zeros took none
	return err == nil || len(cut) == 0, err
}

// edges returns the mapped blocks at the edges of a punch of [start, end)
// (end at most the size) that keep bytes outside it.
func (v *Volume) edges(n *inode, start, end, size uint64) []edgeZero {
	bs := uint64(v.blockSize)
	var out []edgeZero
	add := func(b, from, to uint64) {
		if _, ok := n.findExtent(b); ok {
			out = append(out, edgeZero{b, from, to})
		}
	}
	lb, rb := start/bs, end/bs
	tail := end < size && end%bs != 0 // the right edge's block keeps data after end
	switch {
	case start%bs != 0 && tail && lb == rb:
		add(lb, start%bs, end%bs)
	default:
		if start%bs != 0 {
			add(lb, start%bs, bs) // to the block's end: past the file's end nothing is kept
		}
		if tail {
			add(rb, 0, end%bs)
		}
	}
	return out
}

// zeroEdges rewrites each edge block, copy-on-write, with its range
// zeroed, into a fresh block taken from the *held blocks reserved, and
// returns the extent map with them in place, the blocks it drops, the
// fresh blocks and their checksums. An edge that is all
// zeros afterwards becomes a hole and takes no block. wbGate is held.
func (v *Volume) zeroEdges(extents []format.Extent, eds []edgeZero, held *uint64) (out []format.Extent, dropped, fresh []alloc.Extent, sums *writeSums, err error) {
	bs := uint64(v.blockSize)
	sums = v.newWriteSums()
	buf := make([]byte, bs)
	for _, ed := range eds {
		e, _ := findExtent(extents, ed.b)
		old := e.Physical + ed.b - e.Logical
		if err := v.readData(buf, int64(old*bs), ed.b*bs); err != nil {
			return nil, nil, fresh, nil, err
		}
		clear(buf[ed.from:ed.to])
		var cut []alloc.Extent
		extents, cut = cutExtents(extents, ed.b, ed.b+1)
		dropped = append(dropped, cut...)
		if allZero(buf) {
			continue
		}
		ne, err := v.space.alloc(old, 1, held)
		if err != nil {
			return nil, nil, fresh, nil, err
		}
		fresh = append(fresh, ne)
		if _, err := v.dev.WriteAt(buf, int64(ne.Off*bs)); err != nil {
			return nil, nil, fresh, nil, opErr("fallocate", "", err)
		}
		sums.extent(ne.Off, 1)
		sums.wrote(buf)
		extents = insertExtents(extents, []format.Extent{{Logical: ed.b, Physical: ne.Off, Len: 1}})
	}
	return extents, dropped, fresh, sums, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// commitPunch commits the file's new extent map, the blocks fresh holds
// written, and bumps its mtime and ctime; the blocks dropped are freed
// once that is durable (fd.mu held, nothing dirty).
func (v *Volume) commitPunch(ino Ino, n *inode, fd *fileData, extents []format.Extent, dropped, fresh []alloc.Extent, sums *writeSums) error {
	rec := format.ExtentsRec{Ino: uint64(ino), Extents: extents}
	if err := v.loggable(&rec, sums); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.now()
	r := n.record(ino)
	r.Mtime, r.Ctime = now, max(r.Ctime, now)
	recs := append([]format.Record{r, rec}, sums.records(ino)...)
	seq, err := v.commit(recs...)
	if err != nil {
		return opErr("fallocate", "", err)
	}
	v.freeAfter(dropped, seq)
	fd.mtime.Store(now)
	v.countUnsynced(fresh)
	return nil
}

// zeroInline zeroes bytes [start, end) of an inline file, in the metadata
// (fd.mu held, nothing dirty).
func (v *Volume) zeroInline(ino Ino, n *inode, fd *fileData, start, end uint64) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	data := append([]byte(nil), n.x.inline...)
	if start < uint64(len(data)) {
		clear(data[start:min(end, uint64(len(data)))])
	}
	now := v.now()
	r := n.record(ino)
	r.Mtime, r.Ctime = now, max(r.Ctime, now)
	if _, err := v.commit(r, format.InlineRec{Ino: uint64(ino), Data: data}); err != nil {
		return opErr("fallocate", "", err)
	}
	fd.mtime.Store(now)
	return nil
}
