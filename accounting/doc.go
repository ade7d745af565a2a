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
// the first two); live figures are differences, taken at snapshot time. Memory: 128 bytes × stripes per Record or Counter (1 KiB
// with 8 stripes).
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
// compare-and-swap. An Alloc or growing Resize samples when its stripe's own
// live bytes pass 1/16 above the last sample there (serially, or while
// goroutines free what they allocate, the peak is then within 1/16 of the
// truth), and when the stripe's allocations cross another 64 KiB (for a
// FixedType, another power of two of objects within 64 KiB, at least one),
// which bounds the error when objects die on other stripes than they were
// born on: less than stripes × max(64 KiB, object size). Every Snapshot
// samples too. The peak is never above the true peak.
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
// Measured on the 2-core shared VM (Intel Xeon, Go 1.26.8) on 2026-11-30,
// medians of five; commands, load and every figure in docs/PERFORMANCE.md,
// section "accounting and iobuf". One uncontended atomic add costs 6.1 ns
// here, which sets the floor. A Type update (two adds) costs 17 ns serially
// against 20 ns for a mutex. With RunParallel on free cores it costs 8.7 ns
// against the mutex's 28 ns, because each goroutine keeps its own cache line
// and the mutex bounces one. A FixedType update costs 14 ns at load 6, and a
// Counter.Inc 9 ns. A peak sample adds about 10 ns serially and 30 ns when
// other cores write the stripes. Updates do not allocate (asserted).
package accounting
