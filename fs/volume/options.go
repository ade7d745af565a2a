package volume

import (
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/internal/nolog"
	"github.com/smallfs/smallfs/iobuf"
)

// Options tunes an open volume. The zero value gives the defaults stated on
// each field; Open fills them in on its own copy and rejects bad values,
// naming every bad field at once.
type Options struct {
	// CommitInterval bounds what a crash without fsync loses: dirty data is
	// allocated and written and the log made durable at least this often.
	// Default 5s. Negative disables the periodic commit (tests).
	CommitInterval time.Duration
	// DirtyThreshold is how many dirty bytes an inode may buffer before they
	// are allocated and written out without waiting for flush or fsync.
	// Default 4 MiB; at least one block.
	DirtyThreshold int64
	// DirtyLimit bounds the memory held by dirty data buffers across all
	// files (DirtyBytes): a write finding the volume at the limit waits for
	// the background write-back (like the kernel's dirty_bytes). Default
	// 64 MiB; negative: no limit and no background write-back; else at
	// least two chunks (128 KiB).
	DirtyLimit int64
	// DirtyBackground is the dirty memory past which the background
	// write-back writes back the oldest dirty files, by first-dirty time,
	// until the volume holds at most this much again (like the kernel's
	// dirty_background_bytes). Default DirtyLimit/2; below DirtyLimit.
	DirtyBackground int64
	// DirtyExpire is how long a file may stay dirty before the background
	// write-back writes it back even under DirtyBackground, so that data
	// reaches the device soon after it is written although the file is
	// not closed (a FUSE mount without FLUSH/RELEASE). It is not a
	// durability bound: the log is made durable by fsync and the periodic
	// commit. Default 1s, or never when CommitInterval is negative (no
	// timed background work at all); negative: never. Checked twice per
	// period.
	DirtyExpire time.Duration
	// InlineThreshold is the largest file kept in metadata instead of a data
	// block. Default DefaultInlineThreshold; negative keeps every file in
	// blocks; at most one block.
	InlineThreshold int
	// TrackLookups keeps inodes alive while the kernel references them
	// (FUSE lookup counts, released by Forget). Default false: only links
	// and open handles keep an inode.
	TrackLookups bool
	// Logger receives lifecycle events and failures. Default: discard.
	Logger logrus.FieldLogger
	// Pool lends the data path's buffers: dirty chunks, reads of partial
	// blocks, the periodic checkpoint's encoding chunks and every
	// checkpoint's write buffer, scrub's pieces. Default iobuf.Default.
	Pool *iobuf.Pool
	// Accounting receives the "fs" layer's memory figures. Default
	// accounting.Default.
	Accounting *accounting.Registry
	// Salvage makes Open accept a log damaged before its end
	// (journal.ErrLogDamaged): it keeps the transactions before the damage
	// and goes on without the committed ones after it, which
	// Recovery.LogDamage names. Likewise a damaged newest checkpoint
	// whose stand-in, the older checkpoint and the log after it, falls
	// short of it (ErrCheckpointLoss): Open keeps what they hold and
	// Recovery.Damaged names the transactions lost. Without it Open
	// refuses such a volume.
	// fsck --repair sets it, and so do read-only opens (fsck's check,
	// info), in memory. Default false: a mount refuses.
	Salvage bool
	// OpenDamaged makes Open accept metadata that loads but fails its
	// checks (ErrInconsistent), for a look or a repair: the volume takes
	// no change but Repair's until Repair has mended it (Close then
	// writes nothing), each file whose data is damaged answers EIO, an
	// entry naming a missing inode answers EIO, and every other file
	// reads as it was. Recovery.Inconsistent lists what is wrong. fsck
	// (both ways), info and a read-only mount set it. Default false:
	// Open refuses such metadata.
	OpenDamaged bool
	// Readahead is the largest window the volume asks the device to
	// prefetch ahead of a reader walking files in device order
	// (readahead.go). Default DefaultReadahead; negative: off. Only a
	// device that can prefetch (device.Prefetcher) is asked.
	Readahead int64
	// Progress, if set, hears how Open is getting on, for a progress line
	// on a terminal (fsck, mount of a big volume): it is called from
	// Open's goroutine at the start and end of each phase and every
	// progressEvery records, transactions or inodes in between, and must
	// not call the volume. Default: none.
	Progress func(Progress)
}

// Defaults of the dirty-memory options.
const (
	DefaultDirtyLimit  = 64 << 20
	DefaultDirtyExpire = time.Second
	minDirtyLimit      = 2 * 64 << 10 // two chunks of the smallest size
)

// dirtyDefaults fills in the dirty-memory options and returns what is
// wrong with them.
func (o *Options) dirtyDefaults() []error {
	var errs []error
	switch {
	case o.DirtyLimit == 0:
		o.DirtyLimit = DefaultDirtyLimit
	case o.DirtyLimit < 0:
		o.DirtyLimit = -1
	case o.DirtyLimit < minDirtyLimit:
		errs = append(errs, fmt.Errorf("DirtyLimit %d is below %d: %w", o.DirtyLimit, minDirtyLimit, ErrInvalid))
	}
	switch {
	case o.DirtyBackground == 0:
		o.DirtyBackground = o.DirtyLimit / 2
	case o.DirtyBackground < 0 || (o.DirtyLimit > 0 && o.DirtyBackground >= o.DirtyLimit):
		errs = append(errs, fmt.Errorf("DirtyBackground %d is not in [0, DirtyLimit %d): %w", o.DirtyBackground, o.DirtyLimit, ErrInvalid))
	}
	switch {
	case o.DirtyExpire == 0 && o.CommitInterval > 0:
		o.DirtyExpire = DefaultDirtyExpire
	case o.DirtyExpire <= 0:
		o.DirtyExpire = -1
	}
	return errs
}

// DefaultReadahead is the default Options.Readahead.
const DefaultReadahead = 2 << 20

// DefaultInlineThreshold is the default Options.InlineThreshold; see
// "# Inline data" in doc.go for the measurement behind it.
const DefaultInlineThreshold = 128

// withDefaults returns a copy of o with defaults filled in, or an error
// naming every invalid field. blockSize bounds the size options.
func (o Options) withDefaults(blockSize int) (Options, error) {
	var errs []error
	if o.CommitInterval == 0 {
		o.CommitInterval = 5 * time.Second
	}
	switch {
	case o.DirtyThreshold == 0:
		o.DirtyThreshold = 4 << 20
	case o.DirtyThreshold < int64(blockSize):
		errs = append(errs, fmt.Errorf("DirtyThreshold %d is below the block size %d: %w", o.DirtyThreshold, blockSize, ErrInvalid))
	}
	errs = append(errs, o.dirtyDefaults()...)
	switch {
	case o.InlineThreshold == 0:
		o.InlineThreshold = min(DefaultInlineThreshold, blockSize)
	case o.InlineThreshold < 0:
		o.InlineThreshold = 0
	case o.InlineThreshold > blockSize:
		errs = append(errs, fmt.Errorf("InlineThreshold %d is above the block size %d: %w", o.InlineThreshold, blockSize, ErrInvalid))
	}
	switch {
	case o.Readahead == 0:
		o.Readahead = DefaultReadahead
	case o.Readahead < 0:
		o.Readahead = -1
	}
	if o.Pool == nil {
		o.Pool = iobuf.Default
	}
	if o.Accounting == nil {
		o.Accounting = accounting.Default
	}
	if o.Logger == nil {
		o.Logger = nolog.New()
	}
	return o, errors.Join(errs...)
}
