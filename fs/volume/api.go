package volume

import (
	"fmt"
	"strconv"
)

// This file is the contract between the volume core and its users (the FUSE
// adapter in fs/fuse, fsck and the command line, tests). It lists the types
// that cross the boundary and, in the comment below, the methods of *Volume.
// Change it deliberately: fs/fuse is written against it.
//
// Conventions:
//   - Inode numbers are uint64 (type Ino); RootIno is 1. A (Ino, Gen) pair is
//     never reused, so the FUSE adapter uses Ino as the node ID and Gen as the
//     generation.
//   - Every error returned wraps (with %w) one of the errno sentinels in
//     errors.go, so errors.Is(err, syscall.ENOENT) and errors.As(err,
//     &syscall.Errno) work; corruption wraps ErrCorrupt as well.
//   - Entry-returning calls (Lookup, Create, Mknod, Mkdir, Symlink, Link and
//     ReadDirPlus entries) add one to the inode's kernel lookup count when
//     Options.TrackLookups is set; Forget(ino, n) subtracts. An inode whose
//     link count and lookup count and open count are all zero is freed. Without
//     TrackLookups (in-process use) only links and opens keep an inode alive.
//   - Context carries the caller's credentials for new inodes and the
//     sticky-bit check; permission checks against mode bits are the kernel's
//     (default_permissions, where anyone but root can reach the mount: fs/fuse
//     "# Permissions"), never the volume's.
//
// Methods (names fixed; parameters may grow an options struct). Flag
// constants: RenameNoReplace/RenameExchange, XattrCreate/XattrReplace,
// FallocKeepSize, SeekData/SeekHole; open flags are syscall.O_*.
//
//	Mkfs(dev device.Device, opts MkfsOptions) error      // does not close dev
//	Open(dev device.Device, opts Options) (*Volume, error)
//	(*Volume) Close() error                       // flush, checkpoint, mark clean; not dev
//	(*Volume) Discard() error                     // stop without writing more: fsck's overlay
//	(*Volume) Lookup(ctx Context, parent Ino, name string) (Attr, error)
//	(*Volume) Parent(dir Ino) (Ino, error)                   // "..", without counting a reference
//	(*Volume) Forget(ino Ino, n uint64)
//	(*Volume) GetAttr(ino Ino) (Attr, error)
//	(*Volume) SetAttr(ctx Context, ino Ino, in SetAttrIn) (Attr, error)
//	(*Volume) Accessed(ino Ino, policy AtimePolicy) (bool, error) // a read or listing: atime per relatime/strictatime/noatime
//	(*Volume) Mknod(ctx Context, parent Ino, name string, mode, rdev uint32) (Attr, error)
//	(*Volume) Mkdir(ctx Context, parent Ino, name string, mode uint32) (Attr, error)
//	(*Volume) Symlink(ctx Context, parent Ino, name, target string) (Attr, error)
//	(*Volume) Link(ctx Context, ino, newParent Ino, newName string) (Attr, error)
//	(*Volume) Unlink(ctx Context, parent Ino, name string) error
//	(*Volume) Rmdir(ctx Context, parent Ino, name string) error
//	(*Volume) Rename(ctx Context, oldParent Ino, oldName string, newParent Ino, newName string, flags uint32) error
//	(*Volume) Readlink(ino Ino) (string, error)
//	(*Volume) Create(ctx Context, parent Ino, name string, mode uint32, flags uint32) (Attr, *Handle, error) // existing name: EEXIST with O_EXCL, else opened
//	(*Volume) Tmpfile(ctx Context, dir Ino, mode uint32, flags uint32) (Attr, *Handle, error) // O_TMPFILE: nlink 0; Link names it unless O_EXCL
//	(*Volume) OpenFile(ino Ino, flags uint32) (*Handle, error)
//	(*Handle) ReadAt(p []byte, off int64) (int, error)   // holes read as zeros; short + io.EOF at EOF
//	(*Handle) ReadPlan(off int64, p []byte) (ReadPlan, error) // zero-copy: device range (pinned until Done), or bytes read into p
//	(*ReadPlan) Done()                                   // after the last read of the plan's device range
//	(*Handle) WriteAt(p []byte, off int64) (int, error)  // O_APPEND handled by caller offset
//	(*Handle) WriteAtFlags(p []byte, off int64, f WriteFlags) (n int, cleared bool, err error) // WriteKillPriv: clear privileges first, atomically
//	(*Handle) Flush() error                              // delayed allocation happens here at latest
//	(*Handle) Fsync(datasync bool) error
//	(*Handle) Release() error
//	(*Volume) Fsync(ino Ino, datasync bool) error        // also for directories (fsyncdir)
//	(*Volume) ReadDir(dir Ino, cookie, end uint64, fn func(DirEntry) bool) error // entries after cookie, below end (0: no bound)
//	(*Volume) ReadDirPlus(dir Ino, cookie, end uint64, fn func(DirEntry, Attr) bool) error // accepted entries count as lookups
//	(*Volume) DirEnd(dir Ino) (uint64, error)            // the next entry's cookie: a listing's end
//	(*Volume) StatFS() StatFS
//	(*Volume) AllocStats() alloc.Stats                   // free extents, fragmentation, histogram
//	(*Volume) SetXattr(ino Ino, name string, value []byte, flags uint32) error
//	(*Volume) GetXattr(ino Ino, name string) ([]byte, error)
//	(*Volume) ListXattr(ino Ino) ([]string, error)
//	(*Volume) RemoveXattr(ino Ino, name string) error
//	(*Volume) Fallocate(ino Ino, mode uint32, off, length int64) error
//	(*Volume) KillPriv(ino Ino) (bool, error)           // clear privileges as an unprivileged write does; whether there were any
//	(*Volume) Lseek(ino Ino, off int64, whence int) (int64, error) // SEEK_DATA / SEEK_HOLE
//	(*Volume) Check() []Problem
//	(*Volume) FilesBeyond(block uint64) []Ino            // files with data at or past a device block (an image cut short)
//	(*Volume) Recovery() Recovery                        // what Open replayed and freed
//	(*Volume) Sync() error                               // commit everything now
//	(*Volume) Failed() error                             // nil, or the device error that stopped the volume
//	(*Volume) DirtyBytes() int64                         // dirty buffer memory (Options.DirtyLimit)
//	(*Volume) Throttled() uint64                         // writes that waited for write-back
//	(*Volume) PinnedReads() int64                        // ReadPlans with a device range not yet Done

// Ino is an inode number. RootIno is the root directory.
type Ino uint64

const RootIno Ino = 1

// Attr is what stat(2) reports about an inode. Times are Unix nanoseconds.
type Attr struct {
	Ino     Ino
	Gen     uint64
	Mode    uint32 // type bits (syscall.S_IFREG, ...) and permission bits
	Nlink   uint32
	UID     uint32
	GID     uint32
	Rdev    uint32
	Size    uint64
	Blocks  uint64 // 512-byte units allocated, or reserved for data not yet written back (inline data counts 0)
	Blksize uint32
	Atime   int64
	Mtime   int64
	Ctime   int64
}

// Context is the identity of the caller of an operation.
type Context struct {
	UID, GID uint32
	Pid      uint32
}

// SetAttrIn selects which attributes SetAttr changes (Valid bits) and to what.
type SetAttrIn struct {
	Valid SetAttrMask
	Mode  uint32 // permission bits only; the type never changes
	UID   uint32
	GID   uint32
	Size  uint64
	Atime int64 // ignored when the matching *Now bit is set
	Mtime int64
	Ctime int64 // with SetCtime
}

type SetAttrMask uint32

const (
	SetMode SetAttrMask = 1 << iota
	SetUID
	SetGID
	SetSize
	SetAtime
	SetMtime
	SetAtimeNow
	SetMtimeNow
	SetCtime // ctime is always bumped on change; this sets it explicitly
	// SetKillPriv clears S_ISUID, S_ISGID when group-executable, and a
	// security.capability xattr, under the metadata lock in the same
	// transaction (FUSE_HANDLE_KILLPRIV_V2: truncate or chown flagged by
	// the kernel). Alone it still bumps ctime.
	SetKillPriv
)

// DirEntry is one entry handed to a ReadDir callback. Cookie is the value to
// pass back to ReadDir to continue after this entry; it stays valid while
// the directory changes (an entry added after a listing started may or may
// not appear; no entry is returned twice or skipped).
type DirEntry struct {
	Name   string
	Ino    Ino
	Mode   uint32 // type bits only
	Cookie uint64
}

// StatFS is what statfs(2) reports: true figures for df and df -i.
type StatFS struct {
	BlockSize   uint32
	Blocks      uint64
	BlocksFree  uint64
	BlocksAvail uint64
	Files       uint64 // inode capacity
	FilesFree   uint64
	NameMax     uint32
}

// ReadPlan says how to answer a read: Bytes is set when the data was read
// into the caller's buffer (inline files, dirty buffers, holes, and every
// read of a volume that verifies them); otherwise DevOff/Len is one
// contiguous device range the caller may read directly (zero-copy).
//
// A device range stays the file's until Done: its blocks may be freed
// meanwhile (the file rewritten, truncated, punched or deleted), but they
// are not allocated again before Done, so the range never holds another
// file's bytes. The caller calls Done exactly once, after its last read
// of the range; until then the blocks the volume frees (any file's, once
// their commit is durable) wait, so it must not keep a plan long. Done is
// a no-op on a Bytes plan and on the zero ReadPlan. Copies of a plan
// share its pin: only one of them may call Done.
type ReadPlan struct {
	Bytes  []byte
	DevOff int64
	Len    int

	gate *space // pinned through it until Done; nil when nothing is
	pin  readPin
}

// Done ends the plan's read of its device range (see ReadPlan).
func (p *ReadPlan) Done() {
	if p.gate != nil {
		p.gate.unpinRead(p.pin)
		p.gate = nil
	}
}

// Problem is one inconsistency found by Check.
type Problem struct {
	Ino  Ino
	What string
}

func (p Problem) String() string {
	if p.Ino == 0 {
		return p.What
	}
	return "inode " + strconv.FormatUint(uint64(p.Ino), 10) + ": " + p.What
}

// Recovery is what Open did to bring the volume to a consistent state.
type Recovery struct {
	Clean        bool   // closed cleanly: the log was not replayed
	Transactions uint64 // log transactions replayed after a crash
	// Dropped is the transactions of a last commit whose data had not
	// reached the device, left out of the replay: that commit never
	// completed, so nothing in it was acknowledged (FeatureDataSums).
	Dropped uint64
	Orphans []Ino // inodes without links a crash left behind, freed
	// Damaged is set when the newest checkpoint did not load and Open
	// loaded the older one the other superblock names instead, replaying
	// the log from its position past the damaged one's: nothing committed
	// was lost (with Options.Salvage the log may also fall short of it:
	// CheckpointDamage.Lost). The next checkpoint replaces the damaged one (the first
	// periodic commit of a mount writes one; so does Close, which is how
	// fsck --repair mends it).
	Damaged *CheckpointDamage
	// LogDamage is set when Open salvaged a log damaged before its end
	// (Options.Salvage): the committed transactions it names are lost.
	LogDamage *LogDamage
	// Inconsistent lists what is wrong with metadata that failed its
	// checks and was opened anyway (Options.OpenDamaged); nil when it
	// passed. Check finds the same problems, until Repair mends them.
	Inconsistent []Problem
}

// LogDamage is a log damaged before its end, salvaged: replay kept the
// transactions before First.
type LogDamage struct {
	Block       uint64 // log block where the chain breaks
	First, Last uint64 // transactions lost: at least First through Last, all committed
	// ProofBlock and ProofSeq are the later commit found intact past the
	// damage, which shows the transactions were committed.
	ProofBlock, ProofSeq uint64
}

func (d LogDamage) String() string {
	return fmt.Sprintf("metadata log damaged at log block %d: committed transactions %d-%d (at least) are lost (a later commit, transaction %d at log block %d, is intact past the damage)",
		d.Block, d.First, d.Last, d.ProofSeq, d.ProofBlock)
}

// CheckpointDamage is a newest checkpoint Open found damaged, and the
// older one it loaded instead.
type CheckpointDamage struct {
	Block      uint64 // header block of the damaged checkpoint
	Slot       int    // superblock slot naming it (0 = A)
	Reason     string // what is wrong with it
	Loaded     uint64 // header block of the older checkpoint loaded instead
	LoadedSlot int    // superblock slot naming that one
	// Lost is set when the log after the older checkpoint ended before
	// the damaged one's position and Open kept what it replays anyway
	// (Options.Salvage): the committed transactions LostFirst through
	// LostLast are lost, LostLast being the last one the damaged
	// checkpoint covered or the log after it holds (as far as the log
	// shows: damage there may hide later ones).
	Lost                bool
	LostFirst, LostLast uint64
}

func (d CheckpointDamage) String() string {
	if d.Lost {
		return fmt.Sprintf("newest checkpoint (block %d, superblock %c) is damaged: %s; the log after the older checkpoint (block %d, superblock %c) ends before transaction %d: committed transactions %d-%d are lost",
			d.Block, 'A'+d.Slot, d.Reason, d.Loaded, 'A'+d.LoadedSlot, d.LostFirst, d.LostFirst, d.LostLast)
	}
	return fmt.Sprintf("newest checkpoint (block %d, superblock %c) is damaged: %s; the older checkpoint (block %d, superblock %c) and the log after it stood in: nothing lost",
		d.Block, 'A'+d.Slot, d.Reason, d.Loaded, 'A'+d.LoadedSlot)
}

// Progress is how far Open has got (Options.Progress).
type Progress struct {
	Phase string // PhaseCheckpoint, PhaseReplay, PhaseSpace or PhaseOrphans
	Done  uint64 // records, transactions or inodes done
	Total uint64 // how many in all; 0 when not known in advance (replay)
}

// Open's phases, in order; replay and orphans only after a crash.
const (
	PhaseCheckpoint = "loading checkpoint"    // records applied
	PhaseReplay     = "replaying log"         // transactions applied
	PhaseSpace      = "rebuilding free space" // inodes scanned
	PhaseOrphans    = "freeing orphans"       // orphan inodes freed
)
