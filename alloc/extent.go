package alloc

import "fmt"

// MaxCapacity is the largest device, in blocks, an Allocator manages: block
// numbers and lengths are packed into 32 bits each so that a free extent
// costs 8 bytes per index (16 TiB at 4 KiB blocks; larger devices use larger
// blocks).
const MaxCapacity = 1 << 32

// Extent is a run of blocks [Off, Off+Len).
type Extent struct{ Off, Len uint64 }

// End is the first block after the extent.
func (e Extent) End() uint64 { return e.Off + e.Len }

// String prints the extent as [off,end).
func (e Extent) String() string { return fmt.Sprintf("[%d,%d)", e.Off, e.End()) }

// overlaps reports whether e and f share a block.
func (e Extent) overlaps(f Extent) bool { return e.Off < f.End() && f.Off < e.End() }

// contains reports whether f lies entirely inside e.
func (e Extent) contains(f Extent) bool { return e.Off <= f.Off && f.End() <= e.End() }

// The two indexes store an extent as one uint64 whose natural order is the
// index order: offset-major in the by-offset index, length-major in the
// by-size index. Lengths are stored minus one (never zero), so both fields
// fit 32 bits for any capacity up to MaxCapacity.

func offKey(e Extent) uint64  { return e.Off<<32 | (e.Len - 1) }
func sizeKey(e Extent) uint64 { return (e.Len-1)<<32 | e.Off }

func fromOffKey(k uint64) Extent  { return Extent{Off: k >> 32, Len: k&(1<<32-1) + 1} }
func fromSizeKey(k uint64) Extent { return Extent{Off: k & (1<<32 - 1), Len: k>>32 + 1} }
