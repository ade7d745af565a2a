package alloc

import (
	"errors"
	"fmt"

	"github.com/smallfs/smallfs/accounting"
)

// Options tune an Allocator. The zero value gives the defaults below.
type Options struct {
	// WindowExtents is K, the most free extents the near search visits on
	// each side of the hint before it falls back to the by-size index.
	// Default 32. It bounds the cost of a call: at most 2K+2 visits.
	WindowExtents int
	// WindowBlocks is D, how far from the hint, in blocks, the near search
	// looks. Default 4096 (16 MiB of 4 KiB blocks).
	WindowBlocks uint64
	// BlockSize is the size of a block in bytes. It only weighs extents in
	// the fragmentation score, whose scale is in bytes. Default 4096.
	BlockSize uint64
	// CompactExtents turns automatic compaction on for free space of at
	// least this many extents: once the size index has seen removals of
	// half as many extents as it holds, a goroutine rebuilds both indexes
	// densely (see "Memory and compaction" in doc.go). Default 4096; a
	// negative value turns it off (Compact still works).
	CompactExtents int
	// Registry receives the memory the Allocator holds (layer "alloc",
	// type "free-extent") and its ENOSPC count. Default accounting.Default.
	Registry *accounting.Registry
}

const (
	defaultWindowExtents = 32
	defaultWindowBlocks  = 4096
	defaultBlockSize     = 4096
	defaultCompact       = 4096
	maxWindowExtents     = 1 << 16
)

// withDefaults returns a copy of o with defaults filled in, or an error
// naming every invalid field.
func (o Options) withDefaults() (Options, error) {
	var errs []error
	switch {
	case o.WindowExtents == 0:
		o.WindowExtents = defaultWindowExtents
	case o.WindowExtents < 0 || o.WindowExtents > maxWindowExtents:
		errs = append(errs, fmt.Errorf("WindowExtents %d not in [1, %d]", o.WindowExtents, maxWindowExtents))
	}
	switch {
	case o.WindowBlocks == 0:
		o.WindowBlocks = defaultWindowBlocks
	case o.WindowBlocks > MaxCapacity:
		o.WindowBlocks = MaxCapacity // the whole device: no further bound
	}
	if o.CompactExtents == 0 {
		o.CompactExtents = defaultCompact
	}
	switch {
	case o.BlockSize == 0:
		o.BlockSize = defaultBlockSize
	case o.BlockSize&(o.BlockSize-1) != 0:
		errs = append(errs, fmt.Errorf("BlockSize %d not a power of two", o.BlockSize))
	}
	if len(errs) > 0 {
		return o, fmt.Errorf("%w: %w", ErrOptions, errors.Join(errs...))
	}
	return o, nil
}
