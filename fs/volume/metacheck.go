package volume

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"syscall"

	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/fs/format"
)

// metaCheck verifies the invariants the volume's code relies on and that
// its records alone can break, whatever their checksums say:
//
//   - every entry names a live inode, and every link count is the number
//     of names (and, for a directory, "." and its subdirectories' "..")
//     found for it;
//   - every directory but the root has one name, and the root reaches it
//     (no cycle); the live volume's ".." agrees with that name;
//   - a regular file's data is inline or in extents, not both, within its
//     size, which is at most MaxFileSize; its extent map is sorted and
//     disjoint, and lies in the data area; no block is claimed by two
//     files, or by a file or a checkpoint and the superblocks, the log or
//     another checkpoint; a symlink's size is its target's; nothing else
//     has data.
//
// It is fed what a checkpoint of the metadata holds, by the traversal that
// encodes one (ckptSnapshot.encode): every inode in number order with its
// data, then every directory's entries. So the same list checks what Open
// loaded (checkMeta) and what a checkpoint writes (the guard in guard.go):
// no checkpoint is written that its own Open would refuse. Cost: O(inodes +
// entries + extents), about 10 bytes per inode number in flat arrays, and
// with collect 8 bytes per extent sorted once.
type metaCheck struct {
	v         *Volume // the live volume, whose ".." and owners it may consult; nil for a snapshot
	bs        uint64
	dataStart uint64      // extents begin at or after it (superblocks and log below)
	blocks    uint64      // and end at or before it
	typ       []uint8     // per inode number: its type (mode >> 12), 0 if none; typ* flags above
	nlink     []uint32    // per inode number: its link count
	found     []uint32    // per inode number: its links found
	parent    map[Ino]Ino // each named directory's parent: the directory whose entry names it first
	// collect gathers every file extent inside the data area (keys, as
	// alloc packs them) for the disjointness check of finishBlocks.
	// Open leaves it to the allocator's build, which sorts them anyway.
	collect  bool
	keys     []uint64
	findings []finding
}

// Flags in metaCheck.typ above the type bits.
const (
	typMask      = 0x0f
	typReaches   = 0x10 // a directory the root reaches
	typWalking   = 0x20 // on the path being walked to the root
	typUnreached = 0x40 // a directory the root does not reach
	typEntries   = 0x80 // a directory holding entries
	typDir       = syscall.S_IFDIR >> 12
)

// findingKind says what a problem damages: which inode a volume opened
// with its damage (Options.OpenDamaged) isolates, and what Repair does.
type findingKind uint8

const (
	findLinks  findingKind = iota // a link count that is not the links found
	findEntry                     // an entry naming a missing inode (Ino: its directory)
	findNames                     // a directory with more than one name
	findTree                      // a directory the root does not reach, or whose ".." disagrees
	findData                      // a file's data disagrees with its type or size: the file is damaged
	findBlocks                    // extents off the data area or claimed twice: the file is damaged
	findRoot                      // no root directory
	findRecord                    // a checkpoint record left out of a lenient load (openLenient)
)

// finding is a Problem and what it is about.
type finding struct {
	Problem
	kind   findingKind
	name   string       // findEntry: the entry
	child  Ino          // findEntry: the inode it names
	parent Ino          // findTree of a cycle: the directory whose entry closes it
	where  alloc.Extent // findBlocks: the blocks
}

// damagesFile reports whether f makes its inode's data unreadable: a
// volume opened with damage answers EIO for it.
func (f finding) damagesFile() bool { return f.kind == findData || f.kind == findBlocks }

// newMetaCheck starts a check of v's inodes below limit: of the live
// metadata, or with snapshot of a checkpoint's snapshot of it.
func newMetaCheck(v *Volume, limit Ino, collect, snapshot bool) *metaCheck {
	live := v
	if snapshot {
		live = nil
	}
	c := &metaCheck{
		v: live, bs: uint64(v.blockSize), dataStart: v.dataStart, blocks: v.sb.Blocks,
		typ: make([]uint8, limit), nlink: make([]uint32, limit), found: make([]uint32, limit),
		parent: map[Ino]Ino{}, collect: collect,
	}
	if collect { // most files have one extent: grown by doubling, the keys would cost twice
		c.keys = make([]uint64, 0, v.inodes.used+uint64(len(v.refs[0].extents)+len(v.refs[1].extents))+8)
	}
	return c
}

func (c *metaCheck) add(kind findingKind, ino Ino, format string, args ...any) {
	c.findings = append(c.findings, finding{Problem: Problem{Ino: ino, What: fmt.Sprintf(format, args...)}, kind: kind})
}

// problems returns the findings as Problems.
func (c *metaCheck) problems() []Problem {
	out := make([]Problem, len(c.findings))
	for i, f := range c.findings {
		out[i] = f.Problem
	}
	return out
}

// checkMeta checks the live metadata (v.mu held): the whole of it once
// more, as a checkpoint would write it. The block checks are left to the
// caller: finishBlocks (collect) or the allocator's build.
func (v *Volume) checkMeta(collect bool) *metaCheck {
	c := newMetaCheck(v, v.inodes.next, collect, false)
	s := newSnapshot(v.inodes.next)
	s.check, s.checkOnly = c, true
	_, _ = s.encode(v, discardRecords{}, math.MaxInt) // discardRecords takes anything
	c.finish()
	return c
}

// discardRecords is a recordSink that keeps nothing.
type discardRecords struct{}

func (discardRecords) Add(format.Record) error                 { return nil }
func (discardRecords) AddInode(*format.InodeRec) error         { return nil }
func (discardRecords) AddDirent(*format.DirentRec) error       { return nil }
func (discardRecords) AddExtents(*format.ExtentsRec) error     { return nil }
func (discardRecords) AddBlockSums(*format.BlockSumsRec) error { return nil }

// inode checks one inode's own records and reports whether they pass.
func (c *metaCheck) inode(img *inodeImage) bool {
	before := len(c.findings)
	c.inodeRecords(img)
	return len(c.findings) == before
}

func (c *metaCheck) inodeRecords(img *inodeImage) {
	r := &img.rec
	ino := Ino(r.Ino)
	if uint64(ino) >= uint64(len(c.typ)) {
		c.add(findData, ino, "inode number past the table's end %d", len(c.typ))
		return
	}
	c.typ[ino] = uint8(r.Mode >> 12 & typMask)
	c.nlink[ino] = r.Nlink
	switch r.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		c.fileData(ino, img)
		return
	case syscall.S_IFLNK:
		if img.target == "" || uint64(len(img.target)) != r.Size {
			c.add(findData, ino, "symlink size %d disagrees with its target", r.Size)
		}
	}
	if img.inline != nil || img.extents != nil {
		c.add(findData, ino, "data on a file of mode %o", r.Mode)
	}
}

// fileData checks a regular file's inline data and extents against its
// size and the device.
func (c *metaCheck) fileData(ino Ino, img *inodeImage) {
	size := img.rec.Size
	if size > MaxFileSize {
		c.add(findData, ino, "size %d past the largest file, %d", size, uint64(MaxFileSize))
	}
	if img.inline != nil && img.extents != nil {
		c.add(findData, ino, "both inline data and extents")
	}
	if uint64(len(img.inline)) > size {
		c.add(findData, ino, "inline data of %d bytes past size %d", len(img.inline), size)
	}
	if err := checkExtents(img.extents); err != nil {
		c.add(findData, ino, "%v", err)
		return // the bounds below assume no wrap
	}
	sizeBlocks := size/c.bs + min(size%c.bs, 1)
	for _, e := range img.extents {
		if e.Logical >= sizeBlocks {
			c.add(findData, ino, "extent at logical block %d past size %d", e.Logical, size)
		}
		ph := alloc.Extent{Off: e.Physical, Len: e.Len}
		switch {
		case ph.End() > c.blocks:
			c.blocksAt(ino, ph, "lie past the end of the device (%d blocks)", c.blocks)
		case ph.Off < c.dataStart:
			c.blocksAt(ino, ph, "lie over the superblocks or the log (blocks below %d)", c.dataStart)
		case c.collect:
			c.keys = append(c.keys, packExtent(ph))
		}
	}
}

// blocksAt adds a findBlocks finding about blocks e of inode ino.
func (c *metaCheck) blocksAt(ino Ino, e alloc.Extent, format string, args ...any) {
	c.findings = append(c.findings, finding{
		Problem: Problem{Ino: ino, What: "blocks " + e.String() + " " + fmt.Sprintf(format, args...)},
		kind:    findBlocks, where: e,
	})
}

// entry checks one entry of directory dir.
func (c *metaCheck) entry(dir Ino, e *dent) {
	c.typ[dir] |= typEntries
	ch := e.ino
	if uint64(ch) >= uint64(len(c.typ)) || c.typ[ch]&typMask == 0 {
		c.findings = append(c.findings, finding{
			Problem: Problem{Ino: dir, What: fmt.Sprintf("entry %q names missing inode %d", e.name, ch)},
			kind:    findEntry, name: e.name, child: ch,
		})
		return
	}
	c.found[ch]++
	if c.typ[ch]&typMask != typDir {
		return
	}
	c.found[dir]++ // the child's ".."
	if _, named := c.parent[ch]; named || ch == RootIno {
		c.add(findNames, ch, "directory has more than one name")
		return
	}
	c.parent[ch] = dir
	if c.v != nil {
		if p := c.v.inodes.get(ch).dirOf().parent; p != dir {
			c.add(findTree, ch, "parent is %d, but it is listed in %d", p, dir)
		}
	}
}

// finish checks what needs every inode and entry: link counts and the
// tree.
func (c *metaCheck) finish() {
	if uint64(len(c.typ)) <= uint64(RootIno) || c.typ[RootIno]&typMask != typDir {
		c.add(findRoot, RootIno, "root directory missing")
		return
	}
	c.found[RootIno]++ // its own ".."
	c.typ[RootIno] |= typReaches
	for i, t := range c.typ {
		if t&typMask != typDir {
			continue
		}
		ino := Ino(i)
		if _, named := c.parent[ino]; named || ino == RootIno {
			c.found[ino]++ // "."
		}
	}
	for i, t := range c.typ {
		ino := Ino(i)
		if t&typMask == 0 {
			continue
		}
		if got, want := c.found[ino], c.nlink[ino]; got != want {
			c.add(findLinks, ino, "link count %d, but %d links found", want, got)
		}
		if t&typMask == typDir && ino != RootIno {
			c.reaches(ino)
		}
	}
}

// reaches walks from directory ino towards the root through the names
// found, marking each directory on the way, and reports a cycle where it
// closes and a directory without a name that holds entries.
func (c *metaCheck) reaches(ino Ino) {
	var path []Ino
	d := ino
	reached := false
	for {
		t := c.typ[d]
		if t&typReaches != 0 {
			reached = true
			break
		}
		if t&typUnreached != 0 {
			break
		}
		if t&typWalking != 0 {
			c.findings = append(c.findings, finding{
				Problem: Problem{Ino: d, What: "not reachable from the root: its names form a cycle of directories"},
				kind:    findTree, parent: c.parent[d],
			})
			break
		}
		p, named := c.parent[d]
		if !named {
			if t&typEntries != 0 {
				c.add(findTree, d, "directory without a name holds entries the root does not reach")
			}
			break
		}
		c.typ[d] |= typWalking
		path = append(path, d)
		d = p
	}
	mark := uint8(typUnreached)
	if reached {
		mark = typReaches
	}
	for _, p := range path {
		c.typ[p] = c.typ[p]&^typWalking | mark
	}
	if len(path) == 0 && !reached {
		c.typ[ino] |= typUnreached
	}
}

// finishBlocks checks that the extents collected, the superblocks and
// the log, and extra (checkpoints) claim no block twice; with a live
// volume it names the owners (sharedBlocks) where it can, else the
// blocks.
func (c *metaCheck) finishBlocks(extra []alloc.Extent) {
	c.keys = append(c.keys, packExtent(alloc.Extent{Off: 0, Len: c.dataStart}))
	for _, e := range extra {
		if e.End() <= c.blocks && e.Len > 0 {
			c.keys = append(c.keys, packExtent(e))
		}
	}
	slices.Sort(c.keys)
	if !overlapping(c.keys) {
		return
	}
	if c.v != nil {
		if named := c.v.sharedBlocks(); len(named) > 0 {
			c.findings = append(c.findings, named...)
			return
		}
	}
	var far alloc.Extent
	for i, k := range c.keys {
		e := unpackExtent(k)
		if i > 0 && e.Off < far.End() {
			c.findings = append(c.findings, finding{
				Problem: Problem{What: fmt.Sprintf("blocks %v claimed twice", alloc.Extent{Off: e.Off, Len: min(e.End(), far.End()) - e.Off})},
				kind:    findBlocks,
			})
		}
		if i == 0 || e.End() > far.End() {
			far = e
		}
	}
}

// packExtent packs an extent of a device of at most alloc.MaxCapacity
// blocks into one sortable word, offset first, as the allocator does.
func packExtent(e alloc.Extent) uint64   { return e.Off<<32 | (e.Len - 1) }
func unpackExtent(k uint64) alloc.Extent { return alloc.Extent{Off: k >> 32, Len: k&(1<<32-1) + 1} }

// overlapping reports whether any two of the sorted packed extents
// overlap.
func overlapping(keys []uint64) bool {
	var end uint64
	for i, k := range keys {
		e := unpackExtent(k)
		if i > 0 && e.Off < end {
			return true
		}
		end = max(end, e.End())
	}
	return false
}

// sharedBlocks names the owners of every block inside the data area that
// two files, or a file and a checkpoint, claim (v.mu held). It is the
// slow path, run once a cheaper check has found an overlap.
func (v *Volume) sharedBlocks() []finding {
	type claim struct {
		e    alloc.Extent
		ino  Ino    // 0: a checkpoint
		ckpt uint64 // its header block
	}
	var claims []claim
	for i, r := range v.refs {
		if r.block == 0 || i == 1 && r.block == v.refs[0].block {
			continue
		}
		for _, e := range r.extents {
			claims = append(claims, claim{e: e, ckpt: r.block})
		}
	}
	blocks := v.sb.Blocks
	v.inodes.all(func(ino Ino, n *inode) bool {
		for _, e := range n.extents() {
			ph := alloc.Extent{Off: e.Physical, Len: e.Len}
			if ph.Off >= v.dataStart && ph.End() <= blocks && ph.End() > ph.Off {
				claims = append(claims, claim{e: ph, ino: ino})
			}
		}
		return true
	})
	slices.SortFunc(claims, func(a, b claim) int { return cmp.Or(cmp.Compare(a.e.Off, b.e.Off), cmp.Compare(a.ino, b.ino)) })
	var out []finding
	say := func(a, b claim, r alloc.Extent) {
		switch {
		case a.ino == 0 && b.ino == 0:
			out = append(out, finding{Problem: Problem{What: fmt.Sprintf("checkpoints at blocks %d and %d share blocks %v", a.ckpt, b.ckpt, r)}, kind: findBlocks, where: r})
		case b.ino == 0:
			a, b = b, a
			fallthrough
		case a.ino == 0:
			out = append(out, finding{Problem: Problem{Ino: b.ino, What: fmt.Sprintf("blocks %v lie in the checkpoint at block %d", r, a.ckpt)}, kind: findBlocks, where: r})
		case a.ino == b.ino:
			out = append(out, finding{Problem: Problem{Ino: a.ino, What: fmt.Sprintf("blocks %v claimed twice by its own extent map", r)}, kind: findBlocks, where: r})
		default:
			out = append(out,
				finding{Problem: Problem{Ino: a.ino, What: fmt.Sprintf("blocks %v shared with inode %d", r, b.ino)}, kind: findBlocks, where: r},
				finding{Problem: Problem{Ino: b.ino, What: fmt.Sprintf("blocks %v shared with inode %d", r, a.ino)}, kind: findBlocks, where: r})
		}
	}
	var active []claim // claims reaching past the current offset
	for _, cl := range claims {
		kept := active[:0]
		for _, a := range active {
			if a.e.End() > cl.e.Off {
				kept = append(kept, a)
				say(a, cl, alloc.Extent{Off: cl.e.Off, Len: min(a.e.End(), cl.e.End()) - cl.e.Off})
			}
		}
		active = append(kept, cl)
	}
	slices.SortStableFunc(out, func(a, b finding) int { return cmp.Compare(a.Ino, b.Ino) })
	return out
}
