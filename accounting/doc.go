// Package accounting counts, per layer of smallfs and per type of object,
// how many objects are alive, how many bytes they hold, how many were ever
// made, and the peak, without a lock on any update. It imports only the
// standard library.
//
// # Model
//
// A Registry (the process uses Default) holds Layers by name ("fuse", "fs",
// "journal", "alloc", "iobuf"); a Layer holds Records (object types) and
// Counters (events) by name. Look a Record up once and keep the pointer:
//
//	inodes := accounting.Default.Layer("fs").Type("inode")
//	inodes.Alloc(int64(size)) // one object of size bytes came to life
//	inodes.Resize(+64)        // it grew
//	inodes.Free(int64(size) + 64)
//
// A type whose objects all have one size (a struct, a buffer class) is
// made with Layer.FixedType(name, size): its bytes follow from its count, so
// an update is one atomic add instead of two.
//
// Registry.Snapshot copies every figure, sorted by layer then name. The
// Snapshot marshals to JSON (the structured form for the command line and
// metrics) and WriteText prints the statedump form, one section per layer
// and one line per type or counter:
//
//	[iobuf]
//	type 4KiB size=4096 live=2 bytes=8192 total=3 frees=1 peak=12288
//	counter 4KiB.misses 2
//
// # Layout
//
// Every Record and Counter is split in stripes, a power of two of them: four
// per processor (GOMAXPROCS when the registry is made), at least 8, at most
// 64. A stripe is 128 bytes apart from the next, since Intel parts fetch
// cache lines in pairs. A goroutine updates the stripe picked by a hash of
// an address on its own stack, so it keeps hitting one cache line that no
// other running goroutine writes, and the update is one or two uncontended
// atomic adds. A Record's stripe holds four totals that only grow
// (allocations, frees, bytes allocated, bytes freed; a FixedType uses only
// the first two) and the two marks that say when the peak is due for a
// sample; live figures are differences, taken at snapshot time. Memory:
// 128 bytes × stripes per Record or Counter (1 KiB with 8 stripes).
//
// A Type update is two adds because its count and its bytes are two
// totals that only grow: one 64-bit word cannot hold both without one of
// them wrapping, and moving a packed word into wide totals before it wraps
// needs a sequence lock that readers and peak samples would wait on. Hot
// paths whose objects have one size use a FixedType, one add.
//
// # Locking
//
// Updates take no lock. Name lookups and Snapshot take read locks on the
// name maps (Registry, then one Layer at a time; never two Layers at once);
// creating a name takes the write lock once. A Snapshot reads each record on
// its own while updates go on, so a figure may or may not include an update
// that raced with it; once updates stop, every figure is exact.
//
// # Peak
//
// The peak of live bytes is sampled lock-free: a sample sums the stripes,
// reading all allocation totals before any free total, so it is never above
// the bytes really live at one moment, and raises the peak with a
// compare-and-swap. A sample is due, after an Alloc or a growing Resize,
// in two cases, both read from the stripe's own cache line with two plain
// loads, so the common path pays nothing more:
//
//   - the stripe's own live figure passes a high mark set 1/16 above it at
//     the last sample. Serially, or while goroutines free what they
//     allocate, the peak is then within 1/16 of the truth;
//   - the stripe's allocations pass a due mark set, at the last sample,
//     max(64 KiB, 16 objects) further on (for a FixedType, a power of two
//     of objects within 64 KiB, at least 16). This bounds the error when
//     objects die on other stripes than they were born on: less than
//     stripes × max(64 KiB, 16 × the largest object).
//
// Every Snapshot samples too. The peak is never above the true peak. The
// floor of 16 objects is what keeps big objects cheap: with 64 KiB and
// larger objects a sample was due on every Alloc, and a sample (16 loads
// over all stripes and two stores) cost more than the update itself.
//
// # Errors and misuse
//
// Updates return nothing and never panic. A negative size, a size other than
// a FixedType's own, a Resize of a FixedType, a negative Counter.Add, or
// more frees than allocations (objects or bytes) is misuse; a call with a
// bad argument changes nothing but the anomaly count.
// The hot path cannot see other stripes, so an excess of frees is found at
// snapshot time: frees are read before allocations, so in a correct program
// the allocations read are at least the frees read, and any excess is proof.
// It is reported as Anomalies and AnomalyBytes (the largest excess ever
// seen, so later allocations do not hide it), live figures are shown as
// zero rather than negative, and nothing else changes. WriteText returns the
// writer's error, wrapped.
//
// # Costs
//
// The floor is one atomic add, a LOCK-prefixed instruction. A FixedType
// update and Counter.Inc are that one add; a Type update is two (see
// "Layout" for why not one). Under RunParallel each goroutine keeps to
// its own stripe's cache line, where a mutex would bounce one line between
// the cores. A peak sample (all stripes read, two stores) is paid at most
// once per max(64 KiB, 16 objects) a stripe allocates, so large objects
// cost no more per update than small ones. Updates do not allocate
// (asserted). A non-atomic per-processor update would be cheaper, but
// would need runtime internals and would race under the race detector.
// docs/PERFORMANCE.md, "Accounting and iobuf", has the figures
// (BenchmarkFloor, BenchmarkUpdate) with their commands.
package accounting
