// Package journal is smallfs's metadata redo log: transactions of
// format.Records appended in memory, made durable by group commit, and
// replayed after a crash.
//
// # The model
//
// The log is a fixed region of blocks chosen at mkfs, used circularly. It
// holds chunks: a header (see format.ChunkHeader) and whole transactions,
// padded to the block size. Every chunk names the sequence number of its
// first transaction and carries the checksum of the chunk before it (the
// chain), so replay accepts exactly the chunks that continue the log it
// has read. A chunk that would cross the end of the region is preceded by
// a one-block wrap chunk and placed at the start.
//
//	Append    encode into the open chunk; no I/O; returns the sequence
//	Sync(seq) group commit: seal, Flush, write chunks, Flush
//	Mark      seal; the position and sequence a checkpoint covers up to
//	Release   after the superblock naming Mark's position is durable
//	Fail      stop: later calls fail and write nothing
//	Replay    read from the superblock's position until the chain breaks
//	ReplayScan  Replay for mount: records by pointer, no allocation each
//
// The volume appends while holding its metadata lock, in the order it
// applied the changes, so sequence order is apply order.
//
// # Ordering (data=ordered)
//
// A commit flushes the device before writing chunks: file data the volume
// wrote before appending the records that point at it is durable before
// those records can be. The second flush makes the chunks durable before
// Sync returns.
//
// # One flush per commit (Options.DataSums)
//
// On a volume with format.FeatureDataSums the first flush goes: a commit
// writes its chunks and flushes once. The volume logs, with each
// write-back, the checksums of the blocks it wrote (format.DataSumRec),
// and marks nothing itself: seal flags the first chunk of each commit
// (format.ChunkFlagCommit). A flagged chunk proves that the commit before
// it flushed, since commits run one at a time and end with their flush.
// Replay therefore holds the chunks of the last commit until the log
// ends, reads the blocks their data sums name, and drops that commit from
// its first chunk whose data did not land (TestDataSumsCrash crashes at
// every flush point in every mode). The writer's side of the bargain: a
// block written in a commit is not rewritten while that commit may be the
// last in the log (the volume keeps a commit's frees until the next
// commit is durable).
//
// # Space
//
// Blocks from the tail (the position in the newest durable superblock) to
// the head are in use; Append returns ErrLogFull rather than overwrite
// them, having appended nothing. One block is always kept free so that
// head == tail means empty. A transaction may span many blocks but not more
// than half the region less one (ErrTxnTooLarge), so it fits an empty log
// wherever the head is. The volume watches Usage and checkpoints early.
//
// # Locking
//
// One mutex guards the in-memory state; it is never held across device
// I/O. At most one commit runs at a time (the leader); callers whose
// sequence it covers return when it ends, the others wait on a condition
// variable and one of them leads the next commit. OnDurable runs in the
// leader, in order, without the mutex.
//
// # Errors
//
// A device error during a commit fails the journal for good (ErrFailed
// wrapping the cause): what reached the disk is unknown until a replay,
// and a later commit chained onto a chunk that may not be there would be
// lost with it. Every later Append, Sync and Close fails and writes
// nothing; Fail does the same from outside (the volume, after the device
// failed a checkpoint or a superblock).
// Replay treats bad magic, checksum, sequence or chain as the end of the
// log, but a checksummed chunk that does not decode as corruption
// (format.ErrCorrupt).
//
// # Damage before the end (Options.DataSums)
//
// A chunk damaged in the middle of the log would end replay there and
// silently drop the committed transactions after it. With commit marks
// (format.ChunkFlagCommit, DataSums only) replay can tell: where the
// chain ends it reads the rest of the lap, and a marked chunk with a
// later sequence and the nonce of the chunks just replayed (the same
// journal instance) proves that the chunk where the chain broke had
// been durable, since that instance wrote the marked chunk's commit only
// after the commit before it had flushed. Replay then fails with a
// *DamageError (ErrLogDamaged) naming the transactions lost, or, with
// Options.Salvage, keeps what is before the damage and continues the log
// there. Damage to the last commit has nothing after it and still looks
// like a torn write that ends the log, as in jbd2; so does damage to the
// first chunk replay reads (no nonce to compare) and to a mount's first
// chunk (the chunks before it carry another nonce). Logs without the
// marks (images made without FeatureDataSums) end at any damage as
// before. The cost: a replay after a crash reads the rest of the log
// region past its end, once, sequentially: milliseconds of CPU for a
// region in memory, where without the marks it stops at the end; from a
// disk, the time to read the region (figures in docs/PERFORMANCE.md,
// "Journal and format"). TestReplayLogDamagedMidway and
// TestCrashGivesSyncedPrefix/data-sums show the absence of false alarms.
//
// # Why the chain
//
// Sequence numbers alone cannot tell a stale chunk from a fresh one: a run
// that crashed with chunk A torn and chunk B intact restarts at A's place
// with the same sequence; if it writes A' there and crashes again, B has
// the right sequence for the next place. B carries A's checksum, and A'
// differs from A (each journal instance stamps its chunks with a random
// nonce), so replay stops. TestAbandonedRunIsNotReplayed shows it.
//
// # Costs
//
// Append: one encode into a reused buffer, no allocation once warm and no
// device I/O. Sync: two device flushes per commit, shared by all callers
// waiting; one with DataSums, or when the device is a device.Tracked that
// saw no write since its last flush began (the data barrier has nothing
// to order: metadata-only changes, inline data). A Sync costs what the
// device takes for the commit's write and flushes; concurrent callers
// share a commit (group commit), so syncs per second grow with the
// callers waiting. Memory: the open chunk (up to ChunkSize, 256 KiB by
// default) and up to four spare buffers, accounted as
// journal/chunk-buffer. Figures, with the command that measures them
// (`go test -run XXX -bench . ./fs/journal`), in docs/PERFORMANCE.md,
// "Journal and format".
package journal
