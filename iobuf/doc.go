// Package iobuf lends aligned I/O buffers sized by class: sync.Pool per
// class up to 128 KiB, a bounded slab pool from 256 KiB to 1 MiB, the heap
// beyond. Every Get and Put is accounted under layer "iobuf".
//
// # Use
//
//	b := iobuf.Default.Get(n) // len(b.B) == n, cap(b.B) is the class size
//	n, err := f.ReadAt(b.B, off)
//	...
//	iobuf.Default.Put(b) // then forget b.B and every slice of it
//
// The handle (*Buf) rather than a bare []byte is what lets Put find the
// class, refuse foreign, double and resized puts, and recycle without
// allocating. B may be re-sliced to any length within its capacity; only
// its start and capacity must be what Get gave. Contents are not zeroed.
//
// # Model
//
// Size classes are powers of two: 4, 8, 16, 32, 64, 128 KiB on one sync.Pool
// each (it stores *Buf, so Put does not allocate; idle buffers go back to
// the heap at garbage collection), and 256 KiB, 512 KiB, 1 MiB on the slab
// pool, which keeps its idle buffers across collections: per class, four
// lock-free slots (a Put fills an empty one with a compare-and-swap, a Get
// empties one with a swap, so a buffer changes hands whole) and behind them
// a mutex-guarded stack. Requests below 4 KiB get a 4 KiB buffer; above
// 1 MiB, a heap buffer rounded up to 4 KiB that Put drops. Every buffer's
// first byte is aligned to Align (4096) for O_DIRECT: the Go heap gives that
// for these sizes today, and alignedMake checks and over-allocates if not.
//
// The slab pool owns at most Options.SlabLimit bytes (default 64 MiB), lent
// plus idle. A Get past the bound first drops an idle slab of another class
// (counted in "slab.reclaims"); if none, it is served from the heap and
// counted as an overflow, and Put drops that buffer.
//
// Options.Disabled turns pooling off (every Get makes, Put drops) with the
// same checks and figures, so `smallfs bench` can measure the pools' gain.
//
// # Locking
//
// Pool is safe for concurrent use. sync.Pool classes take no lock, nor do
// the slab slots; each slab class's stack has its own mutex, taken only
// when the slots are full (Put) or empty (Get) and held for a push or pop;
// reclaim takes one class lock at a time, never two.
//
// # Errors and misuse
//
// New returns an error wrapping ErrInvalidOptions naming every bad field.
// Get(n < 0) counts a "bad-gets" and serves n = 0. Put of a Buf from another
// Pool or made by hand, a second Put, or a Put whose B no longer starts at
// the buffer or has another capacity is refused: counted in "bad-puts",
// never recycled (so the pool cannot hand one buffer to two owners), and in
// a build with the invariants tag, a panic. In invariant builds, Put also
// fills the buffer with a poison byte that Get checks on reuse, so a write
// after Put panics at the next Get of that buffer. A double Put between
// which the buffer was lent again cannot be told from a correct one.
//
// # Figures
//
// Layer "iobuf" in Options.Registry: per class a type ("4KiB" ... "1MiB",
// "large") whose total is gets, frees are puts, live and bytes are buffers
// lent and their capacity; counters "<class>.misses" (no idle buffer, a new
// one made; hits are gets minus misses) and "<class>.overflows"; type
// "slab" (bytes the slab pool owns); counters "slab.reclaims", "bad-gets",
// "bad-puts". Only the type is updated on the hot path. Two Pools on one
// Registry share these figures.
//
// # Costs
//
// Steady-state Get+Put allocates nothing (asserted with AllocsPerRun, except
// for sync.Pool classes under -race, which drops puts on purpose). Its cost
// is mostly the two accounting adds (one atomic add each) around
// sync.Pool's per-processor slot, or for slab classes two more atomic
// operations on a slot: tens of nanoseconds, the same from one goroutine or
// many, where a fresh 64 KiB buffer from the heap costs its zeroing and a
// share of the garbage collector's work. docs/PERFORMANCE.md, "Accounting
// and iobuf", has the figures (BenchmarkGetPut, BenchmarkChurn) with their
// commands.
package iobuf
