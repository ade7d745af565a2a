// Package volume is the smallfs volume core: a directory tree whose metadata
// lives entirely in memory, kept crash-safe on one device by a redo log of
// state-setting records (fs/journal) and checkpoints (fs/format). It has no
// FUSE in it: the adapter in fs/fuse, fsck, the crash and model tests all
// drive a *Volume in-process. api.go is the contract with those users.
//
// # A tour of the source
//
//	api.go         the contract: types crossing the boundary, method list
//	doc.go         this manual
//	errors.go      sentinels, each unwrapping to a syscall.Errno
//	options.go     Options, defaults and validation
//	mkfs.go        Mkfs: layout, first checkpoint, superblocks
//	open.go        Open (checkpoint, replay, orphans, free space), Close
//	progress.go    Options.Progress: how far Open has got
//	checkpoint.go  writing checkpoints, superblock slots and their blocks
//	snapshot.go    the periodic checkpoint's copy-on-write snapshot
//	volume.go      the Volume, commit (append + apply)
//	spinlock.go    the metadata lock: spins before it sleeps
//	apply.go       the one place persistent state changes (live and replay)
//	inode.go       inodes and the chunked inode table
//	dir.go         directory index: cookie-ordered entries + name hash index
//	ns.go          lookup, forget, getattr, mknod, mkdir, symlink, link, unlink
//	tmpfile.go     Tmpfile: O_TMPFILE
//	rename.go      rename, NOREPLACE, EXCHANGE, WHITEOUT, the loop check
//	setattr.go     setattr (size through the data path)
//	atime.go       Accessed: access times under relatime, strictatime, noatime
//	killpriv.go    clearing set-user-ID, set-group-ID and capabilities
//	xattr.go       extended attributes
//	readdir.go     ReadDir, ReadDirPlus
//	handle.go      Handle: open, create, read, write, flush, fsync, release
//	data.go        per-inode dirty chunks, reads of committed data
//	writeback.go   delayed copy-on-write allocation and write-back
//	writesums.go   the checksums a write-back logs with what it wrote
//	blocksums.go   the checksum of every block of file data, by device block
//	verify.go      verified reads of file data, ChecksumError
//	pathof.go      PathOf: a file's path, for messages
//	dirty.go       the dirty queue, background write-back, throttling
//	extents.go     extent map surgery
//	fallocate.go   fallocate, SEEK_DATA / SEEK_HOLE
//	punch.go       hole punching (fallocate PUNCH_HOLE, ZERO_RANGE)
//	space.go       the allocator, reservations, deferred frees, checkpoint headroom
//	readpin.go     blocks a read plan may still read: freed, not reused until Done
//	sync.go        Sync, Fsync, the periodic commit
//	failed.go      a device error writing metadata stops the volume
//	statfs.go      StatFS
//	metacheck.go   metaCheck: the invariants Open, every checkpoint and Check verify
//	damaged.go     metadata that fails them: refused, or opened damaged (OpenDamaged)
//	guard.go       the checkpoint guard
//	check.go       Check
//	beyond.go      FilesBeyond: what an image cut short lost
//	repair.go      Repair: what fsck --repair fixes, and /lost+found
//	repair_data.go Repair of damaged files: the damaged part only
//	acct.go        memory accounting (layer "fs")
//
// # The model
//
// An inode is a slot in a chunked table indexed by inode number (inode.go);
// what most inodes lack — a directory index, a symlink target, xattrs,
// inline data, extents, open-file state — hangs off one optional pointer,
// dropped again when a file is closed with nothing in it.
//
// Every change is a transaction of records from fs/format (an inode's whole
// attributes, one directory entry set or removed, a whole extent map, ...).
// An operation validates under the metadata lock, builds its records,
// appends them to the journal (no I/O) and applies them with apply, the
// function recovery uses on the records it reads back. So the state a crash
// recovers is, by construction, a state the live volume had.
//
// # Names, cookies and "." / ".."
//
// Names are 1 to 255 bytes without '/' or NUL; "." and ".." are never stored.
// ReadDir lists stored entries only: the caller (the FUSE adapter) adds "."
// and ".." itself and may use cookies 1 and 2 for them; stored entries get
// cookies from 3 up, increasing per directory, and keep them until removed
// (RenameExchange keeps both names' cookies). A listing resumed from a cookie
// never returns an entry twice nor skips one present throughout; one
// bounded by the DirEnd of its start returns no entry added after it, so
// it ends even under constant churn. Lookup
// accepts "." and ".." (the NFS-style lookup of a parent). After a remount
// a directory's next cookie restarts above its highest live one.
//
// # Inode lifetime
//
// An inode lives while it has a link, an open Handle, or (with
// Options.TrackLookups) a kernel reference counted by entry-returning calls
// (Lookup, Create, Mknod, Mkdir, Symlink, Link, accepted ReadDirPlus
// entries) and dropped by Forget. When the last goes, one InodeFree record
// drops it and its blocks. An unlinked inode still open is kept with nlink 0;
// Close frees it (and every other inode without links: an unmount does
// not deliver the FORGETs it queues), and after a crash, Open does. Tmpfile (O_TMPFILE) makes such an inode
// from the start, open and placed in its directory's region; Link may name
// it (and only it, among inodes without links) unless it was opened with
// O_EXCL, as linkat(2); the in-memory inodeLinkable flag says which.
// Inode numbers are reused with a new generation from a volume-wide
// counter; each checkpoint stores it, and Open restarts it above that and
// above every generation it loads or replays, so an (ino, gen) pair never
// comes back, remounts included (what an NFS export needs).
//
// # Data path
//
// Dirty data lives per inode (fileData, shared by all handles) in chunks of
// 64 KiB from iobuf, each holding the chunk's whole current content (loaded
// from the device when first touched). Size and mtime run ahead of the
// committed inode until write-back. Blocks are reserved at write time, so
// ENOSPC is reported by WriteAt and never by write-back; a write that finds
// space only among frees waiting for a commit commits and retries. A write
// that meets the end of the space takes the blocks left and is short: it
// returns the bytes written with ENOSPC, and the size covers just those.
// Write-back places exactly the blocks reserved: a dirty chunk that ends
// short (where the file ended when it was loaded) leaves a hole after it.
//
// Write-back (Flush or Release of the last writer, Fsync, SetAttr, the
// periodic commit, DirtyThreshold dirty bytes in the file, or the
// background write-back of "# Dirty memory") allocates each run of
// dirty chunks as few extents as possible near the directory's cursor (the
// end of the last extent placed for that directory; a directory that has
// placed nothing starts at a home hashed from its inode number), writes the
// data, and only then commits the new extent map: copy-on-write, committed
// blocks are never overwritten. Replaced blocks are freed after the commit
// that dropped them is durable (alloc.FreeDeferred + journal OnDurable), so
// a crash never shows a torn small file or another file's old data.
//
// A read plan (Handle.ReadPlan) of committed data in one extent is a
// device range its caller reads after the data lock is gone: the FUSE
// adapter splices it, or reads it into the reply, once the handler has
// returned. Its blocks may be freed meanwhile (the file rewritten,
// truncated, punched or deleted), and must not hold another file's bytes
// by then: the plan pins them until its Done. Frees made durable wait
// for every read pinned before their commit (readpin.go: an epoch and
// two reader counts striped by inode, an atomic add at the pin and one
// at Done, nothing allocated). Commits, checkpoints and write-backs never
// wait for reads: the frees behind a pinned read just stay unallocatable
// until it is done, and so do those of every commit after it, so a plan
// must be done soon (PinnedReads counts those that are not; Close logs
// them). A write short of space waits up to a second for the reads
// holding back the frees it needs (settleFrees), then gets ENOSPC.
// ReadAt and every other read of file data read the device with the
// data lock held, and need no pin. Both rest on one rule: every change
// that drops extents from a file's map (write-back, truncate, punch)
// holds that file's data lock for writing from before it appends its
// transaction, and an inode free comes after the last open's Release,
// which takes it too; a repair that ever drops the extents of a file in
// use must do the same.
//
// Device bytes past the end of a file in its last block are stale; reads
// stop at the size, and any size increase first makes that block's chunk
// dirty, so the stale bytes are rewritten as zeros (not when the block is
// a hole, or the file inline: nothing is stale there).
//
// # Dirty memory
//
// Every file with something to write back waits in one FIFO queue, by the
// time it first became dirty. Options.DirtyLimit (default 64 MiB) bounds
// the memory of all dirty buffers (DirtyBytes, whole buffers, so a 100-byte
// file counts its 4 KiB buffer): past DirtyBackground (default half of it)
// a write kicks the background write-back, one goroutine that writes back
// the oldest files until the volume is under that mark again, each with
// only its data lock held and the metadata lock taken to commit, as at
// Flush; a write finding the volume at DirtyLimit waits first (throttle,
// with no lock held, so the pass can take any file's data lock) until the
// volume is under the limit or a pass that started after it has ended
// (a pass stops at a failed write-back and leaves it for the periodic
// commit to retry and report): writers are paced, never stuck. These are
// the kernel's dirty_bytes and dirty_background_bytes. So a mount that
// gets no FLUSH or RELEASE keeps at most DirtyLimit, plus one write per
// writer, in memory. ENOSPC is still reported by the write: blocks are
// reserved at write time whoever writes them back.
//
// DirtyExpire (default 1 s; off without a periodic commit) writes back a
// file dirty for that long even under the mark, so small files reach the
// device soon after they are written without a close. It does not make
// them durable sooner: that is fsync's and the periodic commit's job. Its
// cost is a file written back while it is still being written, which
// then reads its last chunk back: a file written continuously costs one
// such write-back per period, a fraction of a millisecond each, so at 1 s
// a negligible share of a core; a file written once and left open costs
// the write-back its close would have. Figures (BenchmarkDirtyExpire) in
// docs/PERFORMANCE.md, "The volume core".
//
// # Data checksums
//
// On a volume made with format.FeatureBlockSums (mkfs's default) every
// block of file data has a CRC32C, computed at write-back from the bytes
// already in memory and logged (format.BlockSumsRec) in the transaction
// that places the block, kept in checkpoints and held in memory in a
// table keyed by device block (blocksums.go: 4 bytes a block in pages
// that exist only where blocks are in use). Every read of file data from
// the device checks each block it reads (readData, which reads whole
// blocks, through a pooled buffer for a range that does not cover them):
// a mismatch fails that read alone with a *ChecksumError (ErrChecksum,
// EIO), logged once with the file's path and counted; the file's other
// blocks and other files read on. Blocks without a checksum (an image
// part-way through being given them) read unverified and are counted.
// The volume cannot verify a device range someone else reads after it
// answers, so on such a volume ReadPlan never offers one: reads are
// copied, not spliced, into the buffer the caller passes (the FUSE
// adapter's reply buffer), so they need no buffer of their own. Without the feature nothing is checked, as before.
//
// # Inline data
//
// Files of at most Options.InlineThreshold bytes (default 128) live in an
// InlineRec and in memory: no block, no device write at creation, no device
// read. A file in blocks takes the same heap whatever its size; an inline
// one takes its size on top of that, and reads faster even than a block
// file whose blocks the host caches. Inline data is paid in RAM for the
// life of the mount, so the default stops where it costs about a name's
// worth of heap over a block file (and saves a 4 KiB block and a device
// write per file). Figures (BenchmarkInline) in docs/PERFORMANCE.md, "The
// volume core".
//
// # Durability
//
// Fsync(file) writes the file back and syncs the journal: everything
// appended so far (its data, size and names included) is durable, and
// concurrent fsyncs share the journal's group commit. The periodic commit
// (Options.CommitInterval, default 5 s) writes back every dirty file and
// syncs, bounding what a crash without fsync loses; it also checkpoints
// once the log is half full, and at its first run after Open (both slots
// then name the checkpoint Open loaded: a second one gives a damaged
// newest checkpoint something to fall back to), and a commit that finds the log half full
// between two ticks asks for that at once (a full log checkpoints inline,
// under the lock, and retries).
// Close writes back, checkpoints, and marks the superblock clean: the next
// Open replays nothing, unless the other slot does not decode (a lost
// newer superblock may have been followed by commits). Open clears the
// clean flag before appending, in both slots, naming its journal.
//
// On a volume made with format.FeatureDataSums (mkfs's default) a commit costs one device flush, not two: each write-back
// also logs a DataSumRec (the CRC32C of every extent it wrote, computed as
// the bytes go out), and replay drops a last commit whose data did not
// land (journal doc, "One flush per commit"). The volume's part is
// onDurable: blocks a commit freed wait for the next commit to be durable
// before they are reused, so no block named by the last commit's sums is
// rewritten while that commit may still be the last. settleFrees commits
// a no-op transaction when a write needs those blocks at once. Replay
// after a crash reads the last commit's data back, so past maxUnsynced
// (256 MiB) written back since the last commit the committer commits
// early.
// rename over an existing name is one transaction: old xor new after a
// crash.
//
// Checkpoints have space kept for them: the headroom, twice the newest
// checkpoint plus the log written since (records set state, so the next
// checkpoint is at most that; twice, because it is written while the two
// checkpoints the slots name are still allocated), plus 8 blocks. Writes,
// new names and xattrs that would eat into it get ENOSPC (after one
// checkpoint that settles the log's share), deletes never do, and StatFS
// leaves it out of BlocksAvail. So Close writes its checkpoint on a full
// volume and the volume reopens clean. A rename to a longer name is
// checked for the bytes it adds (a run of them on a full volume once ran
// into a failed inline checkpoint); a rename that replaces a name, or
// keeps its length, is not. StatFS counts blocks a delete freed as free at
// once, though they are allocatable only after the delete's commit: a
// write or a new name that needs them commits (or checkpoints) first, as
// ext4 forces a journal commit before it reports ENOSPC.
//
// A checkpoint is the stream of records rebuilding the committed metadata,
// written into freshly allocated blocks; the superblock flip makes it
// current and lets the journal reuse the log before it. The checkpoints
// named by both superblock slots stay allocated (a torn write of one slot
// falls back to the other); a checkpoint named by neither is freed. A
// damaged newest checkpoint falls back the same way: Open loads the older
// one and replays the log from its position, and keeps that only if the
// replay passes the damaged one's log position (openOlder,
// Recovery.Damaged); else it refuses, naming both and the transactions
// lost (ErrCheckpointLoss), unless Options.Salvage accepts the loss.
// With both damaged nothing is left to load (ErrNoCheckpoint).
//
// # Locking
//
// Lock order, outermost first:
//
//  1. a file's data lock (fileData.mu), taken by reads (shared), writes,
//     write-back and truncate of that file;
//  2. Volume.wbGate, shared by every write-back from its first allocation
//     to its commit and held alone by Check (which takes no data lock),
//     so Check never counts blocks allocated but not yet referenced;
//  3. Volume.mu, the metadata RWMutex: readers for lookups, getattr,
//     readdir, xattr reads; the writer for every change;
//  4. Volume.ckptMu (checkpoints and superblock writes), then the leaf
//     locks: space.mu, Volume.dirtyMu, Volume.wb.mu (the write-back's
//     pacing), the allocator's and the journal's.
//
// File data is written with only the data lock held; the metadata lock is
// then taken briefly to append and apply the record, and never held across
// a journal Sync.
//
// A read plan's Done may be called with any lock held or none: it takes
// only space.mu, a leaf, and only when a batch of frees waits for it.
//
// Volume.mu spins for up to 20 µs before it sleeps, when Go code runs on
// more than one CPU (spinlock.go): its holds are a few microseconds, and
// a handler of FUSE over io_uring, locked to its CPU's thread, pays a
// thread wake-up on another CPU for every sleep. Through the rings the
// spin is what made the deleting steps of `smallfs bench` as fast as on
// /dev/fuse or faster, where without it they were slower (figures in
// docs/PERFORMANCE.md, "The metadata lock").
//
// # Checkpoints without a stall
//
// The periodic checkpoint (checkpointConcurrent, snapshot.go) records the
// metadata as it was when it started, without holding the lock for the
// whole encoding: a copy-on-write snapshot. It notes where the log stands
// (replay will start there), then encodes inodes and directory entries in
// number order, in slices of 4,096 slots or records, each under the read
// lock. Changes go on between slices; apply, the only code that changes
// persistent state, first saves what a record is about to change if the
// encoding has not passed it yet (an inode's record, data map, target and
// xattrs; a directory's live entries), and the encoding reads that copy
// instead. So a change costs a copy only when it lands ahead of the
// encoding, once per inode or directory. The records collect in memory
// (format.RecordBuffer, 128 KiB chunks lent by Options.Pool and given
// back once written, about 50 bytes per file); the
// checkpoint is then written and the superblock made to name it holding
// ckptMu only. Close and a full log checkpoint under the write lock
// instead (checkpoint), and cancel a snapshot in progress: their log
// start is newer, and the log behind it may be reused. Check takes ckptMu
// too, so it never sees a checkpoint's blocks before it is current; the
// snapshot allocates none until its encoding is done.
//
// So changes go on during a periodic checkpoint and wait milliseconds at
// most, where a checkpoint under the write lock holds them for its whole
// length, hundreds of milliseconds at 10^6 files. The encoding allocates
// only its buffer, in chunks: growth by doubling held single slices for
// tens of milliseconds while it copied. Figures (BenchmarkCheckpointStall,
// BenchmarkCheckpointEncode) in docs/PERFORMANCE.md, "The volume core" and
// "The load-time check and the checkpoint guard".
//
// # Callbacks
//
// ReadDir and ReadDirPlus callbacks run under the read lock and must not
// call the volume (a writer queued on the RWMutex would deadlock them).
// Lookup counts are atomics, bumped under the read lock.
//
// # Errors
//
// Every error wraps one sentinel of errors.go, each of which unwraps to its
// syscall.Errno: errors.Is(err, syscall.ENOENT) and errors.As(err, &errno)
// work, and the FUSE edge converts once. Operation errors are *fs.PathError
// with the operation and the name. ErrCorrupt (EIO) marks inconsistent
// on-disk metadata; Open wraps the format package's errors as well, so both
// errors.Is(err, ErrCorrupt) and errors.Is(err, format.ErrNoValidSuperblock)
// hold. A failed call changes nothing. Errors of the device itself keep
// its errno (EIO, ENOSPC) under the operation's *fs.PathError; see
// "# Device errors" for what each costs.
//
// # Device errors
//
// What the device fails reaches the call that needed it, and the volume
// never says something is durable that it could not write:
//
//   - A read of file data that fails answers that read with the device's
//     error, and nothing else: the next read asks the device again, other
//     files read, changes go on. A write that must read a committed block
//     first (a partial overwrite) fails the same way, changing nothing.
//   - A write-back whose data write fails answers whoever asked for it
//     (Fsync, Flush at close(2) under flush_on_close, SetAttr) and keeps
//     the data dirty, its blocks promised: the background write-back and
//     the periodic commit retry it, and commit the other files' changes
//     meanwhile (Sync reports the error after committing the rest). At
//     Release the error goes nowhere
//     (over FUSE the kernel sends RELEASE after close(2) has returned), so
//     the volume also keeps the Release's open of the inode
//     (fileData.pinned): an fsync meanwhile, through any open, reports the
//     error, and the first write-back that succeeds lets the inode go. So
//     an fsync after a failed write-back succeeds only by writing the data
//     again. (Linux marks the pages clean after a failed write-back and
//     reports the error once per open file, errseq: a second fsync
//     succeeds without the data.) Data is dropped only where no retry can
//     help: a map refused for fragmentation (ErrNoSpace) at the last
//     close, which marks the inode (inodeLost) so that every fsync of it
//     fails with ErrLost until the file is emptied or freed; and a pinned
//     file whose last name is gone once no other open can read it (the
//     next commit drops it instead of retrying).
//   - A failed write or flush of metadata (a log commit, a checkpoint, a
//     superblock) stops the volume for good (failed.go), as ext4's
//     errors=remount-ro: the on-disk log may end in a torn commit, and a
//     later commit chained onto it would be lost at replay with the gap.
//     So does a transaction already logged that then does not apply (a
//     bug: operations validate first), whose effect the memory lacks.
//     The call that met the failure gets the device's error; from then on
//     every change gets ErrReadOnly (EROFS: writes, opens for writing,
//     truncates, new names, removals, attributes, xattrs) and Fsync, Sync
//     and write-back ErrNotDurable (EIO: nothing can be made durable, not
//     even data made durable before, and a program must not take a
//     failed fsync for one that does not apply, as EROFS or EINVAL from
//     fsync(2) would say). Reads, lookups, listings and xattr reads go on;
//     access times are not recorded. Nothing more reaches the device:
//     the journal is failed with the volume (journal.Fail), the committer
//     and the background write-back do nothing, and Close writes neither
//     checkpoint nor clean flag and returns an error. The failure is
//     logged once at error level, and Failed reports it. The next Open
//     replays the log as after a crash: everything acknowledged before the
//     failure is there. A checkpoint refused for want of space
//     (ErrNoSpace) is not a device error and stops nothing.
//
// # Checks
//
// Checksums say the bytes are the ones written, not that what was written
// makes a filesystem. metaCheck is the list of invariants the code relies
// on that records alone can break: link counts against the names found,
// entries naming live inodes, one name per directory and a tree the root
// reaches, data within each file's size and type, extents inside the data
// area, no block claimed twice. It is fed by the traversal that encodes a
// checkpoint, and runs in three places. Open checks what it loaded and
// refuses what fails (ErrInconsistent), writing nothing; with
// Options.OpenDamaged it opens it for a look or a repair: files whose
// data is damaged answer EIO, the others read as they were, and the
// volume takes no change but Repair's (damaged.go). Every checkpoint is
// checked before the superblock names it (guard.go): one that fails is
// not made current, and the volume takes no more changes. And Check.
//
// Check adds what only the live volume has: directory indexes, orphans
// nothing keeps, the inode table's count, blocks owned and free or
// neither (leaked), and the free-space counters against the allocator.
// Tests register it for every volume they create (closing, reopening and
// checking again) and keep the image of a failing volume in a file whose
// path they print.
//
// Repair fixes what is safe, keeping every file it can, each fix a
// journalled transaction: entries naming missing inodes are removed,
// extra names of directories are removed, damaged files lose the damaged
// part only (repair_data.go), cycles of directories are broken, orphans
// freed, inodes the root does not reach moved to /lost+found (made on
// demand) as "#INO", and link counts set to the links found. Leaked
// blocks need nothing: Open rebuilds free space from the extents in use.
// Open's own repairs (log replay, orphans freed after a crash) are in
// Recovery.
//
// # Memory
//
// A file costs, beyond its name, an inode slot and a directory entry, kept
// in the directory's cookie-ordered slice and in its hash index, with
// slack from slice and index growth; the aim is 200 bytes. A file whose
// extent map is one extent from its first block (at most 65,535 blocks:
// nearly every small file) keeps it in the inode slot and needs no
// extension, rather than in an extension and a map of its own.
// Directories of up to 16 entries have no index (a scan is cheaper);
// larger ones an open-addressing table of 8-byte slots (nameindex.go), 10
// to 20 bytes a name. Figures (BenchmarkMemoryPerFile, BenchmarkScale) in
// docs/PERFORMANCE.md, "Memory per file"; layer "fs" of
// Options.Accounting reports the live figures.
//
// # Costs
//
// Lookup: one hash and one map probe (or a scan of at most 16 entries).
// ReadDir: a binary search, then O(entries listed). Create+write+close of a
// small file: two transactions (the create; the inode and its extent map
// at write-back), one device write, no device read; at most
// InlineThreshold bytes, the inode and its inline data and no device
// write. Read of a committed file: one device read per extent touched,
// none when inline or dirty; a read plan of one extent adds two atomic
// adds to it (the pin and its Done).
// Open: O(records in the checkpoint and in the log since); the checkpoint
// is read with format.ScanCheckpoint (no allocation per record but the
// extent maps) and each directory indexed once at its end; the log is
// replayed through journal.ReplayScan (format.TxnScanner: no allocation
// per record). Check and a checkpoint: O(inodes + entries + extents).
// Figures (BenchmarkOpen and others) in docs/PERFORMANCE.md, "The volume
// core" and "The load-time check and the checkpoint guard".
//
// A file's extent map is one record in one log transaction: a map that
// would not fit (free space shredded into many small extents) fails its
// write-back with ErrNoSpace, nothing changed.
package volume
