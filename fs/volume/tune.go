package volume

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/smallfs/smallfs/fs/format"
)

// Giving an image block checksums, or taking them away (smallfs tune).
// Both run on a volume opened for that alone: nothing else changes it
// meanwhile.

// ChecksumProgress is how far AddBlockSums has got: blocks given a
// checksum of those that had none.
type ChecksumProgress struct{ Done, Total uint64 }

// tuneTxnSums is the most checksums one transaction of AddBlockSums
// carries, and tuneSyncEvery how many it commits between syncs of the
// log: a kill loses at most that much of the pass.
const (
	tuneTxnSums   = 16 << 10
	tuneSyncEvery = 256 << 10
)

// AddBlockSums gives every block of file data a checksum, on a volume
// made without them (or part-way through this pass: it goes on where a
// killed one stopped). It first marks the superblock: the feature
// (format.FeatureBlockSums), so that a reader that does not know it
// refuses the image from then on, and FlagSumsPartial, so that the blocks
// not covered yet read unverified and Check does not count them. It then
// reads every extent in device order and logs the checksums of its blocks
// as they are on the device, syncing the log now and then. The flag is
// cleared by the checkpoint Close writes once every block has one.
// Cancelling ctx stops it; what was logged stays.
func (v *Volume) AddBlockSums(ctx context.Context, progress func(ChecksumProgress)) error {
	if err := v.markSums(); err != nil {
		return err
	}
	type ext struct {
		ino Ino
		e   format.Extent
	}
	var todo []ext
	var total uint64
	v.mu.RLock()
	v.inodes.all(func(ino Ino, n *inode) bool {
		for _, e := range n.extents() {
			todo = append(todo, ext{ino, e})
			total += e.Len
		}
		return true
	})
	v.mu.RUnlock()
	slices.SortFunc(todo, func(a, b ext) int { return cmp.Compare(a.e.Physical, b.e.Physical) })

	bs := uint64(v.blockSize)
	bb := v.opts.Pool.Get(scrubPiece)
	defer v.opts.Pool.Put(bb)
	per := uint64(scrubPiece) / bs
	var recs []format.Record
	var pending, sinceSync uint64
	p := ChecksumProgress{Total: total}
	commit := func() error {
		if len(recs) == 0 {
			return nil
		}
		v.mu.Lock()
		_, err := v.commit(recs...)
		v.mu.Unlock()
		recs, pending = recs[:0], 0
		return err
	}
	for _, x := range todo {
		for b := x.e.Physical; b < x.e.Physical+x.e.Len; {
			if err := ctx.Err(); err != nil {
				return cmp.Or(commit(), v.syncLog(), err)
			}
			n := min(per, x.e.Physical+x.e.Len-b)
			if v.hasSums(b, n) {
				b, p.Done = b+n, p.Done+n
				continue
			}
			buf := bb.B[:n*bs]
			if _, err := v.dev.ReadAt(buf, int64(b*bs)); err != nil {
				return opErr("checksum", "", err)
			}
			r := format.BlockSumsRec{Block: b, Sums: make([]uint32, n)}
			for i := range n {
				r.Sums[i] = format.Checksum(buf[i*bs : (i+1)*bs])
			}
			recs = append(recs, r)
			pending += n
			sinceSync += n
			if pending >= tuneTxnSums {
				if err := commit(); err != nil {
					return err
				}
			}
			if sinceSync >= tuneSyncEvery {
				if err := cmp.Or(commit(), v.syncLog()); err != nil {
					return err
				}
				sinceSync = 0
			}
			b, p.Done = b+n, p.Done+n
			if progress != nil {
				progress(p)
			}
		}
	}
	if err := cmp.Or(commit(), v.syncLog()); err != nil {
		return err
	}
	if missing := v.unverifiedBlocks(); missing > 0 {
		return fmt.Errorf("%d blocks still have no checksum: %w", missing, ErrCorrupt)
	}
	v.ckptMu.Lock()
	v.sb.Flags &^= format.FlagSumsPartial // the next superblock says so
	v.ckptMu.Unlock()
	return nil
}

// markSums turns the feature on in the superblock, with FlagSumsPartial,
// unless it is on already.
func (v *Volume) markSums() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.ckptMu.Lock()
	defer v.ckptMu.Unlock()
	if v.sums != nil {
		return nil
	}
	sb := v.sb
	sb.Features |= format.FeatureBlockSums
	sb.Flags |= format.FlagSumsPartial
	if err := v.writeSuperblock(&sb); err != nil {
		return v.failOnCheckpoint(fmt.Errorf("superblock: %w", err))
	}
	v.sums = newBlockSums(v.sb.Blocks, v.acct.blockSums)
	return nil
}

// hasSums reports whether every block of [b, b+n) has a checksum.
func (v *Volume) hasSums(b, n uint64) bool {
	for i := range n {
		if _, ok := v.sums.get(b + i); !ok {
			return false
		}
	}
	return true
}

// DropBlockSums takes the checksums of file data away, for an older
// smallfs to mount the image: a checkpoint without them and a superblock
// without the feature, written together (the superblock names the
// checkpoint), so a crash leaves one or the other. Reads are then not
// verified.
func (v *Volume) DropBlockSums() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.sums == nil {
		return nil
	}
	old, sb := v.sums, v.sb
	v.sums = nil
	v.ckptMu.Lock()
	v.sb.Features &^= format.FeatureBlockSums
	v.sb.Flags &^= format.FlagSumsPartial
	v.ckptMu.Unlock()
	if err := v.checkpoint(false); err != nil {
		v.sums = old
		v.ckptMu.Lock()
		v.sb.Features, v.sb.Flags = sb.Features, sb.Flags
		v.ckptMu.Unlock()
		return err
	}
	old.release()
	return nil
}
