package volume

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/fs/format"
)

// data mends the files metaCheck finds damaged, each in one transaction
// named in one fix, keeping what can be kept:
//
//   - blocks off the data area (past the device's end, over the
//     superblocks or the log) are dropped from the file's map;
//   - blocks two files claim are dropped from both (neither can be told
//     to be the owner), and blocks a file claims inside a checkpoint from
//     the file; the range reads as zeros (a hole), the rest of the file
//     as it was;
//   - extents past the size are dropped (nothing reads them), an extent
//     map that is not sorted and disjoint keeps its valid prefix;
//   - inline data and extents together keep the inline data when it
//     holds the whole size, else the extents; inline data past the size
//     is cut to it;
//   - a symlink's size is set to its target's; a symlink without a
//     target is removed, with its names.
//
// Blocks dropped that no file or checkpoint owns any more are freed. A
// first pass mends all but blocks claimed twice; a second finds those
// again, so a file whose claim went with the rest of its damage (inline
// data with a stray map) costs the other claimant nothing.
func (r *repairer) data() error {
	var dropped []alloc.Extent
	for _, shared := range []bool{false, true} {
		m := r.v.checkMeta(true)
		m.finishBlocks(r.v.ckptExtents())
		var inos []Ino
		damaged := map[Ino][]finding{}
		for _, f := range m.findings {
			if !f.damagesFile() || f.Ino == 0 || r.v.inodes.get(f.Ino) == nil {
				continue
			}
			if damaged[f.Ino] == nil {
				inos = append(inos, f.Ino)
			}
			damaged[f.Ino] = append(damaged[f.Ino], f)
		}
		for _, ino := range inos {
			n := r.v.inodes.get(ino)
			var err error
			switch {
			case n.isReg():
				err = r.fileData(ino, n, damaged[ino], shared, &dropped)
			case n.isLink() && !shared:
				err = r.symlink(ino, n)
			}
			if err != nil {
				return err
			}
		}
	}
	return r.freeDropped(dropped)
}

// fileData mends regular file ino: its map without the damaged blocks
// (extents off the data area or past the size; with shared, the ranges
// fs names as claimed twice), its inline data within the size. Blocks it
// gives up go to *dropped.
func (r *repairer) fileData(ino Ino, n *inode, fs []finding, shared bool, dropped *[]alloc.Extent) error {
	v := r.v
	bs, size := uint64(v.blockSize), n.size
	var inline []byte
	if n.x != nil {
		inline = n.x.inline
	}
	es := slices.Clone(n.extents())
	var what []string
	inlineChanged := false
	if inline != nil && es != nil {
		if uint64(len(inline)) == size {
			*dropped = append(*dropped, physical(es)...)
			es = nil
			what = append(what, "inline data and extents both: extents dropped, the inline data holds the file")
		} else {
			inline, inlineChanged = nil, true
			what = append(what, "inline data and extents both: inline data dropped")
		}
	}
	if uint64(len(inline)) > size {
		inline, inlineChanged = inline[:size], true
		what = append(what, fmt.Sprintf("inline data cut to the size, %d bytes", size))
	}
	var claimed []finding // blocks claimed by another owner as well
	for _, f := range fs {
		if shared && f.kind == findBlocks && f.where.Len > 0 && f.where.Off >= v.dataStart && f.where.End() <= v.sb.Blocks {
			claimed = append(claimed, f)
		}
	}
	sizeBlocks := size/bs + min(size%bs, 1)
	var keep []format.Extent
	var end uint64
	for i, e := range es {
		ph := alloc.Extent{Off: e.Physical, Len: e.Len}
		switch {
		case e.Len == 0 || e.Logical+e.Len < e.Logical || ph.End() < ph.Off || len(keep) > 0 && e.Logical < end:
			what = append(what, fmt.Sprintf("extent %d and those after it dropped: the map is not sorted and disjoint", i))
			return r.commitData(ino, n, keep, inline, inlineChanged, what)
		case ph.Off < v.dataStart || ph.End() > v.sb.Blocks:
			*dropped = append(*dropped, ph) // what lies inside the data area may be counted used
			what = append(what, fmt.Sprintf("blocks %v dropped: they lie off the data area [%d, %d)", ph, v.dataStart, v.sb.Blocks))
			continue
		case e.Logical >= sizeBlocks:
			*dropped = append(*dropped, ph)
			what = append(what, fmt.Sprintf("extent at logical block %d dropped: past the size %d", e.Logical, size))
			continue
		}
		end = e.Logical + e.Len
		pieces := []format.Extent{e}
		for _, f := range claimed {
			var next []format.Extent
			for _, p := range pieces {
				lb := p.Logical + max(f.where.Off, p.Physical) - p.Physical
				le := p.Logical + min(f.where.End(), p.Physical+p.Len) - p.Physical
				if lb >= le {
					next = append(next, p)
					continue
				}
				out, cut := cutExtents([]format.Extent{p}, lb, le)
				next = append(next, out...)
				*dropped = append(*dropped, cut...)
				what = append(what, fmt.Sprintf("%s: dropped, bytes %d-%d read as zeros", f.What, lb*bs, min(le*bs, size)-1))
			}
			pieces = next
		}
		keep = append(keep, pieces...)
	}
	return r.commitData(ino, n, keep, inline, inlineChanged, what)
}

// commitData commits file ino's mended map and inline data as one fix,
// and a size past the largest file cut to what the data holds.
func (r *repairer) commitData(ino Ino, n *inode, es []format.Extent, inline []byte, inlineChanged bool, what []string) error {
	var txn []format.Record
	if n.size > MaxFileSize {
		rec := n.record(ino)
		rec.Size = uint64(len(inline))
		if k := len(es) - 1; k >= 0 {
			rec.Size = (es[k].Logical + es[k].Len) * uint64(r.v.blockSize)
		}
		what = append(what, fmt.Sprintf("size %d past the largest file set to %d, the end of its data", n.size, rec.Size))
		txn = append(txn, rec)
	}
	if len(what) == 0 {
		return nil
	}
	txn = append(txn, format.ExtentsRec{Ino: uint64(ino), Extents: es})
	if inlineChanged {
		txn = append(txn, format.InlineRec{Ino: uint64(ino), Data: inline})
	}
	return r.commit(ino, strings.Join(what, "; "), txn...)
}

// symlink mends symlink ino: its size is its target's; without a target
// it is removed with its names (nothing says where it pointed).
func (r *repairer) symlink(ino Ino, n *inode) error {
	if n.x != nil && n.x.target != "" {
		rec := n.record(ino)
		rec.Size = uint64(len(n.x.target))
		return r.commit(ino, fmt.Sprintf("symlink size %d set to its target's, %d", n.size, rec.Size), rec)
	}
	var txn []format.Record
	var names []string
	r.v.inodes.all(func(dir Ino, d *inode) bool {
		if dd := d.dirOf(); dd != nil {
			for _, e := range dd.ents {
				if e.name != "" && e.ino == ino {
					txn = append(txn, format.DirentDelRec{Parent: uint64(dir), Name: e.name})
					names = append(names, fmt.Sprintf("%q in directory %d", e.name, dir))
				}
			}
		}
		return true
	})
	txn = append(txn, format.InodeFreeRec{Ino: uint64(ino)})
	what := "symlink without a target removed"
	if len(names) > 0 {
		what += ", and its names " + strings.Join(names, ", ")
	}
	return r.commit(ino, what, txn...)
}

// freeDropped frees the blocks in dropped that nothing owns any more:
// not the superblocks and log, not a checkpoint, no file. They are free
// at once, not after the repair's commit: should a crash undo the repair,
// the claims it dropped fail Open's check again and are never read, and a
// bogus claim over most of the device must not leave the repair's own
// checkpoint without room.
func (r *repairer) freeDropped(dropped []alloc.Extent) error {
	if len(dropped) == 0 {
		return nil
	}
	v := r.v
	var inArea []alloc.Extent
	for _, e := range dropped {
		if e.End() < e.Off { // wraps: nothing to trust
			continue
		}
		if off, end := max(e.Off, v.dataStart), min(e.End(), v.sb.Blocks); off < end {
			inArea = append(inArea, alloc.Extent{Off: off, Len: end - off})
		}
	}
	free := subtract(union(inArea, v.sb.Blocks), v.ownedBlocks())
	if len(free) == 0 {
		return nil
	}
	v.releaseAll(free)
	return nil
}

// subtract returns the blocks of a not in b, both sorted and disjoint.
func subtract(a, b []alloc.Extent) []alloc.Extent {
	var out []alloc.Extent
	j := 0
	for _, e := range a {
		for j < len(b) && b[j].End() <= e.Off {
			j++
		}
		off := e.Off
		for k := j; k < len(b) && b[k].Off < e.End(); k++ {
			if b[k].Off > off {
				out = append(out, alloc.Extent{Off: off, Len: b[k].Off - off})
			}
			off = max(off, b[k].End())
		}
		if off < e.End() {
			out = append(out, alloc.Extent{Off: off, Len: e.End() - off})
		}
	}
	slices.SortFunc(out, func(x, y alloc.Extent) int { return cmp.Compare(x.Off, y.Off) })
	return out
}
