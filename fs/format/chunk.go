package format

import (
	"encoding/binary"
	"fmt"
)

// ChunkHeader frames one chunk of the log: whole transactions, never split.
// See FORMAT.md for the byte table and what the chain (Prev) protects.
type ChunkHeader struct {
	Flags      uint16 // ChunkFlagWrap, ChunkFlagCommit
	Seq        uint64 // sequence number of the first transaction
	Txns       uint32 // transactions in the payload
	PayloadLen uint32 // bytes after the header, before padding
	Prev       uint32 // CRC of the previous chunk in the log (the chain)
	Nonce      uint32 // random per journal instance: rewritten chunks differ
	CRC        uint32 // CRC32C of header bytes 0..35 and the payload
}

// ChunkSize is the bytes a chunk of the given payload takes on disk: the
// header and payload padded to whole blocks.
func ChunkSize(payloadLen int, blockSize uint32) int {
	bs := int(blockSize)
	return (ChunkHeaderSize + payloadLen + bs - 1) / bs * bs
}

// SealChunk fills the header at the front of chunk, whose bytes after
// ChunkHeaderSize are the payload (padding excluded), computes the CRC and
// returns it. Seq, Txns, Flags, Prev and Nonce come from h.
func SealChunk(chunk []byte, h ChunkHeader) uint32 {
	le := binary.LittleEndian
	le.PutUint32(chunk[0:], ChunkMagic)
	le.PutUint16(chunk[4:], h.Flags)
	le.PutUint16(chunk[6:], 0)
	le.PutUint64(chunk[8:], h.Seq)
	le.PutUint32(chunk[16:], h.Txns)
	le.PutUint32(chunk[20:], uint32(len(chunk)-ChunkHeaderSize))
	le.PutUint32(chunk[24:], h.Prev)
	le.PutUint32(chunk[28:], h.Nonce)
	le.PutUint32(chunk[32:], 0)
	crc := Checksum(chunk[:36])
	crc = UpdateChecksum(crc, chunk[ChunkHeaderSize:])
	le.PutUint32(chunk[36:], crc)
	return crc
}

// ParseChunkHeader decodes the header at the start of b without checking
// the CRC (the payload may not be read yet). It fails, wrapping ErrCorrupt,
// on a bad magic or impossible field: replay reads that as the end of the
// log.
func ParseChunkHeader(b []byte) (ChunkHeader, error) {
	le := binary.LittleEndian
	if len(b) < ChunkHeaderSize {
		return ChunkHeader{}, fmt.Errorf("format: chunk header of %d bytes: %w", len(b), ErrCorrupt)
	}
	if m := le.Uint32(b); m != ChunkMagic {
		return ChunkHeader{}, fmt.Errorf("format: chunk magic %#08x: %w", m, ErrCorrupt)
	}
	h := ChunkHeader{
		Flags:      le.Uint16(b[4:]),
		Seq:        le.Uint64(b[8:]),
		Txns:       le.Uint32(b[16:]),
		PayloadLen: le.Uint32(b[20:]),
		Prev:       le.Uint32(b[24:]),
		Nonce:      le.Uint32(b[28:]),
		CRC:        le.Uint32(b[36:]),
	}
	switch {
	case h.Flags&^(ChunkFlagWrap|ChunkFlagCommit) != 0 || le.Uint16(b[6:]) != 0 || le.Uint32(b[32:]) != 0:
		return ChunkHeader{}, fmt.Errorf("format: chunk flags %#x or reserved bytes set: %w", h.Flags, ErrCorrupt)
	case h.Flags&ChunkFlagWrap != 0 && (h.Txns != 0 || h.PayloadLen != 0):
		return ChunkHeader{}, fmt.Errorf("format: wrap chunk with %d transactions: %w", h.Txns, ErrCorrupt)
	case h.Flags&ChunkFlagWrap == 0 && (h.Txns == 0 || uint64(h.Txns) > uint64(h.PayloadLen)):
		return ChunkHeader{}, fmt.Errorf("format: chunk of %d transactions in %d bytes: %w", h.Txns, h.PayloadLen, ErrCorrupt)
	}
	return h, nil
}

// CheckChunk verifies a whole chunk (header, payload; padding may follow)
// and returns its header and payload.
func CheckChunk(b []byte) (ChunkHeader, []byte, error) {
	h, err := ParseChunkHeader(b)
	if err != nil {
		return h, nil, err
	}
	end := ChunkHeaderSize + int(h.PayloadLen)
	if end > len(b) {
		return h, nil, fmt.Errorf("format: chunk payload of %d bytes, %d present: %w", h.PayloadLen, len(b)-ChunkHeaderSize, ErrCorrupt)
	}
	crc := UpdateChecksum(Checksum(b[:36]), b[ChunkHeaderSize:end])
	if crc != h.CRC {
		return h, nil, fmt.Errorf("format: chunk seq %d checksum %#08x, computed %#08x: %w", h.Seq, h.CRC, crc, ErrCorrupt)
	}
	return h, b[ChunkHeaderSize:end], nil
}

// AppendTxn appends one transaction: its record count, then the records.
// Every record must pass Validate.
func AppendTxn(dst []byte, recs []Record) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(recs)))
	for _, r := range recs {
		dst = AppendRecord(dst, r)
	}
	return dst
}

// DecodeTxns decodes the n transactions of a chunk payload, calling fn for
// each in order with its index. It decodes a transaction whole before
// handing it over, and fails (wrapping ErrCorrupt) if the payload holds
// more or fewer than n or has bytes left over. fn may keep what it gets;
// TxnScanner is the allocation-free form for replay.
func DecodeTxns(payload []byte, n uint32, fn func(i int, recs []Record) error) error {
	return decodeTxns(payload, n, func(count int) []Record { return make([]Record, count) }, DecodeRecord, fn)
}

// decodeTxns is DecodeTxns with the record slice (per transaction) and the
// record decoder supplied.
func decodeTxns(payload []byte, n uint32, slice func(int) []Record, decode func([]byte) (Record, int, error), fn func(int, []Record) error) error {
	for i := range int(n) {
		d := decoder{b: payload}
		count := d.uvarint("transaction record count")
		if d.err == nil && count > uint64(len(d.b)/2) { // a record takes at least 2 bytes
			d.fail(fmt.Sprintf("%d records in %d bytes", count, len(d.b)))
		}
		if d.err != nil {
			return fmt.Errorf("format: transaction %d: %w", i, d.err)
		}
		payload = d.b
		recs := slice(int(count))
		for j := range recs {
			r, used, err := decode(payload)
			if err != nil {
				return fmt.Errorf("format: transaction %d record %d: %w", i, j, err)
			}
			recs[j], payload = r, payload[used:]
		}
		if err := fn(i, recs); err != nil {
			return err
		}
	}
	if len(payload) != 0 {
		return fmt.Errorf("format: %d bytes after %d transactions: %w", len(payload), n, ErrCorrupt)
	}
	return nil
}
