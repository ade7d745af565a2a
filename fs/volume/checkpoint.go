package volume

import (
	"fmt"
	"math"

	"github.com/smallfs/smallfs/alloc"
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
// held for writing: no transaction is appended meanwhile.
//
// It holds the metadata lock across its device writes, so changes wait
// for it: it is for Close and a full log. It supersedes a periodic
// checkpoint being encoded (checkpointConcurrent), which it cancels.
// What it writes passes the guard (verifyCheckpoint) before it is made
// current. A failure other than want of space, the guard's included,
// stops the volume (failOnCheckpoint); a volume opened damaged writes
// none.
func (v *Volume) checkpoint(clean bool) (err error) {
	defer func() { v.failOnCheckpoint(err) }()
	if err := v.refuseChange(); err != nil {
		return err
	}
	if v.damagedOpen() {
		return nil
	}
	if s := v.snap; s != nil {
		s.cancelled = true
		v.snap = nil
		v.acct.ckptCancelled.Inc()
	}
	v.acct.ckptLocked.Inc()
	v.ckptMu.Lock()
	defer v.ckptMu.Unlock()
	d := draft{nextIno: uint64(v.inodes.next)}
	d.pos, d.seq = v.j.Mark()
	w, err := v.checkpointWriter(&d, v.nextGen, 128*(v.inodes.used+16))
	if err != nil {
		return err
	}
	c := newMetaCheck(v, v.inodes.next, true, false)
	if err := v.records(w, c); err != nil {
		w.Abort()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if d.info, err = w.Finish(); err != nil {
		w.Abort()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := v.verifyCheckpoint(c, d.extents); err != nil {
		v.releaseAll(d.extents)
		return err
	}
	return v.publish(d, clean)
}

// checkpointConcurrent is the periodic checkpoint. It holds the metadata
// as it was when it started, encoded into memory in slices that each hold
// the read lock for a millisecond or two (ckptSnapshot: changes meanwhile
// save what they overwrite first), then writes it and the superblock
// without the lock: changes wait for neither the encoding nor the device.
// That is safe because the superblock it writes starts replay where the
// log stood at the start (journal.Mark), so transactions appended
// meanwhile are replayed over it, and a block they free is reused only
// once their transaction is durable in that log. A checkpoint under the
// write lock meanwhile (full log) cancels it; Check waits for v.ckptMu,
// which it holds from the end of the encoding to the superblock, so
// Check never sees its blocks owned by nothing.
func (v *Volume) checkpointConcurrent() error {
	return v.snapshotCheckpoint(snapshotBudget, nil)
}

// snapshotCheckpoint is checkpointConcurrent, spending budget per hold of
// the read lock and calling between (if set) before each: tests change
// the metadata there.
func (v *Volume) snapshotCheckpoint(budget int, between func()) error {
	v.mu.RLock()
	damaged := v.damagedOpen()
	v.mu.RUnlock()
	if damaged {
		return nil
	}
	enc, err := v.encodeSnapshot(budget, between)
	if err != nil || enc == nil {
		return err
	}
	return v.writeSnapshot(enc)
}

// accountBuffer brings the checkpoint_buffer figure to n bytes held from
// accounted, and returns n.
func (v *Volume) accountBuffer(accounted, n int) int {
	switch {
	case accounted == 0 && n > 0:
		v.acct.ckptBuffer.Alloc(int64(n))
	case accounted > 0 && n == 0:
		v.acct.ckptBuffer.Free(int64(accounted))
	case n != accounted:
		v.acct.ckptBuffer.Resize(int64(n - accounted))
	}
	return n
}

// writeSnapshot writes an encoded snapshot and makes it current, then
// releases v.ckptMu, which encodeSnapshot returned held. A failure other
// than want of space stops the volume.
func (v *Volume) writeSnapshot(enc *encodedSnapshot) (err error) {
	defer v.ckptMu.Unlock()
	defer enc.buf.Release()
	defer v.accountBuffer(enc.buf.Len(), 0)
	defer func() { v.failOnCheckpoint(err) }()
	if err := v.refuseChange(); err != nil {
		return err
	}
	w, err := v.checkpointWriter(&enc.d, enc.nextGen, uint64(enc.buf.Len()))
	if err != nil {
		return err
	}
	if err := w.AddBuffer(&enc.buf); err != nil {
		w.Abort()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if enc.d.info, err = w.Finish(); err != nil {
		w.Abort()
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := v.verifyCheckpoint(enc.check, nil); err != nil {
		v.releaseAll(enc.d.extents)
		return err
	}
	return v.publish(enc.d, false)
}

// encodedSnapshot is a periodic checkpoint encoded and not yet written.
type encodedSnapshot struct {
	buf     format.RecordBuffer
	d       draft
	nextGen uint64
	saved   int        // inodes and directories saved by changes meanwhile
	check   *metaCheck // what the encoding saw, for the guard
}

// encodeSnapshot encodes the metadata as it is now, in slices (see
// ckptSnapshot). It returns with v.ckptMu held, or nil if the volume is
// closed or a checkpoint under the write lock cancelled it meanwhile.
func (v *Volume) encodeSnapshot(budget int, between func()) (*encodedSnapshot, error) {
	v.mu.Lock()
	if err := v.refuseChange(); err != nil {
		v.mu.Unlock()
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if v.closed || v.snap != nil {
		v.mu.Unlock()
		return nil, nil
	}
	s := newSnapshot(v.inodes.next)
	s.check = newMetaCheck(v, v.inodes.next, true, true)
	enc := &encodedSnapshot{d: draft{nextIno: uint64(v.inodes.next)}, nextGen: v.nextGen, check: s.check}
	enc.buf.Pool = v.opts.Pool
	enc.d.pos, enc.d.seq = v.j.Mark()
	v.snap = s
	v.mu.Unlock()
	accounted := 0
	for done := false; !done; {
		if between != nil {
			between()
		}
		v.mu.RLock()
		if s.cancelled {
			v.mu.RUnlock()
			v.accountBuffer(accounted, 0)
			enc.buf.Release()
			return nil, nil
		}
		var err error
		done, err = s.encode(v, &enc.buf, budget)
		if err != nil || done {
			v.snap = nil
			enc.saved = s.saved
		}
		if done && err == nil {
			v.ckptMu.Lock() // inside v.mu, as everywhere
		}
		v.mu.RUnlock()
		if err != nil {
			v.accountBuffer(accounted, 0)
			enc.buf.Release()
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		accounted = v.accountBuffer(accounted, enc.buf.Len())
	}
	return enc, nil
}

// draft is a checkpoint written and not yet current.
type draft struct {
	pos     journal.Position // where replay starts after it
	seq     uint64           // the first transaction it does not hold
	info    format.CheckpointInfo
	extents []alloc.Extent
	nextIno uint64
}

// checkpointWriter starts writing checkpoint d to the device, in blocks
// it allocates and records in d.extents (v.ckptMu held).
func (v *Volume) checkpointWriter(d *draft, nextGen, sizeHint uint64) (*format.CheckpointWriter, error) {
	w, err := format.NewCheckpointWriter(v.dev, format.CheckpointOptions{
		BlockSize: uint32(v.blockSize),
		NextSeq:   d.seq,
		NextGen:   nextGen,
		Alloc: func(n uint64) (uint64, uint64, error) {
			var none uint64
			e, err := v.space.alloc(v.dataStart, n, &none)
			if err != nil {
				return 0, 0, err
			}
			if v.sums != nil { // what files wrote there is gone: a scrub must not check it
				v.sums.clear(e.Off, e.Len)
			}
			d.extents = append(d.extents, e)
			return e.Off, e.Len, nil
		},
		Free: func(start, n uint64) {
			v.releaseAll([]alloc.Extent{{Off: start, Len: n}})
			d.extents = trimExtents(d.extents, alloc.Extent{Off: start, Len: n})
		},
		SizeHint: sizeHint,
		Buffers:  v.opts.Pool,
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	return w, nil
}

// publish makes a written draft current: a superblock names it (after a
// flush), the log before it is released, and the frees of the
// transactions it holds become allocatable (v.ckptMu held).
func (v *Volume) publish(d draft, clean bool) error {
	sb := v.sb
	sb.Checkpoint = d.info.Block
	sb.LogHead, sb.LogPrev, sb.LogSeq = d.pos.Block, d.pos.Prev, d.seq
	sb.NextIno = d.nextIno
	// Every commit that ended is durable once the superblock's first
	// flush is, and this journal instance appends after them.
	sb.LogDurable, sb.LogWriter = max(d.seq, v.j.Durable()+1), v.j.Nonce()
	sb.Flags &^= format.FlagClean
	if clean {
		sb.Flags |= format.FlagClean
	}
	v.pending = ckptRef{block: d.info.Block, extents: d.extents}
	if err := v.writeSuperblock(&sb); err != nil {
		v.releaseAll(d.extents)
		v.fail("superblock", err)
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
// inodes (v.mu held). It is a snapshot encoded in one slice: the inode,
// entry and extent records, one or two per file, go through the writer's
// unboxed methods from one reused struct each, with no allocation per
// file. c, if set, checks what it writes (the guard).
func (v *Volume) records(w recordSink, c *metaCheck) error {
	s := newSnapshot(v.inodes.next)
	s.check = c
	_, err := s.encode(v, w, math.MaxInt)
	return err
}
