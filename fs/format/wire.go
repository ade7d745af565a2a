package format

import (
	"encoding/binary"
	"fmt"
	"math"
)

// decoder reads varint fields from b, remembering the first failure so a
// record decoder can read every field and check once at the end.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%s: %w", what, ErrCorrupt)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what + ": bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) u32(what string) uint32 {
	v := d.uvarint(what)
	if v > math.MaxUint32 {
		d.fail(what + ": exceeds 32 bits")
		return 0
	}
	return uint32(v)
}

// fixed32 reads a little-endian 32-bit field (checksums, which varints
// would only lengthen).
func (d *decoder) fixed32(what string) uint32 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 4 {
		d.fail(what + ": truncated")
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what + ": bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// span reads a length-prefixed byte string of at most max bytes; the
// result aliases the input.
func (d *decoder) span(what string, max int) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(max) || n > uint64(len(d.b)) {
		d.fail(fmt.Sprintf("%s: length %d (limit %d, %d bytes left)", what, n, max, len(d.b)))
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

// bytes is span copied, so a record does not pin the decode buffer.
func (d *decoder) bytes(what string, max int) []byte {
	s := d.span(what, max)
	if s == nil {
		return nil
	}
	return append(make([]byte, 0, len(s)), s...)
}

func (d *decoder) str(what string, max int) string { return string(d.span(what, max)) }

func appendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}
