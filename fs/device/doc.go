// Package device is how smallfs reaches its backing store: a narrow
// interface (Device) and its implementations.
//
// # The model
//
// A device is a fixed-size array of bytes with positional reads and writes
// and one barrier, Flush. A completed WriteAt is visible to every later read;
// it is durable only once a later Flush returns. Until then a power cut may
// lose it, keep it, keep it without an earlier write, or tear it at 512-byte
// sector granularity. Layers above order their writes with Flush alone: write
// data, Flush, write the log record that points at it, Flush.
//
// Implementations:
//
//   - File (Open): an image file or a block device through pread/pwrite and
//     fdatasync. It implements FdDevice so reads of a contiguous extent can be
//     served zero-copy from the descriptor. On an image file whose blocks the
//     host holds "unwritten" (fallocate), ZeroAhead writes zeros over a
//     1 MiB region before a write the caller will flush at once
//     (zeroahead.go), so that flush has no host conversion to commit.
//   - Mem: a byte slice; Flush does nothing. For unit tests and fuzzing.
//   - CrashDevice: remembers which writes are flushed and builds the image a
//     power cut would leave behind (Crash, CrashAt; see CrashMode).
//   - Faulty: wraps any Device and fails chosen operations; counts them.
//
// # Locking
//
// Open takes flock(LOCK_EX|LOCK_NB) for read-write use and LOCK_SH for
// read-only use, held until Close: a mounted volume excludes fsck, mkfs and a
// second mount; read-only checkers may share. NoLock skips it (inspecting a
// mounted device, knowing the answer may be inconsistent).
//
// An image file and a loop device over it are one device: Open of a loop
// device also takes the same lock on its backing file (found by
// LOOP_GET_STATUS64 and checked by inode), so either name excludes the
// other (storage.go). A block device opened for writing is opened O_EXCL,
// which the kernel refuses (ErrBusy) while it has the device mounted or
// anyone else claims it. SameStorage tells whether two paths reach the
// same bytes: one inode under two names, or a loop device and its file.
//
// Concurrency: every implementation is safe for concurrent use; callers keep
// concurrent writes on disjoint ranges (File and Mem do not serialise, as a
// real disk does not). CrashDevice serialises everything under one mutex so
// that its record of completion order is exact.
//
// # Errors
//
// Sentinels: ErrLocked, ErrBusy, ErrNotDevice, ErrTooSmall, ErrOutOfRange,
// ErrReadOnly, ErrClosed, ErrInjected. A missing path wraps fs.ErrNotExist.
// I/O errors from the kernel are wrapped with the offset and length; the
// errno stays reachable with errors.Is (syscall.EIO, syscall.ENOSPC).
// Every call checks its range first, so a bad offset changes nothing.
//
// # Costs
//
// File: one syscall per ReadAt/WriteAt (os.File loops on short transfers)
// and one fdatasync per Flush. Mem: one copy. CrashDevice: two copies of the
// device in memory (what reads see, what is durable), plus a copy of every
// unflushed write; after KeepHistory, a copy of everything written.
// Crash and CrashAt copy the whole image.
//
// # Crash enumeration
//
// A bounded crash test calls KeepHistory, runs its workload, then for every
// point in [0, FlushPoints()] and every CrashMode opens a volume on
// CrashAt(point, mode) and checks it. Each result depends only on the seed,
// the point and the mode.
package device
