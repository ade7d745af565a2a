package iobuf

import (
	"math/bits"
	"strconv"
)

// Align is the alignment of every buffer's first byte, so buffers can be
// used for O_DIRECT I/O.
const Align = 4096

// Size classes are powers of two from 4 KiB. Classes up to 128 KiB are
// pooled on sync.Pool, 256 KiB to 1 MiB on the slab pool; larger requests
// are one class served straight from the heap.
const (
	minShift   = 12 // 4 KiB, the smallest class
	numPooled  = 6  // 4, 8, 16, 32, 64, 128 KiB
	numSlab    = 3  // 256, 512 KiB, 1 MiB
	large      = numPooled + numSlab
	numClasses = large + 1

	// MaxPooled is the largest request served by sync.Pool classes.
	MaxPooled = 1 << (minShift + numPooled - 1)
	// MaxSlab is the largest request served by the slab pool.
	MaxSlab = 1 << (minShift + large - 1)
)

// classOf returns the class serving a request of n bytes.
func classOf(n int) int {
	if n <= 1<<minShift {
		return 0
	}
	return min(bits.Len(uint(n-1))-minShift, large)
}

// classSize is the capacity of class c's buffers, or, for the large class,
// n rounded up to Align.
func classSize(c, n int) int {
	if c == large {
		return (n + Align - 1) &^ (Align - 1)
	}
	return 1 << (c + minShift)
}

// className names class c in the accounting figures: "4KiB" ... "1MiB",
// "large".
func className(c int) string {
	switch s := c + minShift; {
	case c == large:
		return "large"
	case s >= 20:
		return strconv.Itoa(1<<(s-20)) + "MiB"
	default:
		return strconv.Itoa(1<<(s-10)) + "KiB"
	}
}
