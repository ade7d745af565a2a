package iobuf

import (
	"bytes"
	"fmt"
	"unsafe"

	"github.com/smallfs/smallfs/internal/invariants"
)

// Buf is a buffer lent by a Pool. Use B (resize it within its capacity as
// you like) and give the Buf back with Pool.Put; do not keep B or any slice
// of it after that.
type Buf struct {
	// B has the length asked of Get; its capacity is the class size and its
	// first byte is Align-aligned. Contents are not zeroed.
	B []byte

	mem    []byte // the whole buffer as allocated; what the pool recycles
	pool   *Pool  // owner; a Put to another pool is refused
	class  uint8
	pooled bool // false: from the heap (pooling off, large, or slab bound hit); Put drops it
	out    bool // lent: between Get and Put
}

// alignedMake returns size bytes whose first byte is Align-aligned. The Go
// heap already aligns power-of-two objects of 4 KiB and more and every
// large object this way, but does not promise it, so check and, if needed,
// over-allocate and slice.
func alignedMake(size int) []byte {
	b := make([]byte, size)
	if aligned(b) {
		return b
	}
	b = make([]byte, size+Align-1)
	off := -int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) & (Align - 1)
	return b[off : off+size : off+size]
}

func aligned(b []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))&(Align-1) == 0
}

// resized reports whether B no longer is a prefix of the buffer lent: it
// was re-sliced from an offset, replaced, or grown by append.
func (b *Buf) resized() bool {
	return unsafe.SliceData(b.B) != unsafe.SliceData(b.mem) || cap(b.B) != cap(b.mem)
}

// poisonPage is what an idle pooled buffer is filled with in invariant
// builds, one Align-sized page at a time (every class size is a multiple);
// other bytes on reuse mean someone wrote after Put.
var poisonPage = func() []byte {
	p := make([]byte, Align)
	for i := range p {
		p[i] = 0xdb
	}
	return p
}()

func (b *Buf) poison() {
	if invariants.Enabled {
		for off := 0; off < len(b.mem); off += Align {
			copy(b.mem[off:], poisonPage)
		}
	}
}

func (b *Buf) checkPoison() {
	if !invariants.Enabled {
		return
	}
	for off := 0; off < len(b.mem); off += Align {
		if !bytes.Equal(b.mem[off:off+Align], poisonPage) {
			panic(fmt.Sprintf("iobuf: %s buffer written after Put (page at %d)", className(int(b.class)), off))
		}
	}
}
