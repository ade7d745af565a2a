package mountopt

import "errors"

var (
	// ErrUnknownOption is returned when an option is neither a generic mount
	// option, a FUSE option smallfs understands, nor a smallfs option.
	ErrUnknownOption = errors.New("unknown mount option")
	// ErrBadValue is returned when an option's value does not parse or is out
	// of range, or when a value is given to an option that takes none (or
	// missing from one that needs it).
	ErrBadValue = errors.New("bad mount option value")
	// ErrUsage is returned when the helper-form argument list is malformed:
	// a missing or extra positional argument, or a flag without its value.
	ErrUsage = errors.New("usage")
)
