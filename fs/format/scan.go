package format

import (
	"unsafe"

	"github.com/smallfs/smallfs/fs/device"
)

// ScanCheckpoint is ReadCheckpoint for the mount path, where decoding is
// the cost: the common records (inodes, directory entries, extent maps,
// block sums) reach fn as pointers (*InodeRec, *DirentRec, *ExtentsRec,
// *BlockSumsRec) to structures reused for the next record, so no record
// is boxed, and names are interned in shared blocks instead of allocated
// one by one. The rarer types come by value, as from ReadCheckpoint. fn
// must not keep the pointer; what a record points to (names, extent maps,
// data) is fn's to keep, but for block sums, which are reused too. Errors
// are ReadCheckpoint's.
func ScanCheckpoint(dev device.Device, loc CheckpointLoc, fn func(Record) error) (CheckpointInfo, error) {
	return readCheckpoint(dev, loc, fn, new(scanner))
}

// scanner decodes records into reused structures for ScanCheckpoint.
type scanner struct {
	inode   InodeRec
	dirent  DirentRec
	extents ExtentsRec
	sums    BlockSumsRec
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
	case RecBlockSums:
		r := &s.sums
		decodeBlockSums(&d, r, r.Sums)
		return r, d.finish(typ, r.check)
	}
	r, _, err := DecodeRecord(b)
	return r, err
}

// TxnScanner is DecodeTxns for replay, where decoding is the cost: the
// records replay sees most (inodes, entries set and removed, extent maps,
// inode frees, block sums) reach fn as pointers (*InodeRec, *DirentRec,
// *DirentDelRec, *ExtentsRec, *InodeFreeRec, *BlockSumsRec) into
// structures reused for the next transaction, the record slice is reused
// too, and entry names are interned in shared blocks, so a transaction
// costs no allocation but its extent maps. The rarer types come by value.
// fn must not keep the slice or the pointers; it may keep a DirentRec's
// name and an extent map, but not a DirentDelRec's name, which points
// into the payload, nor block sums, which are reused. Errors are
// DecodeTxns's. The zero value is ready; it is not safe for concurrent
// use.
type TxnScanner struct {
	inodes  []InodeRec
	dirents []DirentRec
	dels    []DirentDelRec
	extents []ExtentsRec
	frees   []InodeFreeRec
	sums    []BlockSumsRec
	recs    []Record
	names   arena
}

// Scan decodes the n transactions of payload, as DecodeTxns.
func (s *TxnScanner) Scan(payload []byte, n uint32, fn func(i int, recs []Record) error) error {
	return decodeTxns(payload, n, s.reset, s.decode, fn)
}

// reset starts a transaction of count records: earlier pointers are
// reused from here on.
func (s *TxnScanner) reset(count int) []Record {
	s.inodes, s.dirents, s.dels = s.inodes[:0], s.dirents[:0], s.dels[:0]
	s.extents, s.frees, s.sums = s.extents[:0], s.frees[:0], s.sums[:0]
	if cap(s.recs) < count {
		s.recs = make([]Record, count)
	}
	s.recs = s.recs[:count]
	return s.recs
}

// grow appends a zero T to *xs and returns a pointer to it. Growing moves
// later records to a new array; those already handed out keep the old one.
func grow[T any](xs *[]T) *T {
	var zero T
	*xs = append(*xs, zero)
	return &(*xs)[len(*xs)-1]
}

func (s *TxnScanner) decode(b []byte) (Record, int, error) {
	typ, d, total, err := frame(b)
	if err != nil {
		return nil, 0, err
	}
	var r Record
	var why func() string
	switch typ {
	case RecInode:
		x := grow(&s.inodes)
		decodeInode(&d, x)
		r, why = x, func() string { return checkIno(x.Ino) }
	case RecDirent:
		x := grow(&s.dirents)
		x.Parent, x.Ino, x.Cookie = d.uvarint("parent"), d.uvarint("ino"), d.uvarint("cookie")
		x.Name = s.names.str(d.span("name", MaxNameLen))
		r, why = x, x.check
	case RecDirentDel:
		x := grow(&s.dels)
		x.Parent = d.uvarint("parent")
		if name := d.span("name", MaxNameLen); len(name) > 0 {
			x.Name = unsafe.String(&name[0], len(name))
		} else {
			x.Name = ""
		}
		r, why = x, func() string { return first(checkIno(x.Parent), checkName(x.Name)) }
	case RecExtents:
		x := grow(&s.extents)
		x.Ino, x.Extents = d.uvarint("ino"), decodeExtents(&d)
		r, why = x, x.check
	case RecInodeFree:
		x := grow(&s.frees)
		x.Ino = d.uvarint("ino")
		r, why = x, func() string { return checkIno(x.Ino) }
	case RecBlockSums:
		// Reslice rather than grow: the slot keeps the sums' memory of an
		// earlier transaction for this one.
		if len(s.sums) < cap(s.sums) {
			s.sums = s.sums[:len(s.sums)+1]
		} else {
			s.sums = append(s.sums, BlockSumsRec{})
		}
		x := &s.sums[len(s.sums)-1]
		decodeBlockSums(&d, x, x.Sums)
		r, why = x, x.check
	default:
		return DecodeRecord(b)
	}
	if err := d.finish(typ, why); err != nil {
		return nil, 0, err
	}
	return r, total, nil
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
