package device

// Device is the narrow interface every layer above uses to reach the backing
// store. Offsets and lengths are in bytes. Implementations are safe for
// concurrent use: ReadAt and WriteAt may run in parallel on disjoint ranges.
//
// Durability model: a WriteAt that returned is visible to later reads but is
// durable only after a later Flush returns. Writes not yet flushed may be lost,
// torn or persisted in any order by a crash (the crash simulator does all of
// these).
type Device interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Flush makes every write that completed before the call durable
	// (fdatasync on a file or block device).
	Flush() error
	// Size is the usable size in bytes.
	Size() int64
	Close() error
}

// FdDevice is implemented by devices backed by a kernel file descriptor, so
// reads of contiguous extents can be answered zero-copy (fuse.ReadResultFd).
type FdDevice interface {
	Device
	Fd() uintptr
}

// Prefetcher is implemented by devices that can start reading a range in
// the background (the host's page cache for a file or block device), so
// that a read of it soon after finds it in memory instead of waiting for
// the storage. A hint: it may do nothing and never fails the caller.
type Prefetcher interface {
	Prefetch(off, n int64)
}
