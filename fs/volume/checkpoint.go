package volume

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/journal"
)

// ckptRef is a checkpoint a superblock slot names, and its blocks.
type ckptRef struct {
	block   uint64
	extents []alloc.Extent
}

// ckptExtents returns the blocks of the checkpoints either slot names:
// both stay in use, because a torn write of one slot falls back to the
// other.
func (v *Volume) ckptExtents() []alloc.Extent {
	out := v.refs[0].extents
	if v.refs[1].block != v.refs[0].block {
		out = append(append([]alloc.Extent(nil), out...), v.refs[1].extents...)
	}
	return out
}

// writeSuperblock makes sb current (format.WriteSuperblock flushes first,
// so everything sb names is durable). The slot it overwrites named a
// checkpoint that, unless the other slot still names it, is freed.
// v.ckptMu or exclusive use of v is held.
func (v *Volume) writeSuperblock(sb *format.Superblock) error {
	if err := format.WriteSuperblock(v.dev, sb); err != nil {
		return fmt.Errorf("superblock: %w", err)
	}
	slot := sb.Generation % 2
	cur := v.refs[1-slot]
	if sb.Checkpoint != cur.block {
		cur = v.pending
	}
	old := v.refs[slot]
	v.refs[slot] = cur
	if old.block != 0 && old.block != v.refs[0].block && old.block != v.refs[1].block {
		v.releaseAll(old.extents)
	}
	v.sb = *sb
	return nil
}

// checkpoint writes the whole committed metadata as a new checkpoint and
// points a superblock at it, so that the log before it can be reused; with
// clean, the superblock also says that nothing needs replaying. v.mu is
// held, for reading at least: no transaction is appended meanwhile.
//
// It holds the metadata lock across its device writes, so changes wait
// for it: it is for Close and a full log. The periodic commit uses
// checkpointConcurrent.
func (v *Volume) checkpoint(clean bool) error {
	v.ckptMu.Lock()
	defer v.ckptMu.Unlock()
	d, err := v.draft(v.dev)
	if err != nil {
		return err
	}
	return v.publish(d, clean)
}

// checkpointConcurrent is the periodic checkpoint. It encodes the metadata
// under the read lock into memory (about 50 bytes per file, for the time
// of the write), releases the lock, and only then writes it and the
// superblock: changes wait for the encoding, never for the device. That
// is safe because the superblock it writes starts replay where the log
// stood at the encoding (journal.Mark), so transactions appended meanwhile
// are replayed over it, and a block they free is reused only once their
// transaction is durable in that log. A full log (commit) or Close
// meanwhile waits for v.ckptMu; so does Check, which must not see the
// draft's blocks owned by nothing.
func (v *Volume) checkpointConcurrent() error {
	v.mu.RLock()
	if v.closed {
		v.mu.RUnlock()
		return nil
	}
	v.ckptMu.Lock() // inside v.mu, as everywhere
	defer v.ckptMu.Unlock()
	mem := &capture{Device: v.dev}
	d, err := v.draft(mem)
	v.mu.RUnlock()
	if err != nil {
		return err
	}
	if err := mem.writeTo(v.dev); err != nil {
		v.releaseAll(d.extents)
		return fmt.Errorf("checkpoint: %w", err)
	}
	return v.publish(d, false)
}

// draft is a checkpoint written and not yet current.
type draft struct {
	pos     journal.Position // where replay starts after it
	seq     uint64           // the first transaction it does not hold
	info    format.CheckpointInfo
	extents []alloc.Extent
	nextIno uint64
}

// draft writes the committed metadata to dev as a checkpoint in freshly
// allocated blocks (v.mu held, for reading at least, and v.ckptMu).
func (v *Volume) draft(dev device.Device) (draft, error) {
	d := draft{nextIno: uint64(v.inodes.next)}
	d.pos, d.seq = v.j.Mark()
	w, err := format.NewCheckpointWriter(dev, format.CheckpointOptions{
		BlockSize: uint32(v.blockSize),
		NextSeq:   d.seq,
		NextGen:   v.nextGen,
		Alloc: func(n uint64) (uint64, uint64, error) {
			var none uint64
			e, err := v.space.alloc(v.dataStart, n, &none)
			if err != nil {
				return 0, 0, err
			}
			d.extents = append(d.extents, e)
			return e.Off, e.Len, nil
		},
		Free: func(start, n uint64) {
			v.releaseAll([]alloc.Extent{{Off: start, Len: n}})
			d.extents = trimExtents(d.extents, alloc.Extent{Off: start, Len: n})
		},
		SizeHint: 128 * (v.inodes.used + 16),
	})
	if err != nil {
		return d, fmt.Errorf("checkpoint: %w", err)
	}
	if err := v.records(w); err != nil {
		w.Abort()
		return d, fmt.Errorf("checkpoint: %w", err)
	}
	if d.info, err = w.Finish(); err != nil {
		w.Abort()
		return d, fmt.Errorf("checkpoint: %w", err)
	}
	return d, nil
}

// publish makes a written draft current: a superblock names it (after a
// flush), the log before it is released, and the frees of the
// transactions it holds become allocatable (v.ckptMu held).
func (v *Volume) publish(d draft, clean bool) error {
	sb := v.sb
	sb.Checkpoint = d.info.Block
	sb.LogHead, sb.LogPrev, sb.LogSeq = d.pos.Block, d.pos.Prev, d.seq
	sb.NextIno = d.nextIno
	sb.Flags &^= format.FlagClean
	if clean {
		sb.Flags |= format.FlagClean
	}
	v.pending = ckptRef{block: d.info.Block, extents: d.extents}
	if err := v.writeSuperblock(&sb); err != nil {
		v.releaseAll(d.extents)
		return fmt.Errorf("checkpoint: %w", err)
	}
	// The superblock covers every transaction before seq: the log up to pos
	// may be overwritten, and the blocks those transactions freed reused.
	if err := v.j.Release(d.pos); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	v.space.durable(d.seq - 1)
	v.space.setCheckpoint(blocksIn(d.extents))
	v.acct.checkpoints.Inc()
	v.opts.Logger.WithField("records", d.info.Records).WithField("bytes", d.info.PayloadLen).Debug("checkpoint written")
	return nil
}

// capture is a device that keeps the writes made to it in memory, for
// writeTo to apply later; it cannot be read.
type capture struct {
	device.Device // the real device: Size
	writes        []capturedWrite
}

type capturedWrite struct {
	off int64
	p   []byte
}

func (c *capture) WriteAt(p []byte, off int64) (int, error) {
	c.writes = append(c.writes, capturedWrite{off, bytes.Clone(p)})
	return len(p), nil
}

func (c *capture) ReadAt([]byte, int64) (int, error) {
	return 0, errors.New("checkpoint capture: not readable")
}

func (c *capture) Flush() error { return nil }
func (c *capture) Close() error { return nil }

// writeTo applies the captured writes to dev, in order.
func (c *capture) writeTo(dev device.Device) error {
	for _, w := range c.writes {
		if _, err := dev.WriteAt(w.p, w.off); err != nil {
			return err
		}
	}
	return nil
}

// trimExtents removes the blocks of f from es (f lies inside one of them,
// at its end: the unused tail a checkpoint writer gives back).
func trimExtents(es []alloc.Extent, f alloc.Extent) []alloc.Extent {
	out := es[:0]
	for _, e := range es {
		if f.Off >= e.Off && f.End() <= e.End() {
			if f.Off > e.Off {
				out = append(out, alloc.Extent{Off: e.Off, Len: f.Off - e.Off})
			}
			if f.End() < e.End() {
				out = append(out, alloc.Extent{Off: f.End(), Len: e.End() - f.End()})
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// records writes to w the records that rebuild the committed metadata:
// every inode with its data, symlink target and xattrs first, then every
// directory's entries in cookie order, so an entry always follows both its
// inodes (v.mu held). The inode, entry and extent records, one or two per
// file, go through the writer's unboxed methods from one reused struct
// each: no allocation per file, and this runs under the metadata lock.
func (v *Volume) records(w *format.CheckpointWriter) error {
	var (
		err error
		ir  format.InodeRec
		er  format.ExtentsRec
		dr  format.DirentRec
	)
	v.inodes.all(func(ino Ino, n *inode) bool {
		n.recordInto(ino, &ir)
		if err = w.AddInode(&ir); err == nil && n.x != nil {
			err = v.inodeExtRecords(w, ino, n, &er)
		}
		return err == nil
	})
	if err != nil {
		return err
	}
	v.inodes.all(func(ino Ino, n *inode) bool {
		d := n.dirOf()
		if d == nil {
			return true
		}
		dr.Parent = uint64(ino)
		for _, e := range d.ents {
			if e.name == "" {
				continue
			}
			dr.Ino, dr.Cookie, dr.Name = uint64(e.ino), e.cookie, e.name
			if err = w.AddDirent(&dr); err != nil {
				return false
			}
		}
		return true
	})
	return err
}

// inodeExtRecords writes what hangs off one inode's extension: its data
// or symlink target, and its xattrs.
func (v *Volume) inodeExtRecords(w *format.CheckpointWriter, ino Ino, n *inode, er *format.ExtentsRec) error {
	x := n.x
	var err error
	switch {
	case n.isLink():
		err = w.Add(format.SymlinkRec{Ino: uint64(ino), Target: x.target})
	case x.inline != nil:
		err = w.Add(format.InlineRec{Ino: uint64(ino), Data: x.inline})
	case x.extents != nil:
		er.Ino, er.Extents = uint64(ino), x.extents
		err = w.AddExtents(er)
	}
	for _, a := range x.xattrs {
		if err != nil {
			break
		}
		err = w.Add(format.XattrSetRec{Ino: uint64(ino), Name: a.name, Value: a.value})
	}
	return err
}
