package volume

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/fs/format"
)

// Check verifies every invariant of the metadata and the free space and
// returns every problem found (nil when consistent): what Open checks
// (metaCheck: entries naming missing inodes, link counts, directories the
// root does not reach or named twice, data disagreeing with sizes or
// types, extents off the data area or claimed twice, owners named), then
// what only the live volume has (directory indexes, orphans nothing
// keeps, the inode table's count), then the free space: blocks both owned
// and free, or neither (leaked), and the counters against the allocator.
// It holds the metadata read lock throughout: O(inodes + entries +
// extents).
func (v *Volume) Check() []Problem {
	// A write-back's fresh blocks belong to nothing until it commits:
	// let those in flight finish and hold new ones off.
	v.wbGate.Lock()
	defer v.wbGate.Unlock()
	v.mu.RLock()
	defer v.mu.RUnlock()
	// A concurrent checkpoint's blocks belong to nothing until it is
	// published: wait for it.
	v.ckptMu.Lock()
	defer v.ckptMu.Unlock()
	m := v.checkMeta(true)
	m.finishBlocks(v.ckptExtents())
	c := checker{v: v, found: m.found}
	for _, f := range v.dropped {
		c.problems = append(c.problems, f.Problem)
	}
	c.problems = append(c.problems, m.problems()...)
	c.memory()
	c.blocks()
	return c.problems
}

type checker struct {
	v        *Volume
	problems []Problem
	found    []uint32 // links found per inode number (metaCheck)
}

func (c *checker) add(ino Ino, what string) {
	c.problems = append(c.problems, Problem{Ino: ino, What: what})
}

// memory checks what the live volume keeps beyond what a checkpoint
// holds: directory indexes, handles and references, the table's count,
// and each block's data checksum.
func (c *checker) memory() {
	var used uint64
	c.v.inodes.all(func(ino Ino, n *inode) bool {
		used++
		if c.found[ino] == 0 && c.v.unused(n) {
			c.add(ino, "orphan: no name, no handle, no reference")
		}
		if n.isDir() != (n.dirOf() != nil) {
			c.add(ino, fmt.Sprintf("directory index present %v for mode %o", n.dirOf() != nil, n.mode))
		}
		if d := n.dirOf(); d != nil {
			c.dirIndex(ino, d)
		}
		if n.oneLen != 0 && n.x != nil && n.x.extents != nil {
			c.add(ino, "a one-extent map and a map in the extension")
		}
		for _, e := range n.extents() {
			if e.Physical >= c.v.dataStart && e.Physical+e.Len <= c.v.sb.Blocks {
				c.blockSums(ino, e)
			}
		}
		return true
	})
	if used != c.v.inodes.used {
		c.add(0, fmt.Sprintf("inode table counts %d inodes, holds %d", c.v.inodes.used, used))
	}
}

// dirIndex checks one directory's entry list and name index.
func (c *checker) dirIndex(ino Ino, d *dir) {
	live := 0
	var prev uint64
	for i, e := range d.ents {
		if i > 0 && e.cookie <= prev {
			c.add(ino, fmt.Sprintf("cookies out of order at %d", e.cookie))
		}
		prev = e.cookie
		if e.cookie < firstCookie || e.cookie >= d.next {
			c.add(ino, fmt.Sprintf("cookie %d outside [%d, %d)", e.cookie, firstCookie, d.next))
		}
		if e.name == "" {
			continue
		}
		live++
		if r, ok := d.lookup(e.name); !ok || r.ino != e.ino || r.cookie != e.cookie {
			c.add(ino, fmt.Sprintf("name index disagrees on %q", e.name))
		}
	}
	if live != d.live {
		c.add(ino, fmt.Sprintf("counts %d entries, holds %d", d.live, live))
	}
	if d.index != nil && d.index.n != live {
		c.add(ino, fmt.Sprintf("name index holds %d names for %d entries", d.index.n, live))
	}
}

// blockSums checks that every block of extent e of ino has a checksum,
// on a volume that keeps them and is not part-way through being given
// them (v.ckptMu is held: v.sb is stable).
func (c *checker) blockSums(ino Ino, e format.Extent) {
	if c.v.sums == nil || c.v.sb.Flags&format.FlagSumsPartial != 0 {
		return
	}
	missing := 0
	for b := e.Physical; b < e.Physical+e.Len; b++ {
		if _, ok := c.v.sums.get(b); !ok {
			missing++
		}
	}
	if missing > 0 {
		c.add(ino, fmt.Sprintf("%d of the %d blocks at logical block %d have no data checksum", missing, e.Len, e.Logical))
	}
}

// blocks checks that no block is both owned and free, and none is
// neither (leaked), counting blocks waiting for a commit. Blocks owned
// twice or off the device are metaCheck's; here each owned block counts
// once.
func (c *checker) blocks() {
	s := c.v.space
	if err := s.a.Check(); err != nil {
		c.add(0, fmt.Sprintf("allocator: %v", err))
	}
	owned := c.v.ownedBlocks()
	free := s.a.AppendFree(nil)
	var ownedBlocks, freeBlocks uint64
	for _, e := range owned {
		ownedBlocks += e.Len
	}
	j := 0
	for _, f := range free {
		freeBlocks += f.Len
		for j < len(owned) && owned[j].End() <= f.Off {
			j++
		}
		if j < len(owned) && owned[j].Off < f.End() {
			c.add(0, fmt.Sprintf("blocks %v both owned and free", owned[j]))
		}
	}
	st := s.a.Stats()
	if total := ownedBlocks + freeBlocks + st.PendingBlocks; total != s.a.Capacity() {
		c.add(0, fmt.Sprintf("%d blocks owned, %d free, %d waiting for a commit: %d of %d blocks accounted for (leak)",
			ownedBlocks, freeBlocks, st.PendingBlocks, total, s.a.Capacity()))
	}
	s.mu.Lock()
	got := s.allocatable()
	s.mu.Unlock()
	if want := s.dataBlocks + blocksIn(c.v.fixed) - ownedBlocks - st.PendingBlocks; got != want {
		c.add(0, fmt.Sprintf("space counts %d free blocks, allocator %d", got, want))
	}
}

// ownedBlocks returns every block the volume owns (superblocks and log,
// the checkpoints the slots name, every file's extents) on the device,
// as sorted disjoint extents: a block claimed twice counts once (v.mu
// held).
func (v *Volume) ownedBlocks() []alloc.Extent {
	used := append(append([]alloc.Extent(nil), v.fixed...), v.ckptExtents()...)
	v.inodes.all(func(_ Ino, n *inode) bool {
		used = append(used, physical(n.extents())...)
		return true
	})
	return union(used, v.sb.Blocks)
}

// union returns the blocks of es below end as sorted, disjoint,
// non-adjacent extents.
func union(es []alloc.Extent, end uint64) []alloc.Extent {
	slices.SortFunc(es, func(a, b alloc.Extent) int { return cmp.Compare(a.Off, b.Off) })
	out := es[:0]
	for _, e := range es {
		if e.Off >= end || e.End() < e.Off {
			continue
		}
		e.Len = min(e.End(), end) - e.Off
		if e.Len == 0 {
			continue
		}
		if k := len(out) - 1; k >= 0 && e.Off <= out[k].End() {
			out[k].Len = max(out[k].End(), e.End()) - out[k].Off
			continue
		}
		out = append(out, e)
	}
	return out
}
