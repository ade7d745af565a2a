// Package alloc manages the free space of a smallfs device, in blocks, and
// places new extents near a hint so that the files of one directory sit
// next to each other.
//
// # The model
//
// An [Allocator] covers blocks [0, capacity). Every block is free, used, or
// pending: freed under a commit epoch that is not durable yet. Free extents
// live in two B-trees (github.com/google/btree) that always hold the same
// set: one ordered by offset, one by (length, offset). Free extents are
// disjoint and never adjacent: [Allocator.Free] merges an extent with its
// neighbours at once. Each index stores an extent as one uint64 (32-bit
// offset and length), which limits a device to [MaxCapacity] blocks.
//
// [New] starts with everything free; [NewWithUsed] starts from the used
// extents a mount finds in its metadata. [Allocator.Alloc] marks an extent
// used and returns it; [Allocator.Reserve] marks a given free extent used
// (replay); [Allocator.Free] makes an extent free at once;
// [Allocator.FreeDeferred] parks it until [Allocator.Commit] declares its
// epoch durable, so that blocks a transaction freed are not overwritten
// before that transaction is on disk. [Allocator.Compact] rebuilds both
// indexes densely while Alloc and Free go on; an Allocator also does so
// by itself (see "Memory and compaction").
//
// # The near search
//
// Alloc(hint, want, min) returns one extent of min to want blocks:
//
//  1. Quick reject: if the largest free extent is shorter than min, the
//     call fails with [ErrNoSpace]. The size index remembers its largest
//     key until it is removed, so this costs a seek only after that.
//  2. Exact: if the free extent holding hint has want blocks from hint on,
//     the extent starts at hint (appends and the files of one directory
//     stay contiguous).
//  3. Window: the offset index is scanned down from hint and up from it,
//     visiting at most K extents per side ([Options].WindowExtents) and
//     never farther than D blocks ([Options].WindowBlocks). Candidates are
//     ranked by shortfall class (full length first), waste class (an exact
//     fit first, then 1+floor(log2(extent/piece)): an extent less than twice
//     the piece is the tightest inexact fit), distance to the hint, offset.
//     A piece is placed in its extent at the end nearest the hint. A side
//     stops early once a full-length exact fit is nearer than its next
//     extent: nothing farther can rank before it. While some extent holds
//     want, only full-length pieces are candidates (step 4 would beat a
//     partial one anyway). At hint 0 nothing lies below: one scan upwards
//     from block 0.
//  4. Fallback by size: unless the window found a full-length candidate,
//     the shortest extent of at least want blocks anywhere, the nearest to
//     the hint among equals; if none holds want, the largest extent (which
//     holds min, or step 1 failed), unless a partial candidate of the
//     window ranks better.
//
// Step 4 makes the search complete: Alloc never fails while a free extent
// of min blocks exists. Steps 2 and 3 make it local. One departure from
// the specification (docs/ALLOCATOR.md): a partial fit at the hint (fewer than want blocks follow
// it) is not taken at once but ranked with the window's candidates, so
// that a full-length extent nearby wins; a caller that wants a partial
// append gets it by passing min below want, when no full fit is near.
//
// # Costs
//
// A call costs at most 2K+2 visits and 6 seeks (descents from a B-tree
// root), whatever the size or fragmentation of free space, then at most 2
// updates of the offset index and 3 of the size index. The offset index
// orders a before b when a ends at or before b's start, so overlapping
// extents compare equal: an extent carved from its front or back, or merged
// with a neighbour, replaces its old key with one ReplaceOrInsert instead of
// a delete and an insert. The window costs two seeks (one at hint 0); the
// fallback one when the shortest extent that holds want lies above the
// hint (it then has the lowest offset of its length, so no extent of its
// length lies nearer), else three; carving adds two or three updates and
// Free three or four descents. A visit of the window keeps the best candidate's packed rank
// and key in registers and stores a better one only. [Stats] reports the
// totals and the maxima per call: deterministic figures that tests bound.
// Free finds both neighbours with one descent (from the end of the extent
// downwards) and makes as many updates as Alloc at most; Commit costs one
// Free per released extent; Stats, Check and AppendFree walk every free
// extent. NewWithUsed sorts the used extents (as packed uint64 keys) and
// inserts each index in its own order. Alloc and Free allocate no heap
// memory in steady state outside a compaction, but when B-tree nodes split
// faster than they merge: the indexes share a list of 4 emptied nodes for
// reuse, which makes that rare. Tests hold a pair on a fixed layout to 0
// allocations and W1's churn to fewer than 1 in 1000 pairs. What a
// compaction costs them is in "Memory and compaction".
//
// # Locking
//
// An Allocator is safe for concurrent use. One sync.Mutex guards both
// indexes, the pending extents and the counters; every method holds it for
// its whole duration. While holding it, the Allocator calls only google/btree
// and the lock-free updates of package accounting, so its mutex is a leaf:
// callers may hold their own locks around any method. Validation of
// arguments happens before the lock is taken.
//
// A compaction holds the mutex to clone the indexes, for each hold of its
// drain (64 mutations) and to swap, and takes no other lock, so the mutex
// stays a leaf. An automatic compaction runs on its own goroutine, started
// by the Alloc, Free, Commit or Reserve that triggers it once that call has
// released the mutex; Close stops it and waits for it. Compact runs on
// its caller's goroutine, or waits for the compaction that is running.
//
// # Errors
//
// [ErrNoSpace] matches syscall.ENOSPC under errors.Is. Misuse returns a
// distinct sentinel, wrapped with the offending values, and changes
// nothing: [ErrZeroLength], [ErrMinAboveWant], [ErrOutOfRange],
// [ErrDoubleFree] (part of the extent is free or pending), [ErrNotFree]
// (Reserve of space that is not free), [ErrOverlap] (NewWithUsed),
// [ErrCapacity], [ErrOptions]; [ErrClosed] (Compact after or during
// Close). A hint past the end of the device means the
// last block. Internal inconsistencies are bugs: [Allocator.Check] reports
// them, and builds with the invariants tag panic on them.
//
// # Memory and compaction
//
// Each free extent costs 8 bytes of key in each index plus its share of the
// B-tree nodes (degree 32: 31 to 63 keys in a 64-key array, and a 64-byte
// node). At node fill f an index costs about 8/f bytes of key array per
// extent plus a node per f(2d-1) keys: a node's array never shrinks (append
// grows it to 64 keys, google/btree keeps it). Churn (splits and merges at
// random places) settles nodes near 2/3 full, whatever the degree: about
// 30 bytes per extent for both indexes.
//
// A build (NewWithUsed, a compaction) inserts 3 keys in 5 in order, which
// leaves every node 31 keys, then the others: nodes 82 % full, about 23
// bytes per extent. Fuller is worse: a build that fills nodes to the brim
// leaves every node a key or two from a split, so the first churn splits
// them all and costs more than the 82 % build keeps after half a turnover
// (docs/PERFORMANCE.md, "Allocator", has the figures).
//
// A compaction rebuilds both indexes without holding the mutex for the
// rebuild:
//
//  1. Clone, mutex held: both trees are cloned (google/btree's copy on
//     write, O(1)), and from then on every change of free space records
//     itself in the compaction's log (a carve or a free, 16 bytes).
//  2. Build, mutex not held: new trees are filled from the clones.
//  3. Catch up, mutex not held: rounds replay onto the new trees the
//     mutations recorded during the build, then during the previous
//     round, as long as each round shrinks the log by a quarter.
//  4. Drain, in holds of 64 mutations: callers that outpace the rounds
//     (replaying a mutation costs about as much as making it) get the rest
//     replayed under the mutex, and each Alloc, Free, Commit or Reserve
//     replays two mutations besides recording its own, so the log shrinks
//     however busy they are.
//  5. Swap, mutex held: the last mutations are replayed and the new trees
//     replace the old.
//
// The replay is exact: each recorded mutation was valid on a set equal to
// the one the new trees hold when they replay it. A rebuild under the
// mutex would stall every caller for the whole rebuild (a large part of a
// second at 10^6 extents); a copy taken in slices under the mutex could
// not tell which later mutations it had seen; rounds alone did not
// converge under a saturating load, hence the drain.
//
// An Allocator starts a compaction by itself once free space holds at least
// [Options].CompactExtents extents (default 4096) and the size index has
// seen removals of half as many since its last build: half the population
// has turned over, which needs no guess at node fill. Removals count from
// the swap, so compactions never run back to back. The mutations
// replayed at a swap churn the new trees too, so a compaction slowed down
// by a loaded machine swaps in nodes less than 82 % full. Under the
// benchmarks' saturating loops compactions are bound by their own length,
// not by the trigger, so neither an earlier trigger nor counting inserts
// as turnover helps much (docs/PERFORMANCE.md, "Allocator"). Below a few
// thousand extents a compaction does not pay: fixed costs (a goroutine,
// the scheduler waking a processor) dominate. An Allocator's fixed memory
// is a few hundred bytes with one free extent, plus the up to 4 emptied
// nodes its indexes share (about a kilobyte each with their arrays).
//
// What a compaction costs the callers while it runs: the first change of a
// node shared with the clones copies it and its path to the root, and the
// log grows, so each change allocates a little; a saturating load of
// changes runs slower for the length of the compaction (the copies, the
// drain, the goroutine on a core of its own). It holds the old trees, the
// copies, the new trees and the log at once: up to about 2.5 times the
// indexes.
//
// The Allocator reports to package accounting ([Options].Registry, layer
// "alloc"): type "free-extent" counts free and pending extents at an
// estimated 24 bytes each (google/btree does not report its nodes), brought
// up to date whenever the count has drifted by 64, and by Stats; type
// "compaction" holds the new trees of a running compaction at the same
// estimate, and drops to zero when they replace the old ones (whose
// extents are counted already) or the compaction stops; counter "enospc"
// counts failed Alloc calls. Close withdraws everything at the end of a
// mount. A pending extent costs a key in a third B-tree plus 16 bytes in
// its epoch's list.
//
// # Fragmentation
//
// [Stats].Score is Ceph's fragmentation score ([FragmentationScore]): 0
// when free space is one extent, 1 when every free extent is one block.
// [Stats].Histogram counts free extents per power of two of length.
//
// # Figures
//
// `go test ./alloc -run '^$' -bench .` runs the workloads W1-W5 of
// docs/ALLOCATOR.md (bench_test.go, harness_test.go) on this allocator and
// three baselines behind one interface (policy_*_test.go): best fit by
// size, unbounded nearest fit, and a Ceph-Avl-like capped first fit.
// docs/PERFORMANCE.md, "Allocator", has the figures with their commands,
// dates and commits, and which aims of docs/ALLOCATOR.md they meet.
package alloc
