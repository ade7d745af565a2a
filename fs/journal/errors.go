package journal

import "errors"

var (
	// ErrLogFull is returned by Append when the transaction does not fit in
	// the space between the head and the tail. Nothing was appended; the
	// volume checkpoints, calls Release, and tries again.
	ErrLogFull = errors.New("metadata log full")
	// ErrTxnTooLarge is returned by Append for a transaction that could not
	// fit even in an empty log (more than half the region).
	ErrTxnTooLarge = errors.New("transaction too large for the log")
	// ErrFailed is returned by every call after a device error left the
	// on-disk log in an unknown state. The volume must be reopened, which
	// replays what is durable.
	ErrFailed = errors.New("journal failed")
	// ErrClosed is returned by every call after Close.
	ErrClosed = errors.New("journal closed")
	// ErrBadArgument is returned for options, sequence numbers or positions
	// that cannot be right (Sync of a sequence not appended yet, Release of
	// a position outside the live log).
	ErrBadArgument = errors.New("bad journal argument")
)
