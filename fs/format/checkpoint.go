package format

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"iter"
	"math/rand/v2"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/iobuf"
)

// A checkpoint is a stream of records written into extents the volume
// allocates as the stream grows. The first extent starts with the
// checkpoint header, every later one with a link header; each header names
// the next extent, so the extent list needs no fixed-size table. See
// FORMAT.md.

// CheckpointOptions configure a CheckpointWriter. Alloc is required.
type CheckpointOptions struct {
	BlockSize uint32
	// NextSeq is the first log sequence number the checkpoint does not
	// cover: replay after loading it starts there.
	NextSeq uint64
	// NextGen is the generation the volume gives its next new inode: every
	// generation below it was issued before the checkpoint (those issued
	// after are in the log it replays). Stored so that an (inode,
	// generation) pair never comes back after a remount. Optional.
	NextGen uint64
	// Alloc returns n blocks at start, 1 <= n <= blocks, or an error.
	Alloc func(blocks uint64) (start, n uint64, err error)
	// Free takes back blocks the writer allocated and did not use (the
	// tail of the last extent, or everything on Abort). Optional.
	Free func(start, n uint64)
	// SizeHint is the expected payload in bytes; the first allocation asks
	// for that much. 0 means 64 KiB. Later requests double, up to 64 MiB.
	SizeHint uint64
	// BufferSize is the bytes per device write; 0 means 1 MiB.
	BufferSize int
	// Buffers, if set, lends the writer's one buffer of BufferSize bytes,
	// taken at the first write and given back by Finish or Abort; else
	// the writer makes it.
	Buffers *iobuf.Pool
}

// CheckpointInfo describes a written or loaded checkpoint.
type CheckpointInfo struct {
	Block      uint64 // the header's block: Superblock.Checkpoint
	NextSeq    uint64
	NextGen    uint64 // CheckpointOptions.NextGen; 0 from images written before it
	Records    uint64
	PayloadLen uint64
	Extents    []BlockRange // every block the checkpoint occupies, in stream order
}

const maxCheckpointExtentBytes = 64 << 20

// CheckpointHead is the decoded header of one checkpoint extent: the
// checkpoint header for the first, a link header for the others.
type CheckpointHead struct {
	Index      uint32 // 0 for the first extent
	ID         uint64
	Len        uint64 // blocks in this extent
	Next       uint64 // first block of the next extent; 0: last
	NextSeq    uint64 // first extent only, as are the fields below
	NextGen    uint64
	Records    uint64
	PayloadLen uint64
	PayloadCRC uint32
	Extents    uint32
}

func headerSize(index int) int {
	if index == 0 {
		return CheckpointHeaderSize
	}
	return CheckpointLinkHeaderSize
}

// encode writes h at the front of b.
func (h *CheckpointHead) encode(b []byte) {
	le := binary.LittleEndian
	if h.Index == 0 {
		le.PutUint32(b[0:], CheckpointMagic)
		le.PutUint32(b[4:], FormatVersion)
		le.PutUint64(b[8:], h.NextSeq)
		le.PutUint64(b[16:], h.Records)
		le.PutUint64(b[24:], h.PayloadLen)
		le.PutUint32(b[32:], h.PayloadCRC)
		le.PutUint32(b[36:], h.Extents)
		le.PutUint64(b[40:], h.ID)
		le.PutUint64(b[48:], h.Len)
		le.PutUint64(b[56:], h.Next)
		le.PutUint64(b[64:], h.NextGen)
		clear(b[72:76])
		le.PutUint32(b[76:], Checksum(b[:76]))
		return
	}
	le.PutUint32(b[0:], CheckpointLinkMagic)
	le.PutUint32(b[4:], h.Index)
	le.PutUint64(b[8:], h.ID)
	le.PutUint64(b[16:], h.Len)
	le.PutUint64(b[24:], h.Next)
	clear(b[32:44])
	le.PutUint32(b[44:], Checksum(b[:44]))
}

// CheckpointWriter streams records into a new checkpoint. It is not safe
// for concurrent use. Nothing it writes is referenced until the volume puts
// Finish's Block into a superblock (WriteSuperblock flushes first).
type CheckpointWriter struct {
	dev  device.Device
	opts CheckpointOptions
	bs   int64
	id   uint64

	extents []BlockRange
	first   []byte // head block of extent 0, written by Finish
	head    []byte // head block of the current extent when it is not the first
	extBase int64  // device byte offsets of the current extent
	headEnd int64
	extEnd  int64
	pos     int64

	buf    []byte     // body bytes for [bufOff, bufOff+len(buf)), at most BufferSize
	bb     *iobuf.Buf // buf's buffer, when Buffers lent it
	bufOff int64
	enc    []byte // one encoded record

	crc      uint32
	payload  uint64
	records  uint64
	want     uint64 // blocks for the next allocation
	err      error  // sticky: after an error only Abort is useful
	finished bool   // Finish succeeded: the extents belong to the caller
}

// NewCheckpointWriter starts a checkpoint. It allocates nothing until the
// first record.
func NewCheckpointWriter(dev device.Device, opts CheckpointOptions) (*CheckpointWriter, error) {
	if !ValidBlockSize(opts.BlockSize) || opts.Alloc == nil {
		return nil, fmt.Errorf("format: checkpoint writer: block size %d, alloc set %v: %w", opts.BlockSize, opts.Alloc != nil, ErrInvalid)
	}
	if opts.BufferSize <= 0 {
		opts.BufferSize = 1 << 20
	}
	if opts.SizeHint == 0 {
		opts.SizeHint = 64 << 10
	}
	bs := int64(opts.BlockSize)
	w := &CheckpointWriter{dev: dev, opts: opts, bs: bs, id: rand.Uint64()}
	w.want = max(2, min(opts.SizeHint+CheckpointHeaderSize, maxCheckpointExtentBytes)/uint64(bs)+1)
	return w, nil
}

// Add appends one record. A record Validate rejects gives an error wrapping
// ErrInvalid and leaves the checkpoint as it was. AddInode, AddDirent and
// AddExtents do the same for the common types without boxing them.
func (w *CheckpointWriter) Add(r Record) error { return w.add(appendChecked(w.enc[:0], r)) }

// AddInode is Add for an inode record.
func (w *CheckpointWriter) AddInode(r *InodeRec) error {
	return w.add(appendInodeChecked(w.enc[:0], r))
}

// AddDirent is Add for a directory entry.
func (w *CheckpointWriter) AddDirent(r *DirentRec) error {
	return w.add(appendDirentChecked(w.enc[:0], r))
}

// AddExtents is Add for an extent map.
func (w *CheckpointWriter) AddExtents(r *ExtentsRec) error {
	return w.add(appendExtentsChecked(w.enc[:0], r))
}

// AddBlockSums is Add for a BlockSumsRec.
func (w *CheckpointWriter) AddBlockSums(r *BlockSumsRec) error {
	return w.add(appendBlockSumsChecked(w.enc[:0], r))
}

// AddBuffer appends the records b holds, as if each had been added here.
func (w *CheckpointWriter) AddBuffer(b *RecordBuffer) error {
	if w.err != nil {
		return w.err
	}
	if b.err != nil {
		return b.err
	}
	for c := range b.chunks() {
		if err := w.write(c); err != nil {
			w.err = err
			return err
		}
		w.crc = UpdateChecksum(w.crc, c)
	}
	w.payload += uint64(b.size)
	w.records += b.records
	return nil
}

// add appends the record an append*Checked call encoded into w.enc.
func (w *CheckpointWriter) add(enc []byte, err error) error {
	if w.err != nil {
		return w.err
	}
	if err != nil {
		return err
	}
	w.enc = enc
	return w.addEncoded()
}

// RecordBuffer holds checkpoint records encoded in memory, checked as
// CheckpointWriter checks them, for a writer to take whole (AddBuffer).
// The volume encodes a periodic checkpoint in slices while it holds its
// metadata lock, and writes it after letting go. A record that fails its
// check is not kept and the buffer keeps the error: AddBuffer returns it.
//
// The records sit in chunks of 128 KiB: a buffer of 50 MB never copies
// itself to grow, which would hold up the slice (and the lock) that made
// it grow. With Pool set the chunks are lent by it (its sync.Pool class
// of 128 KiB: idle chunks go back to the heap at garbage collection, so
// a large checkpoint leaves no memory held), and Release gives them back.
type RecordBuffer struct {
	// Pool, if set, lends the chunks; set it before the first Add.
	Pool *iobuf.Pool

	full    [][]byte     // filled chunks
	cur     []byte       // the chunk being filled
	lent    []*iobuf.Buf // the chunks Pool lent
	enc     []byte       // one encoded record
	size    int
	records uint64
	err     error
}

const recordChunk = 128 << 10

// Release empties the buffer and gives its chunks back to Pool (Bytes
// returned a copy, which stays valid). A buffer a writer took
// (AddBuffer) may be released once that has returned.
func (b *RecordBuffer) Release() {
	for _, bb := range b.lent {
		b.Pool.Put(bb)
	}
	clear(b.lent)
	clear(b.full)
	*b = RecordBuffer{Pool: b.Pool, lent: b.lent[:0], full: b.full[:0], enc: b.enc[:0]}
}

// Add is CheckpointWriter.Add into the buffer.
func (b *RecordBuffer) Add(r Record) error { return b.add(appendChecked(b.enc[:0], r)) }

// AddInode is CheckpointWriter.AddInode into the buffer.
func (b *RecordBuffer) AddInode(r *InodeRec) error {
	return b.add(appendInodeChecked(b.enc[:0], r))
}

// AddDirent is CheckpointWriter.AddDirent into the buffer.
func (b *RecordBuffer) AddDirent(r *DirentRec) error {
	return b.add(appendDirentChecked(b.enc[:0], r))
}

// AddExtents is CheckpointWriter.AddExtents into the buffer.
func (b *RecordBuffer) AddExtents(r *ExtentsRec) error {
	return b.add(appendExtentsChecked(b.enc[:0], r))
}

// AddBlockSums is CheckpointWriter.AddBlockSums into the buffer.
func (b *RecordBuffer) AddBlockSums(r *BlockSumsRec) error {
	return b.add(appendBlockSumsChecked(b.enc[:0], r))
}

// Len is the bytes of records held.
func (b *RecordBuffer) Len() int { return b.size }

// Bytes returns a copy of the records held, encoded.
func (b *RecordBuffer) Bytes() []byte {
	out := make([]byte, 0, b.size)
	for c := range b.chunks() {
		out = append(out, c...)
	}
	return out
}

// chunks yields the filled chunks, then the one being filled. (Ranging
// over append(b.full, b.cur) would write into b.full's spare capacity.)
func (b *RecordBuffer) chunks() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for _, c := range b.full {
			if !yield(c) {
				return
			}
		}
		yield(b.cur)
	}
}

func (b *RecordBuffer) add(enc []byte, err error) error {
	if b.err != nil {
		return b.err
	}
	if err != nil {
		b.err = err
		return err
	}
	b.enc = enc
	if len(b.cur)+len(enc) > cap(b.cur) {
		if len(b.cur) > 0 {
			b.full = append(b.full, b.cur)
		}
		b.cur = b.newChunk(max(recordChunk, len(enc)))
	}
	b.cur = append(b.cur, enc...)
	b.size += len(enc)
	b.records++
	return nil
}

// newChunk returns an empty chunk of n bytes of capacity.
func (b *RecordBuffer) newChunk(n int) []byte {
	if b.Pool == nil {
		return make([]byte, 0, n)
	}
	bb := b.Pool.Get(n)
	b.lent = append(b.lent, bb)
	return bb.B[:0]
}

// appendChecked and the typed variants append r's encoding to dst after
// the checks every checkpoint record passes; on failure dst is returned
// as it was, with the error.
func appendChecked(dst []byte, r Record) ([]byte, error) {
	if err := Validate(r); err != nil {
		return dst, err
	}
	return AppendRecord(dst, r), nil
}

func appendInodeChecked(dst []byte, r *InodeRec) ([]byte, error) {
	if why := checkIno(r.Ino); why != "" {
		return dst, invalid(RecInode, why)
	}
	return AppendInode(dst, r), nil
}

func appendDirentChecked(dst []byte, r *DirentRec) ([]byte, error) {
	if why := r.check(); why != "" {
		return dst, invalid(RecDirent, why)
	}
	return AppendDirent(dst, r), nil
}

func appendBlockSumsChecked(dst []byte, r *BlockSumsRec) ([]byte, error) {
	if why := r.check(); why != "" {
		return dst, invalid(RecBlockSums, why)
	}
	return AppendBlockSums(dst, r.Block, r.Sums), nil
}

func appendExtentsChecked(dst []byte, r *ExtentsRec) ([]byte, error) {
	if why := r.check(); why != "" {
		return dst, invalid(RecExtents, why)
	}
	return AppendExtents(dst, r), nil
}

// addEncoded appends the record encoded in w.enc.
func (w *CheckpointWriter) addEncoded() error {
	if err := w.write(w.enc); err != nil {
		w.err = err
		return err
	}
	w.crc = UpdateChecksum(w.crc, w.enc)
	w.payload += uint64(len(w.enc))
	w.records++
	return nil
}

func (w *CheckpointWriter) write(p []byte) error {
	for len(p) > 0 {
		if w.pos == w.extEnd {
			if err := w.grow(); err != nil {
				return err
			}
		}
		n := int(min(int64(len(p)), w.extEnd-w.pos))
		if w.pos < w.headEnd {
			n = min(n, int(w.headEnd-w.pos))
			copy(w.curHead()[w.pos-w.extBase:], p[:n])
		} else {
			if w.buf == nil {
				w.takeBuf()
			}
			n = min(n, w.opts.BufferSize-len(w.buf))
			w.buf = append(w.buf, p[:n]...)
			if len(w.buf) >= w.opts.BufferSize {
				if err := w.flushBuf(); err != nil {
					return err
				}
			}
		}
		w.pos += int64(n)
		p = p[n:]
	}
	return nil
}

// takeBuf gets the write buffer: lent by Buffers, or made.
func (w *CheckpointWriter) takeBuf() {
	if w.opts.Buffers == nil {
		w.buf = make([]byte, 0, w.opts.BufferSize)
		return
	}
	w.bb = w.opts.Buffers.Get(w.opts.BufferSize)
	w.buf = w.bb.B[:0]
}

// dropBuf gives the write buffer back, once nothing is left in it to write.
func (w *CheckpointWriter) dropBuf() {
	if w.bb != nil {
		w.opts.Buffers.Put(w.bb)
		w.bb = nil
	}
	w.buf = nil
}

func (w *CheckpointWriter) curHead() []byte {
	if len(w.extents) == 1 {
		return w.first
	}
	return w.head
}

func (w *CheckpointWriter) flushBuf() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.dev.WriteAt(w.buf, w.bufOff); err != nil {
		return fmt.Errorf("format: write checkpoint: %w", err)
	}
	w.bufOff += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// grow moves to a new extent, linking the current one to it.
func (w *CheckpointWriter) grow() error {
	if err := w.flushBuf(); err != nil {
		return err
	}
	start, n, err := w.opts.Alloc(w.want)
	if err != nil {
		return fmt.Errorf("format: checkpoint extent of %d blocks: %w", w.want, err)
	}
	if n == 0 || n > w.want || start < DataStart(w.opts.BlockSize) || start+n > uint64(w.dev.Size()/w.bs) || start+n < start {
		if w.opts.Free != nil && n > 0 {
			w.opts.Free(start, n)
		}
		return fmt.Errorf("format: allocator gave %d+%d for %d blocks on a device of %d: %w", start, n, w.want, w.dev.Size()/w.bs, ErrInvalid)
	}
	if k := len(w.extents); k > 1 {
		// The extent we leave is full, so its header is final now.
		if err := w.writeHead(k-1, w.head, start); err != nil {
			return err
		}
	}
	w.extents = append(w.extents, BlockRange{start, n})
	hb := make([]byte, w.bs)
	if len(w.extents) == 1 {
		w.first = hb
	} else {
		w.head = hb
	}
	w.extBase = int64(start) * w.bs
	w.headEnd = w.extBase + w.bs
	w.extEnd = w.extBase + int64(n)*w.bs
	w.pos = w.extBase + int64(headerSize(len(w.extents)-1))
	w.bufOff = w.headEnd
	w.want = min(w.want*2, maxCheckpointExtentBytes/uint64(w.bs))
	return nil
}

// writeHead encodes the header of extent i into its head block hb and
// writes the block; next is the following extent's first block or 0.
func (w *CheckpointWriter) writeHead(i int, hb []byte, next uint64) error {
	h := CheckpointHead{Index: uint32(i), ID: w.id, Len: w.extents[i].Len, Next: next}
	if i == 0 {
		h.NextSeq, h.NextGen, h.Records, h.PayloadLen, h.PayloadCRC = w.opts.NextSeq, w.opts.NextGen, w.records, w.payload, w.crc
		h.Extents = uint32(len(w.extents))
	}
	h.encode(hb)
	if _, err := w.dev.WriteAt(hb, int64(w.extents[i].Start)*w.bs); err != nil {
		return fmt.Errorf("format: write checkpoint header %d: %w", i, err)
	}
	return nil
}

// Finish writes what is buffered and the headers, gives back the unused
// tail of the last extent, and describes the checkpoint. It does not flush:
// WriteSuperblock does before it makes the checkpoint current. On error the
// caller should Abort.
func (w *CheckpointWriter) Finish() (CheckpointInfo, error) {
	if w.err != nil {
		return CheckpointInfo{}, w.err
	}
	w.err = fmt.Errorf("format: checkpoint writer finished: %w", fs.ErrClosed)
	defer w.dropBuf()
	if len(w.extents) == 0 {
		if err := w.grow(); err != nil { // an empty checkpoint still has a header
			return CheckpointInfo{}, err
		}
	}
	if err := w.flushBuf(); err != nil {
		return CheckpointInfo{}, err
	}
	k := len(w.extents) - 1
	last := &w.extents[k]
	if used := uint64((w.pos - w.extBase + w.bs - 1) / w.bs); used < last.Len {
		if w.opts.Free != nil {
			w.opts.Free(last.Start+used, last.Len-used)
		}
		last.Len = used
	}
	if k > 0 {
		if err := w.writeHead(k, w.head, 0); err != nil {
			return CheckpointInfo{}, err
		}
	}
	next := uint64(0)
	if k > 0 {
		next = w.extents[1].Start
	}
	if err := w.writeHead(0, w.first, next); err != nil {
		return CheckpointInfo{}, err
	}
	w.finished = true
	return CheckpointInfo{
		Block:      w.extents[0].Start,
		NextSeq:    w.opts.NextSeq,
		NextGen:    w.opts.NextGen,
		Records:    w.records,
		PayloadLen: w.payload,
		Extents:    w.extents,
	}, nil
}

// Abort gives back every block allocated (through Free) and ends the
// writer. Use it after an error, or to drop an unfinished checkpoint; after
// a successful Finish it does nothing.
func (w *CheckpointWriter) Abort() {
	if w.finished {
		return
	}
	if w.opts.Free != nil {
		for _, x := range w.extents {
			w.opts.Free(x.Start, x.Len)
		}
	}
	w.extents = nil
	w.dropBuf()
	w.err = fmt.Errorf("format: checkpoint writer aborted: %w", fs.ErrClosed)
}
