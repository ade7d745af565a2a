package iobuf

import (
	"errors"
	"fmt"

	"github.com/smallfs/smallfs/accounting"
)

// DefaultSlabLimit is the slab pool's bound when Options.SlabLimit is 0.
const DefaultSlabLimit = 64 << 20

// ErrInvalidOptions is returned by New when a field of Options is out of
// range; the message names every bad field.
var ErrInvalidOptions = errors.New("iobuf: invalid options")

// Options configures a Pool. The zero value is the default.
type Options struct {
	// Disabled turns pooling off: every Get makes a fresh aligned buffer and
	// Put only does the checks and accounting. For measuring what the pools
	// gain end to end. Default false (pooling on).
	Disabled bool

	// SlabLimit bounds the bytes of 256 KiB–1 MiB buffers the slab pool owns,
	// lent out plus idle. A Get that would pass it takes an idle slab of
	// another class back and, if there is none, falls back to the heap and
	// counts an overflow. 0 means DefaultSlabLimit (64 MiB); must not be
	// negative.
	SlabLimit int64

	// Registry receives the figures, under layer "iobuf". Default
	// accounting.Default.
	Registry *accounting.Registry
}

// withDefaults returns o with zero fields filled, or every bad field.
func (o Options) withDefaults() (Options, error) {
	var errs []error
	if o.SlabLimit < 0 {
		errs = append(errs, fmt.Errorf("SlabLimit %d is negative", o.SlabLimit))
	}
	if len(errs) > 0 {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	if o.SlabLimit == 0 {
		o.SlabLimit = DefaultSlabLimit
	}
	if o.Registry == nil {
		o.Registry = accounting.Default
	}
	return o, nil
}
