package format

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// A record on disk is
//
//	type    u8
//	length  uvarint   bytes of body
//	body    length bytes, the fields of the type in declaration order
//
// Unsigned fields are uvarints, times are zigzag varints (Mtime as a delta
// from Atime, Ctime from Mtime: usually 1 byte each), strings and byte
// strings are uvarint length + bytes. Extents are delta-encoded: see
// appendExtents. FORMAT.md has the byte tables.

// AppendRecord appends the encoding of r to dst. r must pass Validate (the
// journal and the checkpoint writer check); a record of a type this package
// does not define appends nothing. The common types have encoders taking
// them by pointer (AppendInode, AppendDirent, AppendExtents), for callers
// that would otherwise box a record per call.
func AppendRecord(dst []byte, r Record) []byte {
	switch r := r.(type) {
	case *InodeRec:
		return AppendInode(dst, r)
	case InodeRec:
		return AppendInode(dst, &r)
	case *DirentRec:
		return AppendDirent(dst, r)
	case DirentRec:
		return AppendDirent(dst, &r)
	case *ExtentsRec:
		return AppendExtents(dst, r)
	case ExtentsRec:
		return AppendExtents(dst, &r)
	}
	start := len(dst)
	dst = append(dst, byte(r.Type()), 0)
	switch r := deref(r).(type) {
	case InodeFreeRec:
		dst = binary.AppendUvarint(dst, r.Ino)
	case DirentDelRec:
		dst = binary.AppendUvarint(dst, r.Parent)
		dst = appendString(dst, r.Name)
	case InlineRec:
		dst = binary.AppendUvarint(dst, r.Ino)
		dst = appendBytes(dst, r.Data)
	case XattrSetRec:
		dst = binary.AppendUvarint(dst, r.Ino)
		dst = appendString(dst, r.Name)
		dst = appendBytes(dst, r.Value)
	case XattrDelRec:
		dst = binary.AppendUvarint(dst, r.Ino)
		dst = appendString(dst, r.Name)
	case SymlinkRec:
		dst = binary.AppendUvarint(dst, r.Ino)
		dst = appendString(dst, r.Target)
	case DataSumRec:
		dst = binary.AppendUvarint(dst, r.Ino)
		dst = binary.AppendUvarint(dst, uint64(len(r.Ranges)))
		for _, x := range r.Ranges {
			dst = binary.AppendUvarint(dst, x.Block)
			dst = binary.AppendUvarint(dst, x.Len)
			dst = binary.LittleEndian.AppendUint32(dst, x.CRC)
		}
	case BlockSumsRec:
		return AppendBlockSums(dst[:start], r.Block, r.Sums)
	default:
		return dst[:start]
	}
	return endFrame(dst, start)
}

// AppendBlockSums is AppendRecord for BlockSumsRec{block, sums}, without
// boxing it.
func AppendBlockSums(dst []byte, block uint64, sums []uint32) []byte {
	start := len(dst)
	dst = binary.AppendUvarint(append(dst, byte(RecBlockSums), 0), block)
	dst = binary.AppendUvarint(dst, uint64(len(sums)))
	for _, c := range sums {
		dst = binary.LittleEndian.AppendUint32(dst, c)
	}
	return endFrame(dst, start)
}

// AppendInode is AppendRecord for an inode record, without boxing it.
func AppendInode(dst []byte, r *InodeRec) []byte {
	start := len(dst)
	dst = binary.AppendUvarint(append(dst, byte(RecInode), 0), r.Ino)
	dst = binary.AppendUvarint(dst, r.Gen)
	dst = binary.AppendUvarint(dst, uint64(r.Mode))
	dst = binary.AppendUvarint(dst, uint64(r.Nlink))
	dst = binary.AppendUvarint(dst, uint64(r.UID))
	dst = binary.AppendUvarint(dst, uint64(r.GID))
	dst = binary.AppendUvarint(dst, uint64(r.Rdev))
	dst = binary.AppendUvarint(dst, uint64(r.Flags))
	dst = binary.AppendUvarint(dst, r.Size)
	dst = binary.AppendVarint(dst, r.Atime)
	dst = binary.AppendVarint(dst, r.Mtime-r.Atime)
	dst = binary.AppendVarint(dst, r.Ctime-r.Mtime)
	return endFrame(dst, start)
}

// AppendDirent is AppendRecord for a directory entry, without boxing it.
func AppendDirent(dst []byte, r *DirentRec) []byte {
	start := len(dst)
	dst = binary.AppendUvarint(append(dst, byte(RecDirent), 0), r.Parent)
	dst = binary.AppendUvarint(dst, r.Ino)
	dst = binary.AppendUvarint(dst, r.Cookie)
	dst = appendString(dst, r.Name)
	return endFrame(dst, start)
}

// AppendExtents is AppendRecord for an extent map, without boxing it.
func AppendExtents(dst []byte, r *ExtentsRec) []byte {
	start := len(dst)
	dst = binary.AppendUvarint(append(dst, byte(RecExtents), 0), r.Ino)
	dst = appendExtents(dst, r.Extents)
	return endFrame(dst, start)
}

// endFrame writes the body length of the record starting at start, whose
// frame was appended with one byte for it. Most bodies are under 128
// bytes and need no more; a longer one is moved right to make room.
func endFrame(dst []byte, start int) []byte {
	n := len(dst) - start - 2
	if n < 0x80 {
		dst[start+1] = byte(n)
		return dst
	}
	var lenBuf [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(lenBuf[:], uint64(n))
	dst = append(dst, lenBuf[:l-1]...) // room
	copy(dst[start+1+l:], dst[start+2:start+2+n])
	copy(dst[start+1:], lenBuf[:l])
	return dst
}

// appendExtents writes the count, then per extent: the gap from the end of
// the previous logical range (so order and disjointness are built in), the
// signed distance from the end of the previous physical range (small for
// files laid out contiguously), and the length.
func appendExtents(dst []byte, xs []Extent) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(xs)))
	var logEnd, physEnd uint64
	for _, x := range xs {
		dst = binary.AppendUvarint(dst, x.Logical-logEnd)
		dst = binary.AppendVarint(dst, int64(x.Physical-physEnd))
		dst = binary.AppendUvarint(dst, x.Len)
		logEnd, physEnd = x.Logical+x.Len, x.Physical+x.Len
	}
	return dst
}

// deref lets callers pass records by pointer as well as by value.
func deref(r Record) Record {
	switch p := r.(type) {
	case *InodeRec:
		return *p
	case *InodeFreeRec:
		return *p
	case *DirentRec:
		return *p
	case *DirentDelRec:
		return *p
	case *ExtentsRec:
		return *p
	case *InlineRec:
		return *p
	case *XattrSetRec:
		return *p
	case *XattrDelRec:
		return *p
	case *SymlinkRec:
		return *p
	case *DataSumRec:
		return *p
	case *BlockSumsRec:
		return *p
	}
	return r
}

// DecodeRecord decodes the record at the start of b and returns it (by
// value) with the number of bytes it used. Bad bytes, a truncated record or
// a record breaking a limit give an error wrapping ErrCorrupt.
func DecodeRecord(b []byte) (Record, int, error) {
	typ, d, total, err := frame(b)
	if err != nil {
		return nil, 0, err
	}
	r := decodeBody(typ, &d)
	if err := d.finish(typ, func() string { return check(r) }); err != nil {
		return nil, 0, err
	}
	return r, total, nil
}

// frame checks the frame of the record at the start of b and returns its
// type, a decoder over its body and its encoded size.
func frame(b []byte) (RecType, decoder, int, error) {
	total, complete, err := recordSize(b)
	if err != nil {
		return 0, decoder{}, 0, err
	}
	if !complete || total > len(b) {
		return 0, decoder{}, 0, fmt.Errorf("format: record of %d bytes, %d left: truncated: %w", total, len(b), ErrCorrupt)
	}
	_, hdr := binary.Uvarint(b[1:])
	return RecType(b[0]), decoder{b: b[1+hdr : total]}, total, nil
}

// finish fails a body with bytes left over or, once decoded, breaking a
// limit (why), and names the record type in the error.
func (d *decoder) finish(typ RecType, why func() string) error {
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.b)))
	}
	if d.err == nil {
		if w := why(); w != "" {
			d.fail(w)
		}
	}
	if d.err != nil {
		return fmt.Errorf("format: %v record: %w", typ, d.err)
	}
	return nil
}

// recordSize returns the encoded size of the record at the start of b from
// its frame alone, so a streaming reader knows how many bytes to gather.
// complete is false when b ends inside the frame; err is set when the frame
// itself is bad.
func recordSize(b []byte) (size int, complete bool, err error) {
	if len(b) == 0 {
		return 0, false, nil
	}
	if t := RecType(b[0]); t == 0 || t > maxRecType {
		return 0, false, fmt.Errorf("format: unknown record type %d: %w", b[0], ErrCorrupt)
	}
	n, l := binary.Uvarint(b[1:])
	switch {
	case l == 0 && len(b) <= binary.MaxVarintLen64:
		return 0, false, nil
	case l <= 0:
		return 0, false, fmt.Errorf("format: record length: bad varint: %w", ErrCorrupt)
	case n > MaxRecordLen:
		return 0, false, fmt.Errorf("format: record length %d over limit %d: %w", n, MaxRecordLen, ErrCorrupt)
	}
	return 1 + l + int(n), true, nil
}

func decodeBody(typ RecType, d *decoder) Record {
	switch typ {
	case RecInode:
		var r InodeRec
		decodeInode(d, &r)
		return r
	case RecInodeFree:
		return InodeFreeRec{Ino: d.uvarint("ino")}
	case RecDirent:
		return DirentRec{Parent: d.uvarint("parent"), Ino: d.uvarint("ino"), Cookie: d.uvarint("cookie"), Name: d.str("name", MaxNameLen)}
	case RecDirentDel:
		return DirentDelRec{Parent: d.uvarint("parent"), Name: d.str("name", MaxNameLen)}
	case RecExtents:
		return ExtentsRec{Ino: d.uvarint("ino"), Extents: decodeExtents(d)}
	case RecInline:
		return InlineRec{Ino: d.uvarint("ino"), Data: d.bytes("data", MaxInlineLen)}
	case RecXattrSet:
		return XattrSetRec{Ino: d.uvarint("ino"), Name: d.str("name", MaxNameLen), Value: d.bytes("value", MaxXattrValueLen)}
	case RecXattrDel:
		return XattrDelRec{Ino: d.uvarint("ino"), Name: d.str("name", MaxNameLen)}
	case RecSymlink:
		return SymlinkRec{Ino: d.uvarint("ino"), Target: d.str("target", MaxSymlinkLen)}
	case RecDataSum:
		return decodeDataSum(d)
	case RecBlockSums:
		var r BlockSumsRec
		decodeBlockSums(d, &r, nil)
		return r
	}
	d.fail("unknown type") // recordSize already refused it
	return nil
}

func decodeInode(d *decoder, r *InodeRec) {
	r.Ino, r.Gen = d.uvarint("ino"), d.uvarint("gen")
	for _, f := range [...]*uint32{&r.Mode, &r.Nlink, &r.UID, &r.GID, &r.Rdev, &r.Flags} {
		*f = d.u32("attribute")
	}
	r.Size = d.uvarint("size")
	r.Atime = d.varint("atime")
	r.Mtime = r.Atime + d.varint("mtime")
	r.Ctime = r.Mtime + d.varint("ctime")
}

func decodeExtents(d *decoder) []Extent {
	n := d.uvarint("extent count")
	// Every extent takes at least 3 bytes: bound the allocation by the input.
	if d.err != nil || n > uint64(len(d.b)/3) {
		d.fail(fmt.Sprintf("extent count %d for %d bytes", n, len(d.b)))
		return nil
	}
	xs := make([]Extent, n)
	var logEnd, physEnd uint64
	for i := range xs {
		gap := d.uvarint("extent gap")
		x := Extent{Logical: logEnd + gap, Physical: physEnd + uint64(d.varint("extent distance")), Len: d.uvarint("extent length")}
		if x.Logical < logEnd {
			d.fail("extent logical offset overflows")
		}
		xs[i] = x
		logEnd, physEnd = x.Logical+x.Len, x.Physical+x.Len
	}
	return xs
}

func decodeDataSum(d *decoder) DataSumRec {
	r := DataSumRec{Ino: d.uvarint("ino")}
	n := d.uvarint("range count")
	// Every range takes at least 6 bytes: bound the allocation by the input.
	if d.err != nil || n > uint64(len(d.b)/6) {
		d.fail(fmt.Sprintf("range count %d for %d bytes", n, len(d.b)))
		return r
	}
	r.Ranges = make([]SumRange, n)
	for i := range r.Ranges {
		r.Ranges[i] = SumRange{Block: d.uvarint("range block"), Len: d.uvarint("range length"), CRC: d.fixed32("range crc")}
	}
	return r
}

// decodeBlockSums decodes a BlockSumsRec's body into r, its sums into
// reuse's memory when it is large enough.
func decodeBlockSums(d *decoder, r *BlockSumsRec, reuse []uint32) {
	r.Block = d.uvarint("block")
	n := d.uvarint("sum count")
	if d.err != nil || n > uint64(len(d.b)/4) {
		d.fail(fmt.Sprintf("sum count %d for %d bytes", n, len(d.b)))
		return
	}
	if uint64(cap(reuse)) < n {
		reuse = make([]uint32, n)
	}
	r.Sums = reuse[:n]
	for i := range r.Sums {
		r.Sums[i] = d.fixed32("sum")
	}
}

// Validate reports, wrapping ErrInvalid, why r cannot be written: a zero
// inode number, a bad name, a value over its limit, an extent map that is
// unsorted, overlapping or overflowing. Decoders apply the same rules.
func Validate(r Record) error {
	if r == nil {
		return fmt.Errorf("format: nil record: %w", ErrInvalid)
	}
	if why := check(deref(r)); why != "" {
		return invalid(r.Type(), why)
	}
	return nil
}

func invalid(t RecType, why string) error {
	return fmt.Errorf("format: %v record: %s: %w", t, why, ErrInvalid)
}

func check(r Record) string {
	switch r := r.(type) {
	case InodeRec:
		return checkIno(r.Ino)
	case InodeFreeRec:
		return checkIno(r.Ino)
	case DirentRec:
		return r.check()
	case DirentDelRec:
		return first(checkIno(r.Parent), checkName(r.Name))
	case ExtentsRec:
		return r.check()
	case InlineRec:
		return first(checkIno(r.Ino), checkLen("inline data", len(r.Data), 0, MaxInlineLen))
	case XattrSetRec:
		return first(checkIno(r.Ino), checkXattrName(r.Name), checkLen("xattr value", len(r.Value), 0, MaxXattrValueLen))
	case XattrDelRec:
		return first(checkIno(r.Ino), checkXattrName(r.Name))
	case SymlinkRec:
		return first(checkIno(r.Ino), checkLen("symlink target", len(r.Target), 1, MaxSymlinkLen), checkNoNUL(r.Target))
	case DataSumRec:
		return first(checkIno(r.Ino), checkRanges(r.Ranges))
	case BlockSumsRec:
		return r.check()
	}
	return fmt.Sprintf("unknown record type %T", r)
}

func (r *DirentRec) check() string {
	return first(checkIno(r.Parent), checkIno(r.Ino), checkName(r.Name))
}

func (r *ExtentsRec) check() string { return first(checkIno(r.Ino), checkExtents(r.Extents)) }

func (r *BlockSumsRec) check() string {
	switch n := uint64(len(r.Sums)); {
	case n == 0 || n > MaxBlockSums:
		return fmt.Sprintf("%d block sums outside [1, %d]", n, MaxBlockSums)
	case r.Block == 0 || r.Block+n < r.Block:
		return fmt.Sprintf("block sums of %d blocks from %d overflow or start at block 0", n, r.Block)
	}
	return ""
}

func first(whys ...string) string {
	for _, w := range whys {
		if w != "" {
			return w
		}
	}
	return ""
}

func checkIno(ino uint64) string {
	if ino == 0 {
		return "inode number 0"
	}
	return ""
}

func checkLen(what string, n, lo, hi int) string {
	if n < lo || n > hi {
		return fmt.Sprintf("%s of %d bytes outside [%d, %d]", what, n, lo, hi)
	}
	return ""
}

func checkNoNUL(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Sprintf("NUL byte in %q", s)
	}
	return ""
}

// checkName accepts what a directory may hold: 1 to 255 bytes, no '/' or
// NUL, not "." or "..".
func checkName(name string) string {
	if w := checkLen("name", len(name), 1, MaxNameLen); w != "" {
		return w
	}
	if name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 {
		return fmt.Sprintf("name %q not allowed in a directory", name)
	}
	return checkNoNUL(name)
}

func checkXattrName(name string) string {
	return first(checkLen("xattr name", len(name), 1, MaxNameLen), checkNoNUL(name))
}

// checkExtents requires non-empty extents sorted by logical offset, not
// overlapping, and with no range wrapping past 2^64.
func checkExtents(xs []Extent) string {
	if len(xs) > MaxExtents {
		return fmt.Sprintf("%d extents over limit %d", len(xs), MaxExtents)
	}
	var logEnd uint64
	for i, x := range xs {
		switch {
		case x.Len == 0:
			return fmt.Sprintf("extent %d is empty", i)
		case x.Logical+x.Len < x.Logical || x.Physical+x.Len < x.Physical:
			return fmt.Sprintf("extent %d overflows", i)
		case i > 0 && x.Logical < logEnd:
			return fmt.Sprintf("extent %d at logical block %d overlaps or precedes block %d", i, x.Logical, logEnd)
		}
		logEnd = x.Logical + x.Len
	}
	return ""
}

// checkRanges requires 1 to MaxExtents non-empty ranges that do not wrap
// past 2^64.
func checkRanges(xs []SumRange) string {
	if len(xs) == 0 || len(xs) > MaxExtents {
		return fmt.Sprintf("%d ranges outside [1, %d]", len(xs), MaxExtents)
	}
	for i, x := range xs {
		if x.Len == 0 || x.Block+x.Len < x.Block {
			return fmt.Sprintf("range %d is empty or overflows", i)
		}
	}
	return ""
}

// maxRecType is the highest record type number in use (see the registry).
const maxRecType = RecBlockSums

func (t RecType) String() string {
	if t == 0 || t > maxRecType {
		return fmt.Sprintf("type-%d", uint8(t))
	}
	return [...]string{"", "inode", "inode-free", "dirent", "dirent-del", "extents", "inline", "xattr-set", "xattr-del", "symlink", "data-sum", "block-sums"}[t]
}
