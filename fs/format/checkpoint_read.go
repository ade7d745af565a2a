package format

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/smallfs/smallfs/fs/device"
)

// CheckpointLoc is where ReadCheckpoint finds a checkpoint.
type CheckpointLoc struct {
	Block     uint64
	BlockSize uint32
}

// CheckpointLoc is the location of sb's checkpoint (Block 0: none).
func (sb *Superblock) CheckpointLoc() CheckpointLoc {
	return CheckpointLoc{Block: sb.Checkpoint, BlockSize: sb.BlockSize}
}

// readChunkSize is the bytes ReadCheckpoint reads at a time.
const readChunkSize = 1 << 20

// ReadCheckpoint streams the checkpoint at loc, calling fn (if not nil) for every record
// in order, and describes it (including every extent, so mount can mark
// them used). The payload checksum covers the whole stream and is checked
// at the end: fn sees records before they are verified, so on any error the
// caller must discard everything fn built. Errors wrap ErrCorrupt, or
// ErrNewerVersion, or come from the device or from fn.
func ReadCheckpoint(dev device.Device, loc CheckpointLoc, fn func(Record) error) (CheckpointInfo, error) {
	return readCheckpoint(dev, loc, fn, nil)
}

// readCheckpoint is ReadCheckpoint, decoding with scan when not nil.
func readCheckpoint(dev device.Device, loc CheckpointLoc, fn func(Record) error, scan *scanner) (CheckpointInfo, error) {
	if !ValidBlockSize(loc.BlockSize) || loc.Block < DataStart(loc.BlockSize) {
		return CheckpointInfo{}, fmt.Errorf("format: checkpoint at block %d, block size %d: %w", loc.Block, loc.BlockSize, ErrCorrupt)
	}
	r := checkpointReader{dev: dev, bs: int64(loc.BlockSize), devBlocks: uint64(dev.Size()) / uint64(loc.BlockSize)}
	r.stream.fn, r.stream.scan = fn, scan
	hb := make([]byte, r.bs)
	first, err := r.readHead(hb, loc.Block, 0, 0)
	if err != nil {
		return CheckpointInfo{}, err
	}
	info := CheckpointInfo{Block: loc.Block, NextSeq: first.NextSeq, NextGen: first.NextGen, Records: first.Records, PayloadLen: first.PayloadLen}
	r.left = first.PayloadLen
	h, start := first, loc.Block
	for {
		info.Extents = append(info.Extents, BlockRange{start, h.Len})
		if err := r.extent(hb, start, h.Len, headerSize(int(h.Index))); err != nil {
			return info, err
		}
		if h.Next == 0 {
			break
		}
		if len(info.Extents) >= int(first.Extents) {
			return info, fmt.Errorf("format: checkpoint has more than its %d extents: %w", first.Extents, ErrCorrupt)
		}
		start = h.Next
		if h, err = r.readHead(hb, start, uint32(len(info.Extents)), first.ID); err != nil {
			return info, err
		}
	}
	s := &r.stream
	switch {
	case len(info.Extents) != int(first.Extents):
		err = fmt.Errorf("checkpoint has %d extents, header says %d", len(info.Extents), first.Extents)
	case r.left != 0:
		err = fmt.Errorf("checkpoint extents end %d bytes before the payload", r.left)
	case len(s.carry) != 0:
		err = fmt.Errorf("checkpoint payload ends inside a record")
	case s.records != first.Records:
		err = fmt.Errorf("checkpoint holds %d records, header says %d", s.records, first.Records)
	case s.crc != first.PayloadCRC:
		err = fmt.Errorf("checkpoint payload checksum %#08x, computed %#08x", first.PayloadCRC, s.crc)
	default:
		err = checkDisjoint(info.Extents)
	}
	if err != nil {
		return info, fmt.Errorf("format: %w: %w", err, ErrCorrupt)
	}
	return info, nil
}

type checkpointReader struct {
	dev       device.Device
	bs        int64
	devBlocks uint64
	left      uint64 // payload bytes not yet read
	buf       []byte
	stream    recordStream
}

// readHead reads and decodes the header of extent index at block into hb.
func (r *checkpointReader) readHead(hb []byte, block uint64, index uint32, id uint64) (CheckpointHead, error) {
	if block < DataStart(uint32(r.bs)) || block >= r.devBlocks {
		return CheckpointHead{}, fmt.Errorf("format: checkpoint extent %d at block %d outside the device: %w", index, block, ErrCorrupt)
	}
	if _, err := r.dev.ReadAt(hb, int64(block)*r.bs); err != nil {
		return CheckpointHead{}, fmt.Errorf("format: read checkpoint: %w", err)
	}
	h, err := DecodeCheckpointHead(hb, index)
	if err != nil {
		return h, err
	}
	switch {
	case index > 0 && h.ID != id:
		err = fmt.Errorf("checkpoint extent %d belongs to checkpoint %#x, not %#x", index, h.ID, id)
	case h.Len == 0 || h.Len > r.devBlocks-block:
		err = fmt.Errorf("checkpoint extent %d of %d blocks at %d, device has %d", index, h.Len, block, r.devBlocks)
	}
	if err != nil {
		return h, fmt.Errorf("format: %w: %w", err, ErrCorrupt)
	}
	return h, nil
}

// extent feeds the payload held by one extent, whose head block is in hb.
// An extent reaching past the block where the payload ends is damage: the
// writer fills each extent before the next and gives back the tail of the
// last, so one that claims more would have its owner claim blocks it never
// wrote (and take them from whatever does).
func (r *checkpointReader) extent(hb []byte, start, blocks uint64, hdr int) error {
	if need := (uint64(hdr) + min(r.left, blocks*uint64(r.bs)-uint64(hdr)) + uint64(r.bs) - 1) / uint64(r.bs); blocks > need {
		return fmt.Errorf("format: checkpoint extent at block %d holds %d blocks, its payload %d: %w", start, blocks, need, ErrCorrupt)
	}
	p := hb[hdr:]
	p = p[:min(uint64(len(p)), r.left)]
	if err := r.feed(p); err != nil {
		return err
	}
	off := int64(start+1) * r.bs
	end := int64(start+blocks) * r.bs
	for off < end && r.left > 0 {
		n := min(end-off, readChunkSize, int64(r.left))
		if cap(r.buf) < int(n) {
			r.buf = make([]byte, readChunkSize)
		}
		b := r.buf[:n]
		if _, err := r.dev.ReadAt(b, off); err != nil {
			return fmt.Errorf("format: read checkpoint: %w", err)
		}
		if err := r.feed(b); err != nil {
			return err
		}
		off += n
	}
	return nil
}

func (r *checkpointReader) feed(p []byte) error {
	r.left -= uint64(len(p))
	return r.stream.feed(p)
}

// DecodeCheckpointHead decodes the header at the start of an extent's first
// block: the checkpoint header when index is 0, a link header otherwise.
func DecodeCheckpointHead(b []byte, index uint32) (CheckpointHead, error) {
	le := binary.LittleEndian
	size, magic := CheckpointLinkHeaderSize, CheckpointLinkMagic
	if index == 0 {
		size, magic = CheckpointHeaderSize, CheckpointMagic
	}
	if len(b) < size {
		return CheckpointHead{}, fmt.Errorf("format: checkpoint header of %d bytes: %w", len(b), ErrCorrupt)
	}
	if m := le.Uint32(b); m != magic {
		return CheckpointHead{}, fmt.Errorf("format: checkpoint extent %d magic %#08x: %w", index, m, ErrCorrupt)
	}
	if want, got := Checksum(b[:size-4]), le.Uint32(b[size-4:]); want != got {
		return CheckpointHead{}, fmt.Errorf("format: checkpoint extent %d header checksum %#08x, computed %#08x: %w", index, got, want, ErrCorrupt)
	}
	if index == 0 {
		if v := le.Uint32(b[4:]); v > FormatVersion {
			return CheckpointHead{}, fmt.Errorf("format: checkpoint version %d, this smallfs reads up to %d: %w", v, FormatVersion, ErrNewerVersion)
		} else if v == 0 {
			return CheckpointHead{}, fmt.Errorf("format: checkpoint version 0: %w", ErrCorrupt)
		}
		h := CheckpointHead{
			NextSeq: le.Uint64(b[8:]), NextGen: le.Uint64(b[64:]), Records: le.Uint64(b[16:]), PayloadLen: le.Uint64(b[24:]),
			PayloadCRC: le.Uint32(b[32:]), Extents: le.Uint32(b[36:]),
			ID: le.Uint64(b[40:]), Len: le.Uint64(b[48:]), Next: le.Uint64(b[56:]),
		}
		if h.Extents == 0 || (h.Extents == 1) != (h.Next == 0) {
			return h, fmt.Errorf("format: checkpoint of %d extents, next at %d: %w", h.Extents, h.Next, ErrCorrupt)
		}
		return h, nil
	}
	h := CheckpointHead{Index: le.Uint32(b[4:]), ID: le.Uint64(b[8:]), Len: le.Uint64(b[16:]), Next: le.Uint64(b[24:])}
	if h.Index != index {
		return h, fmt.Errorf("format: checkpoint extent %d labelled %d: %w", index, h.Index, ErrCorrupt)
	}
	return h, nil
}

// checkDisjoint fails if two extents share a block (a loop or a bad link).
func checkDisjoint(xs []BlockRange) error {
	s := slices.SortedFunc(slices.Values(xs), func(a, b BlockRange) int { return cmp.Compare(a.Start, b.Start) })
	for i := 1; i < len(s); i++ {
		if s[i].Start < s[i-1].End() {
			return fmt.Errorf("checkpoint extents %d+%d and %d+%d overlap", s[i-1].Start, s[i-1].Len, s[i].Start, s[i].Len)
		}
	}
	return nil
}

// recordStream decodes records from payload handed over in arbitrary
// pieces, keeping the running checksum and count.
type recordStream struct {
	fn      func(Record) error
	scan    *scanner // decodes instead of DecodeRecord when set
	carry   []byte   // an incomplete record from the previous piece
	crc     uint32
	records uint64
}

func (s *recordStream) feed(p []byte) error {
	s.crc = UpdateChecksum(s.crc, p)
	// Complete a record split across pieces, a byte at a time while its
	// frame is incomplete (at most 11 bytes), then in one copy.
	for len(s.carry) > 0 && len(p) > 0 {
		size, complete, err := recordSize(s.carry)
		if err != nil {
			return err
		}
		take := 1
		if complete {
			take = min(len(p), size-len(s.carry))
		}
		s.carry = append(s.carry, p[:take]...)
		p = p[take:]
		if complete && len(s.carry) == size {
			if err := s.emit(s.carry); err != nil {
				return err
			}
			s.carry = s.carry[:0]
		}
	}
	for len(p) > 0 {
		size, complete, err := recordSize(p)
		if err != nil {
			return err
		}
		if !complete || size > len(p) {
			s.carry = append(s.carry[:0], p...)
			return nil
		}
		if err := s.emit(p[:size]); err != nil {
			return err
		}
		p = p[size:]
	}
	return nil
}

func (s *recordStream) emit(b []byte) error {
	var r Record
	var err error
	if s.scan != nil {
		r, err = s.scan.decode(b)
	} else {
		r, _, err = DecodeRecord(b)
	}
	if err != nil {
		return err
	}
	s.records++
	if s.fn == nil {
		return nil
	}
	return s.fn(r)
}
