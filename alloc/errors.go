package alloc

import (
	"errors"
	"syscall"
)

// ErrNoSpace is returned by Alloc when no free extent holds min blocks. It
// matches syscall.ENOSPC under errors.Is, so the FUSE edge maps it without a
// table.
var ErrNoSpace error = noSpace{}

type noSpace struct{}

func (noSpace) Error() string        { return "no free extent large enough" }
func (noSpace) Is(target error) bool { return target == syscall.ENOSPC }

// Misuse errors. Each is returned, wrapped with the offending values, by the
// call that was misused; that call changed nothing.
var (
	// ErrZeroLength is returned when an extent or a request has no blocks.
	ErrZeroLength = errors.New("zero-length extent or request")
	// ErrMinAboveWant is returned by Alloc when min > want.
	ErrMinAboveWant = errors.New("min exceeds want")
	// ErrOutOfRange is returned when an extent does not lie inside the device.
	ErrOutOfRange = errors.New("extent outside the device")
	// ErrDoubleFree is returned by Free and FreeDeferred when part of the
	// extent is already free or already waiting for a commit.
	ErrDoubleFree = errors.New("extent already free")
	// ErrNotFree is returned by Reserve when part of the extent is in use or
	// waiting for a commit.
	ErrNotFree = errors.New("extent not free")
	// ErrOverlap is returned by NewWithUsed when used extents overlap.
	ErrOverlap = errors.New("used extents overlap")
	// ErrCapacity is returned by New and NewWithUsed for a capacity of zero or
	// above MaxCapacity.
	ErrCapacity = errors.New("capacity out of range")
	// ErrClosed is returned by Compact when the Allocator is closed before
	// or while it runs.
	ErrClosed = errors.New("allocator closed")
	// ErrOptions is returned by New and NewWithUsed when an option is invalid.
	ErrOptions = errors.New("invalid options")
)
