package volume

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/smallfs/smallfs/accounting"
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
	// Pool lends the dirty-data buffers. Default iobuf.Default.
	Pool *iobuf.Pool
	// Accounting receives the "fs" layer's memory figures. Default
	// accounting.Default.
	Accounting *accounting.Registry
	// Progress, if set, hears how Open is getting on, for a progress line
	// on a terminal (fsck, mount of a big volume): it is called from
	// Open's goroutine at the start and end of each phase and every
	// progressEvery records, transactions or inodes in between, and must
	// not call the volume. Default: none.
	Progress func(Progress)
}

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
	switch {
	case o.InlineThreshold == 0:
		o.InlineThreshold = min(DefaultInlineThreshold, blockSize)
	case o.InlineThreshold < 0:
		o.InlineThreshold = 0
	case o.InlineThreshold > blockSize:
		errs = append(errs, fmt.Errorf("InlineThreshold %d is above the block size %d: %w", o.InlineThreshold, blockSize, ErrInvalid))
	}
	if o.Pool == nil {
		o.Pool = iobuf.Default
	}
	if o.Accounting == nil {
		o.Accounting = accounting.Default
	}
	if o.Logger == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		o.Logger = l
	}
	return o, errors.Join(errs...)
}
