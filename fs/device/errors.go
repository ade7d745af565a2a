package device

import "errors"

var (
	// ErrLocked is returned by Open when another process holds the device's
	// lock (it is mounted, or being checked or formatted).
	ErrLocked = errors.New("device is locked by another process")
	// ErrBusy is returned by Open for writing when the kernel refuses to
	// give a block device exclusively (O_EXCL: EBUSY): it is mounted, or
	// held by md, LVM, another smallfs or any other exclusive opener.
	ErrBusy = errors.New("device is busy: mounted by the kernel or in use")
	// ErrNotDevice is returned by Open when the path is neither a regular
	// file nor a block device.
	ErrNotDevice = errors.New("not a regular file or block device")
	// ErrTooSmall is returned by Open when the device holds fewer bytes than
	// Options.MinSize.
	ErrTooSmall = errors.New("device too small")
	// ErrOutOfRange is returned by ReadAt and WriteAt for a range that does
	// not lie inside [0, Size()). Nothing is read or written.
	ErrOutOfRange = errors.New("i/o range outside the device")
	// ErrReadOnly is returned by WriteAt on a device opened read-only.
	ErrReadOnly = errors.New("device is read-only")
	// ErrClosed is returned by every method of a closed device.
	ErrClosed = errors.New("device is closed")
	// ErrInjected marks every failure a Faulty device injects, so tests tell
	// an injected fault apart from a real one.
	ErrInjected = errors.New("injected fault")
)
