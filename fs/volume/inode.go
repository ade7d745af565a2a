package volume

import (
	"syscall"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/format"
)

// Limits the volume enforces (and statfs reports).
const (
	MaxNameLen       = 255       // bytes in one directory entry name
	MaxSymlinkLen    = 4095      // bytes in a symlink target (PATH_MAX - 1)
	MaxLinks         = 65000     // link count of any inode, as ext4
	MaxXattrNameLen  = 255       // bytes in an xattr name
	MaxXattrValueLen = 64 << 10  // bytes in one xattr value
	MaxXattrTotal    = 256 << 10 // bytes of names and values per inode: four of the largest
	MaxXattrList     = 64 << 10  // bytes of names, each with its NUL, per inode: what listxattr(2) returns at most (XATTR_LIST_MAX)
	MaxFileSize      = 1 << 44   // 16 TiB, far beyond any device we expect
	bytesPerInode    = 512       // inode capacity: one per 512 device bytes
	maxInodes        = 1<<32 - 2 // hard ceiling of the inode table
)

// inode is the in-memory state of one inode. It is kept small because there
// is one per file (see "# Memory" in doc.go): the inode number is the slot
// index in the table, and everything most files lack (directory index,
// symlink target, xattrs, inline data, extents, open-file state) hangs off
// one optional pointer.
//
// Fields are guarded by Volume.mu except lookups, which Lookup bumps under
// the read lock and so is accessed atomically.
type inode struct {
	gen     uint64
	size    uint64
	atime   int64
	mtime   int64
	ctime   int64
	mode    uint32 // 0 marks a free slot
	nlink   uint32
	uid     uint32
	gid     uint32
	rdev    uint32
	lookups uint32 // kernel references (Options.TrackLookups); atomic
	opens   uint32 // live Handles
	// A regular file whose extent map is one extent from its first block,
	// of at most maxOneLen blocks, as nearly every small file's is, keeps
	// it here (onePhys, oneLen) and needs no extension (x) and no map of
	// its own: 128 bytes fewer (see "# Memory" in doc.go). Otherwise
	// oneLen is 0 and the map, if any, is x.extents.
	oneLen  uint16
	flags   uint8 // in-memory only: inodeLinkable, inodeLost, inodeDamaged; fills padding
	onePhys uint64
	x       *inodeExt
}

// maxOneLen is the longest extent the inode itself holds.
const maxOneLen = 1<<16 - 1

// inode flags.
const (
	// inodeLinkable marks an O_TMPFILE inode (no link yet) that Link may
	// name: it was opened without O_EXCL.
	inodeLinkable uint8 = 1 << iota
	// inodeLost marks a file whose data a failed write-back dropped (a
	// map refused at the last close, Release): every fsync of it fails
	// (ErrLost) until it is emptied (a write-back commits size 0) or
	// freed. Not kept across a remount, which is a crash to the writer.
	inodeLost
	// inodeDamaged marks a file whose data fails metaCheck in a volume
	// opened with Options.OpenDamaged: opening it answers EIO.
	inodeDamaged
)

// inodeExt holds what only some inodes have.
type inodeExt struct {
	dir     *dir            // directories
	target  string          // symlinks
	inline  []byte          // tiny regular files kept in metadata
	extents []format.Extent // regular files: sorted by Logical, disjoint
	xattrs  []xattr
	data    *fileData // open regular files: dirty data and the data lock
}

type xattr struct {
	name  string
	value []byte
}

func (n *inode) isDir() bool  { return n.mode&syscall.S_IFMT == syscall.S_IFDIR }
func (n *inode) isReg() bool  { return n.mode&syscall.S_IFMT == syscall.S_IFREG }
func (n *inode) isLink() bool { return n.mode&syscall.S_IFMT == syscall.S_IFLNK }

// extents returns a regular file's extent map. A map held in the inode
// is returned as a copy, so it stays as it was when the map changes:
// callers that keep the old map across a change free its blocks
// afterwards. Hot paths use findExtent and blocks, which do not allocate.
func (n *inode) extents() []format.Extent {
	if n.oneLen != 0 {
		return []format.Extent{n.one()}
	}
	if n.x == nil {
		return nil
	}
	return n.x.extents
}

// one is the extent the inode holds (oneLen != 0).
func (n *inode) one() format.Extent {
	return format.Extent{Physical: n.onePhys, Len: uint64(n.oneLen)}
}

// hasExtents reports whether the file has any extent.
func (n *inode) hasExtents() bool { return n.oneLen != 0 || n.x != nil && n.x.extents != nil }

// setExtents makes es the extent map (apply only).
func (n *inode) setExtents(es []format.Extent) {
	n.onePhys, n.oneLen = 0, 0
	if len(es) == 1 && es[0].Logical == 0 && es[0].Len <= maxOneLen {
		n.onePhys, n.oneLen = es[0].Physical, uint16(es[0].Len)
		es = nil
	}
	if n.x != nil || es != nil {
		n.ext().extents = nilIfEmpty(es)
		if n.x.empty() {
			n.x = nil
		}
	}
}

// findExtent is findExtent of the file's map.
func (n *inode) findExtent(b uint64) (format.Extent, bool) {
	if n.oneLen != 0 {
		if b >= uint64(n.oneLen) {
			return format.Extent{}, false
		}
		return n.one(), true
	}
	if n.x == nil {
		return format.Extent{}, false
	}
	return findExtent(n.x.extents, b)
}

// blocks is the number of blocks the extent map holds.
func (n *inode) blocks() uint64 {
	if n.oneLen != 0 || n.x == nil {
		return uint64(n.oneLen)
	}
	var sum uint64
	for _, e := range n.x.extents {
		sum += e.Len
	}
	return sum
}

func (x *inodeExt) empty() bool {
	return x.dir == nil && x.target == "" && x.inline == nil && x.extents == nil && x.xattrs == nil && x.data == nil
}

func (n *inode) ext() *inodeExt {
	if n.x == nil {
		n.x = &inodeExt{}
	}
	return n.x
}

// dirOf returns n's directory index; nil unless n is a directory.
func (n *inode) dirOf() *dir {
	if n.x == nil {
		return nil
	}
	return n.x.dir
}

// record is n's persistent state as a log record.
func (n *inode) record(ino Ino) format.InodeRec {
	var r format.InodeRec
	n.recordInto(ino, &r)
	return r
}

// recordInto is record into a caller's struct (the checkpoint reuses one).
func (n *inode) recordInto(ino Ino, r *format.InodeRec) {
	*r = format.InodeRec{
		Ino: uint64(ino), Gen: n.gen, Mode: n.mode, Nlink: n.nlink,
		UID: n.uid, GID: n.gid, Rdev: n.rdev, Size: n.size,
		Atime: n.atime, Mtime: n.mtime, Ctime: n.ctime,
	}
}

// setFrom sets n's persistent fields from r, leaving the in-memory counts.
func (n *inode) setFrom(r *format.InodeRec) {
	n.gen, n.mode, n.nlink = r.Gen, r.Mode, r.Nlink
	n.uid, n.gid, n.rdev, n.size = r.UID, r.GID, r.Rdev, r.Size
	n.atime, n.mtime, n.ctime = r.Atime, r.Mtime, r.Ctime
}

// chunkBits sets the inode table's chunk size: big enough that the chunk
// index is small, small enough that a sparse table wastes little.
const chunkBits = 12

type inodeChunk [1 << chunkBits]inode

// inodeTable maps inode numbers to inodes without a per-inode map entry or
// pointer: inode i lives in chunks[i>>chunkBits][i&mask], so *inode pointers
// stay valid while the table grows. Free slots below the high-water mark are
// reused newest first.
type inodeTable struct {
	chunks []*inodeChunk
	free   []Ino // free slots below next, for reuse
	next   Ino   // one past the highest slot ever used
	used   uint64
	limit  uint64 // capacity: highest valid inode number
	acct   *accounting.Record
}

// get returns the live inode ino, or nil.
func (t *inodeTable) get(ino Ino) *inode {
	c := uint64(ino) >> chunkBits
	if c >= uint64(len(t.chunks)) || t.chunks[c] == nil {
		return nil
	}
	n := &t.chunks[c][uint64(ino)&(1<<chunkBits-1)]
	if n.mode == 0 {
		return nil
	}
	return n
}

// slot returns the slot of ino, creating its chunk; ino must be valid.
func (t *inodeTable) slot(ino Ino) *inode {
	c := int(uint64(ino) >> chunkBits)
	for c >= len(t.chunks) {
		t.chunks = append(t.chunks, nil)
	}
	if t.chunks[c] == nil {
		t.chunks[c] = new(inodeChunk)
		t.acct.Alloc(chunkBytes)
	}
	if k := len(t.free) - 1; k >= 0 && t.free[k] == ino {
		t.free = t.free[:k]
	}
	if ino >= t.next {
		// Slots skipped over (replay creates inodes out of order) become free.
		for i := max(t.next, RootIno+1); i < ino; i++ {
			t.free = append(t.free, i)
		}
		t.next = ino + 1
	}
	return &t.chunks[c][uint64(ino)&(1<<chunkBits-1)]
}

// valid reports whether ino can name an inode of this table.
func (t *inodeTable) valid(ino Ino) bool { return ino >= RootIno && uint64(ino) <= t.limit }

// allocIno picks a free inode number, or 0 when the table is full. The
// number stays free until a record fills its slot.
func (t *inodeTable) allocIno() Ino {
	// Peek, don't pop: the slot leaves the free list when a record fills it
	// (slot), so a transaction that fails leaks nothing.
	for len(t.free) > 0 {
		ino := t.free[len(t.free)-1]
		if t.get(ino) == nil {
			return ino
		}
		t.free = t.free[:len(t.free)-1] // replay filled a slot marked free
	}
	if t.next < RootIno+1 {
		t.next = RootIno + 1
	}
	if uint64(t.next) > t.limit {
		return 0
	}
	return t.next
}

// release marks ino's slot free.
func (t *inodeTable) release(ino Ino) {
	n := t.get(ino)
	if n == nil {
		return
	}
	*n = inode{}
	t.used--
	t.free = append(t.free, ino)
}

// all calls fn for every live inode in number order until fn returns false.
func (t *inodeTable) all(fn func(Ino, *inode) bool) {
	for c, ch := range t.chunks {
		if ch == nil {
			continue
		}
		for i := range ch {
			if ch[i].mode != 0 && !fn(Ino(c<<chunkBits|i), &ch[i]) {
				return
			}
		}
	}
}
