package volume

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/fs/format"
)

// Check verifies every invariant of the metadata and the free space and
// returns every problem found (nil when consistent): entries naming missing
// inodes, wrong link counts, directories unreachable from the root or with
// a wrong parent, orphans nothing keeps, sizes that disagree with extents
// or inline data, blocks owned twice, blocks both owned and free, and
// blocks neither owned nor free (leaked). It holds the metadata read lock
// throughout: O(inodes + entries + extents).
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
	c := checker{v: v, links: make(map[Ino]uint32)}
	c.tree()
	c.inodes()
	c.blocks()
	return c.problems
}

type checker struct {
	v        *Volume
	problems []Problem
	links    map[Ino]uint32 // names (and ".." links) found per inode
	owned    []alloc.Extent
}

func (c *checker) add(ino Ino, format string, args ...any) {
	c.problems = append(c.problems, Problem{Ino: ino, What: fmt.Sprintf(format, args...)})
}

// tree walks the directory tree from the root, counting links and checking
// each directory's index.
func (c *checker) tree() {
	root := c.v.inodes.get(RootIno)
	if root == nil || !root.isDir() {
		c.add(RootIno, "root directory missing")
		return
	}
	c.links[RootIno] = 1 // the root's own ".."
	seen := map[Ino]bool{RootIno: true}
	stack := []Ino{RootIno}
	for len(stack) > 0 {
		ino := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		d := c.v.inodes.get(ino).dirOf()
		c.links[ino]++ // "."
		c.dirIndex(ino, d)
		for _, e := range d.ents {
			if e.name == "" {
				continue
			}
			ch := c.v.inodes.get(e.ino)
			if ch == nil {
				c.add(ino, "entry %q names missing inode %d", e.name, e.ino)
				continue
			}
			c.links[e.ino]++
			if !ch.isDir() {
				continue
			}
			c.links[ino]++ // the child's ".."
			if seen[e.ino] {
				c.add(e.ino, "directory has more than one name")
				continue
			}
			seen[e.ino] = true
			if p := ch.dirOf().parent; p != ino {
				c.add(e.ino, "parent is %d, but it is listed in %d", p, ino)
			}
			stack = append(stack, e.ino)
		}
	}
}

// dirIndex checks one directory's entry list and name index.
func (c *checker) dirIndex(ino Ino, d *dir) {
	live := 0
	var prev uint64
	for i, e := range d.ents {
		if i > 0 && e.cookie <= prev {
			c.add(ino, "cookies out of order at %d", e.cookie)
		}
		prev = e.cookie
		if e.cookie < firstCookie || e.cookie >= d.next {
			c.add(ino, "cookie %d outside [%d, %d)", e.cookie, firstCookie, d.next)
		}
		if e.name == "" {
			continue
		}
		live++
		if r, ok := d.lookup(e.name); !ok || r.ino != e.ino || r.cookie != e.cookie {
			c.add(ino, "name index disagrees on %q", e.name)
		}
	}
	if live != d.live {
		c.add(ino, "counts %d entries, holds %d", d.live, live)
	}
	if d.index != nil && len(d.index)+len(d.clash) != live {
		c.add(ino, "name index holds %d names for %d entries", len(d.index)+len(d.clash), live)
	}
}

// inodes checks each inode against the links found and its own data.
func (c *checker) inodes() {
	var used uint64
	c.v.inodes.all(func(ino Ino, n *inode) bool {
		used++
		if got := c.links[ino]; got != n.nlink {
			c.add(ino, "link count %d, but %d links found", n.nlink, got)
		}
		if c.links[ino] == 0 && c.v.unused(n) {
			c.add(ino, "orphan: no name, no handle, no reference")
		}
		if n.isDir() != (n.dirOf() != nil) {
			c.add(ino, "directory index present %v for mode %o", n.dirOf() != nil, n.mode)
		}
		if n.isLink() && (n.x == nil || uint64(len(n.x.target)) != n.size) {
			c.add(ino, "symlink size %d disagrees with its target", n.size)
		}
		c.fileData(ino, n)
		return true
	})
	if used != c.v.inodes.used {
		c.add(0, "inode table counts %d inodes, holds %d", c.v.inodes.used, used)
	}
}

// fileData checks a file's inline data and extents against its size.
func (c *checker) fileData(ino Ino, n *inode) {
	var inline []byte
	if n.x != nil {
		inline = n.x.inline
	}
	extents := n.extents()
	if (inline != nil || extents != nil) && !n.isReg() {
		c.add(ino, "data on a file of mode %o", n.mode)
	}
	if inline != nil && extents != nil {
		c.add(ino, "both inline data and extents")
	}
	if n.oneLen != 0 && n.x != nil && n.x.extents != nil {
		c.add(ino, "a one-extent map and a map in the extension")
	}
	if uint64(len(inline)) > n.size {
		c.add(ino, "inline data of %d bytes past size %d", len(inline), n.size)
	}
	if err := checkExtents(extents); err != nil {
		c.add(ino, "%v", err)
	}
	bs := uint64(c.v.blockSize)
	for _, e := range extents {
		if e.Logical*bs >= n.size {
			c.add(ino, "extent at logical block %d past size %d", e.Logical, n.size)
		}
		c.owned = append(c.owned, alloc.Extent{Off: e.Physical, Len: e.Len})
		c.blockSums(ino, e)
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
		c.add(ino, "%d of the %d blocks at logical block %d have no data checksum", missing, e.Len, e.Logical)
	}
}

// blocks checks that every block is owned once or free, never both, and
// that none is neither (leaked), counting blocks waiting for a commit.
func (c *checker) blocks() {
	s := c.v.space
	if err := s.a.Check(); err != nil {
		c.add(0, "allocator: %v", err)
	}
	owned := append(append(c.owned, c.v.fixed...), c.v.ckptExtents()...)
	slices.SortFunc(owned, func(a, b alloc.Extent) int { return cmp.Compare(a.Off, b.Off) })
	free := s.a.AppendFree(nil)
	var ownedBlocks, freeBlocks uint64
	for i, e := range owned {
		ownedBlocks += e.Len
		if e.End() > s.a.Capacity() {
			c.add(0, "blocks %v past the end of the device", e)
		}
		if i > 0 && owned[i-1].End() > e.Off {
			c.add(0, "blocks %v owned twice", e)
		}
	}
	j := 0
	for _, f := range free {
		freeBlocks += f.Len
		for j < len(owned) && owned[j].End() <= f.Off {
			j++
		}
		if j < len(owned) && owned[j].Off < f.End() {
			c.add(0, "blocks %v both owned and free", owned[j])
		}
	}
	st := s.a.Stats()
	if total := ownedBlocks + freeBlocks + st.PendingBlocks; total != s.a.Capacity() {
		c.add(0, "%d blocks owned, %d free, %d waiting for a commit: %d of %d blocks accounted for (leak)",
			ownedBlocks, freeBlocks, st.PendingBlocks, total, s.a.Capacity())
	}
	s.mu.Lock()
	got := s.allocatable()
	s.mu.Unlock()
	if want := s.dataBlocks + blocksIn(c.v.fixed) - ownedBlocks - st.PendingBlocks; got != want {
		c.add(0, "space counts %d free blocks, allocator %d", got, want)
	}
}
