package format

import (
	"unsafe"

	"github.com/smallfs/smallfs/fs/device"
)

// ScanCheckpoint is ReadCheckpoint for the mount path, where decoding is
// the cost: the common records (inodes, directory entries, extent maps)
// reach fn as pointers (*InodeRec, *DirentRec, *ExtentsRec) to structures
// reused for the next record, so no record is boxed, and names are
// interned in shared blocks instead of allocated one by one. The rarer
// types come by value, as from ReadCheckpoint. fn must not keep the
// pointer; what a record points to (names, extent maps, data) is fn's to
// keep. Errors are ReadCheckpoint's.
func ScanCheckpoint(dev device.Device, loc CheckpointLoc, fn func(Record) error) (CheckpointInfo, error) {
	return readCheckpoint(dev, loc, fn, new(scanner))
}

// scanner decodes records into reused structures for ScanCheckpoint.
type scanner struct {
	inode   InodeRec
	dirent  DirentRec
	extents ExtentsRec
	names   arena
}

// decode decodes the record b (whole, as recordStream frames it).
func (s *scanner) decode(b []byte) (Record, error) {
	typ, d, _, err := frame(b)
	if err != nil {
		return nil, err
	}
	switch typ {
	case RecInode:
		decodeInode(&d, &s.inode)
		return &s.inode, d.finish(typ, func() string { return checkIno(s.inode.Ino) })
	case RecDirent:
		r := &s.dirent
		r.Parent, r.Ino, r.Cookie = d.uvarint("parent"), d.uvarint("ino"), d.uvarint("cookie")
		r.Name = s.names.str(d.span("name", MaxNameLen))
		return r, d.finish(typ, r.check)
	case RecExtents:
		r := &s.extents
		r.Ino, r.Extents = d.uvarint("ino"), decodeExtents(&d)
		return r, d.finish(typ, r.check)
	}
	r, _, err := DecodeRecord(b)
	return r, err
}

// arenaBlock is the size of the blocks names are interned in: large
// enough that allocations are rare, small enough that a block pinned by a
// few surviving names wastes little.
const arenaBlock = 32 << 10

// arena interns strings into shared blocks: one allocation per block
// rather than one per string. A block lives while any string in it does;
// the bytes are never written again once a string refers to them.
type arena struct{ buf []byte }

func (a *arena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > cap(a.buf)-len(a.buf) {
		if len(b) > arenaBlock/8 {
			return string(b)
		}
		a.buf = make([]byte, 0, arenaBlock)
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return unsafe.String(&a.buf[start], len(b))
}
