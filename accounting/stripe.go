package accounting

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// stride is the distance between two stripes. Intel parts fetch cache lines
// in adjacent pairs, so 64 bytes of padding still lets two cores fight over
// a pair; 128 keeps neighbouring stripes apart.
const stride = 128

// stripe holds one share of a Record. The four totals only ever grow, which
// is what lets a snapshot prove misuse (see Record.stat) and lets the
// differences wrap safely past 2^64.
type stripe struct {
	allocs     atomic.Uint64
	frees      atomic.Uint64
	allocBytes atomic.Uint64
	freeBytes  atomic.Uint64
	high       atomic.Int64  // the stripe's own live figure that makes the next peak sample due
	due        atomic.Uint64 // the stripe's allocation total that makes the next peak sample due
	_          [stride - 48]byte
}

// cell is one share of a Counter.
type cell struct {
	n atomic.Uint64
	_ [stride - 8]byte
}

// stripeCount picks how many stripes each record gets: a power of two, four
// per processor so that the goroutines running at one moment rarely share
// one, at least 8 and at most 64.
func stripeCount() int {
	n := 1 << bits.Len(uint(4*runtime.GOMAXPROCS(0)-1))
	return min(max(n, 8), 64)
}

// stripeOf returns the stripe a goroutine updates: a Fibonacci hash of an
// address on its stack. A goroutine keeps its stripe between calls (its
// stack stays put), so the cache line stays in one core's cache; distinct
// goroutines spread over the stripes. The hash needs no atomic, no lock and
// no runtime hook. Which stripe is chosen never affects correctness, only
// contention: a moved stack or a collision just shares a line.
func stripeOf(shift uint) uint {
	var marker byte
	return uint((uint64(uintptr(unsafe.Pointer(&marker))>>11) * 0x9E3779B97F4A7C15) >> (shift & 63))
}
