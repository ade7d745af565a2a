package volume

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/format"
	"github.com/smallfs/smallfs/fs/journal"
)

// Volume is an open smallfs volume: the whole metadata in memory, the data
// and the metadata log on one device. All methods are safe for concurrent
// use; see "# Locking" in doc.go.
type Volume struct {
	opts      Options
	dev       device.Device
	blockSize int

	mu        spinRWMutex  // metadata: the inode table and everything under it (spinlock.go)
	wbGate    sync.RWMutex // write-backs share it, Check holds it alone (doc.go, "# Locking")
	inodes    inodeTable
	space     *space
	fixed     []alloc.Extent // superblocks and log: outside the data area
	dataStart uint64         // first block of the data area
	nextGen   uint64         // generation of the next inode created
	// txnRoom is the bytes of records one log transaction surely holds:
	// it bounds a file's extent map, which is one record.
	txnRoom int
	j       *journal.Journal
	// dataSums is format.FeatureDataSums: write-backs log the checksums
	// of what they wrote, and commits flush once (journal.Options.DataSums).
	dataSums bool
	// sums is the checksum of every block of file data
	// (format.FeatureBlockSums; nil without it): write-backs log them,
	// checkpoints keep them, reads verify them.
	sums *blockSums
	ra   *readahead // nil: off

	ckptMu  sync.Mutex        // serialises checkpoints and superblock writes; inside v.mu
	sb      format.Superblock // the newest superblock written
	refs    [2]ckptRef        // the checkpoint each superblock slot names
	pending ckptRef           // the checkpoint being made current
	snap    *ckptSnapshot     // the periodic checkpoint being encoded, if any (v.mu)
	stop    chan struct{}     // closed to stop the periodic commit
	stopped chan struct{}     // closed when it has stopped
	// unsynced is the bytes written back since the last commit (data
	// sums: replay after a crash reads back the last commit's data);
	// past maxUnsynced a write-back asks the committer (syncKick) to
	// commit early.
	unsynced atomic.Int64
	syncKick chan struct{} // capacity 1
	// ckptKick asks the committer for a checkpoint when a commit finds
	// the log half full, so a burst meets a snapshot, not a full log and a
	// checkpoint under the lock. appended counts transactions (v.mu), to
	// look only every logCheckEvery.
	ckptKick chan struct{} // capacity 1
	appended uint64
	closed   bool
	// failed is set once a device error writing metadata stopped the
	// volume (failed.go); read without a lock.
	failed atomic.Pointer[failure]
	// closeOnce runs Close's work once; closeErr is its result.
	closeOnce sync.Once
	closeErr  error
	// frozen is set while the volume holds metadata that fails its checks,
	// opened with Options.OpenDamaged (damaged.go): it takes no change
	// but Repair's, whose run sets repairing (v.mu).
	frozen    atomic.Pointer[freeze]
	repairing bool
	now       func() int64 // the clock, in Unix ns
	acct      acct

	recovery Recovery     // what Open did; set before Open returns, then read-only
	loading  *[]loadedDir // while Open reads the checkpoint: directories to index
	// lenient is set while openLenient loads a checkpoint: records that do
	// not apply are left out, and noted in dropped, which Check reports
	// until a Repair whose checkpoint leaves them out for good (v.mu).
	lenient bool
	dropped []finding

	dirtyMu  sync.Mutex // leaf lock guarding dirty
	dirty    dirtyQueue // files with something to write back, oldest first
	dirtyMem atomic.Int64
	wb       flusher
}

// loadedDir is a directory whose index Open builds after the checkpoint.
type loadedDir struct {
	ino uint64
	d   *dir
}

func clock() int64 { return time.Now().UnixNano() }

// logCheckEvery is how many transactions commit appends between looks at
// the log's fill: a few KiB of log, against at least 128 KiB for half.
const logCheckEvery = 64

// commit appends one transaction to the log and applies it. The caller holds
// v.mu for writing and has validated the change, so apply cannot fail; a log
// error fails the operation with nothing changed, and so does a volume a
// device error stopped (ErrReadOnly). The blocks of inodes the transaction
// frees are freed once it is durable.
func (v *Volume) commit(txn ...format.Record) (uint64, error) {
	if v.closed {
		return 0, ErrClosed
	}
	if err := v.refuseChange(); err != nil {
		return 0, err
	}
	if err := v.frozenErr(); err != nil {
		return 0, err
	}
	seq, err := v.j.Append(txn)
	if errors.Is(err, journal.ErrLogFull) {
		// The periodic commit checkpoints at half full; a burst got here
		// first. Checkpoint now (v.mu is held) and try again.
		if err = v.checkpoint(false); err == nil {
			seq, err = v.j.Append(txn)
		}
	}
	if errors.Is(err, journal.ErrTxnTooLarge) {
		return 0, fmt.Errorf("log: %w (%w)", ErrNoSpace, err)
	}
	if err != nil {
		return 0, fmt.Errorf("log: %w", v.failOnLog(err))
	}
	if v.appended++; v.appended%logCheckEvery == 0 && v.snap == nil {
		if used, capacity := v.j.Usage(); used*2 >= capacity {
			select {
			case v.ckptKick <- struct{}{}:
			default:
			}
		}
	}
	for _, r := range txn {
		if f, ok := r.(format.InodeFreeRec); ok {
			if n := v.inodes.get(Ino(f.Ino)); n != nil {
				v.freeAfter(physical(n.extents()), seq)
			}
		}
		if err := v.apply(r); err != nil {
			return 0, v.failApply(seq, err)
		}
	}
	return seq, nil
}

// failApply stops the volume after transaction seq, already in the log,
// did not apply (a bug: commit's callers validate first). The metadata in
// memory then differs from what the log says, so no later transaction and
// no checkpoint may be written from it: the volume stops as after a
// device error writing metadata (fail), reads going on. The log still
// holds seq, which the next Open meets again. It returns the error, which
// wraps ErrCorrupt (EIO). v.mu is held for writing.
func (v *Volume) failApply(seq uint64, err error) error {
	err = fmt.Errorf("log transaction %d does not apply: %w (%w)", seq, ErrCorrupt, err)
	v.fail("apply", err)
	return err
}

// live returns the live inode ino for a read-only call (v.mu held).
func (v *Volume) live(ino Ino) (*inode, error) {
	if v.closed {
		return nil, ErrClosed
	}
	n := v.inodes.get(ino)
	if n == nil {
		return nil, ErrNotFound
	}
	return n, nil
}

// liveDir returns the live directory ino.
func (v *Volume) liveDir(ino Ino) (*inode, error) {
	n, err := v.live(ino)
	if err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, ErrNotDir
	}
	return n, nil
}

// attr fills an Attr from n.
func (v *Volume) attr(ino Ino, n *inode) Attr {
	a := Attr{
		Ino: ino, Gen: n.gen, Mode: n.mode, Nlink: n.nlink, UID: n.uid, GID: n.gid,
		Rdev: n.rdev, Size: n.size, Blksize: uint32(v.blockSize),
		Atime: n.atime, Mtime: n.mtime, Ctime: n.ctime,
	}
	if n.x != nil && n.x.data != nil && n.x.data.ahead.Load() {
		// Unwritten changes: what the file will be once written back.
		a.Size = n.x.data.size.Load()
		a.Mtime = n.x.data.mtime.Load()
		a.Ctime = max(a.Ctime, a.Mtime)
	}
	a.Blocks = n.blocks()
	if n.x != nil && n.x.data != nil && a.Size > uint64(v.opts.InlineThreshold) {
		// Dirty data holds reserved blocks, as ext4's delayed
		// allocation does: du sees a file just written. A file that
		// will be stored inline gets none.
		a.Blocks += uint64(max(0, n.x.data.unwritten.Load()))
	}
	a.Blocks *= uint64(v.blockSize) / 512
	return a
}

// touchDir is the attribute change of a directory whose entries changed.
func touchDir(r *format.InodeRec, now int64) { r.Mtime, r.Ctime = now, now }

func blocksIn(es []alloc.Extent) uint64 {
	var n uint64
	for _, e := range es {
		n += e.Len
	}
	return n
}
