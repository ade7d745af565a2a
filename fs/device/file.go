package device

import (
	"errors"
	"fmt"
	"github.com/smallfs/smallfs/accounting"
	"io/fs"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DefaultMinSize is the smallest device Open accepts when Options.MinSize is
// zero: two superblock slots, a small log and a few blocks of data.
const DefaultMinSize = 64 << 10

// Options say how Open treats the path. The zero value opens an existing
// file or block device read-write with an exclusive lock.
type Options struct {
	// ReadOnly opens without write access and takes a shared lock, so
	// checkers can run side by side but never beside a writer.
	ReadOnly bool
	// Create makes an image file of Size bytes when the path does not
	// exist, and extends an existing regular file shorter than Size
	// (never shrinks it), allocating the new bytes as Prealloc says.
	// Ignored for block devices.
	Create bool
	// Prealloc is how Create allocates the new part of an image file.
	// Default PreallocFalloc.
	Prealloc Prealloc
	// Progress, if set, is called as PreallocFull writes its zeros, with
	// the bytes written so far and the total, every 64 MiB and at the end.
	Progress func(done, total int64)
	// Size is the image size for Create, in bytes.
	Size int64
	// NoLock skips flock entirely, and O_EXCL on a block device opened
	// for writing (inspecting a device that is mounted).
	NoLock bool
	// MinSize is the smallest acceptable size in bytes; 0 means
	// DefaultMinSize.
	MinSize int64
	// NoZeroAhead makes ZeroAhead do nothing: the host's unwritten blocks
	// of an image file are converted write by write, never a region at a
	// time (see ZeroRegion).
	NoZeroAhead bool
	// Accounting receives the device's counters (layer "device").
	// Default accounting.Default.
	Accounting *accounting.Registry
}

// File is a Device backed by an image file or a block device. It reads and
// writes with pread/pwrite, so calls on disjoint ranges run in parallel, and
// Flush is fdatasync.
type File struct {
	f        *os.File
	fd       uintptr
	size     int64
	readOnly bool
	backing  *os.File // a loop device's file, holding the same lock
	closed   atomic.Bool
	zero     *zeroAhead // nil: no region left to zero before writing
}

var _ FdDevice = (*File)(nil)

// Open opens path as a device. See Options for locking and creation.
func Open(path string, opts Options) (*File, error) {
	if opts.MinSize == 0 {
		opts.MinSize = DefaultMinSize
	}
	if opts.Create && opts.ReadOnly {
		return nil, fmt.Errorf("device %s: create and read-only together: %w", path, fs.ErrInvalid)
	}
	if opts.Create && opts.Size < opts.MinSize {
		return nil, fmt.Errorf("device %s: create size %d below minimum %d: %w", path, opts.Size, opts.MinSize, ErrTooSmall)
	}
	flag := os.O_RDWR
	if opts.ReadOnly {
		flag = os.O_RDONLY
	}
	// A writer claims a block device exclusively (open(2): O_EXCL without
	// O_CREAT): the kernel refuses while it has the device mounted, or
	// another holder (a mount, md, LVM, a second smallfs) claims it.
	excl := !opts.ReadOnly && !opts.NoLock && isBlock(path)
	if excl {
		flag |= unix.O_EXCL
	}
	f, err := os.OpenFile(path, flag, 0)
	if excl && errors.Is(err, unix.EBUSY) {
		return nil, fmt.Errorf("device %s: %w", path, ErrBusy)
	}
	created := false
	if errors.Is(err, fs.ErrNotExist) && opts.Create {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		created = err == nil
	}
	if errors.Is(err, unix.EISDIR) {
		return nil, fmt.Errorf("device %s: a directory: %w", path, ErrNotDevice)
	}
	if err != nil {
		return nil, fmt.Errorf("device: %w", err)
	}
	d, err := setup(f, path, opts)
	if err != nil {
		f.Close()
		if created {
			os.Remove(path)
		}
		return nil, err
	}
	return d, nil
}

// setup locks, sizes and validates a freshly opened file.
func setup(f *os.File, path string, opts Options) (d *File, _ error) {
	fd := f.Fd()
	how := unix.LOCK_EX
	if opts.ReadOnly {
		how = unix.LOCK_SH
	}
	if !opts.NoLock {
		if err := unix.Flock(int(fd), how|unix.LOCK_NB); err != nil {
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("device %s: %w", path, ErrLocked)
			}
			return nil, fmt.Errorf("device %s: flock: %w", path, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(fd), &st); err != nil {
		return nil, fmt.Errorf("device %s: stat: %w", path, err)
	}
	var size int64
	var backing *os.File
	defer func() {
		if backing != nil && d == nil {
			backing.Close()
		}
	}()
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		size = st.Size
		if opts.Create && size < opts.Size {
			if err := extend(f, size, opts.Size, opts.Prealloc, opts.Progress); err != nil {
				return nil, fmt.Errorf("device %s: %w", path, err)
			}
			size = opts.Size
		}
	case unix.S_IFBLK:
		var err error
		if size, err = blockDeviceSize(fd); err != nil {
			return nil, fmt.Errorf("device %s: %w", path, err)
		}
		if !opts.NoLock {
			if backing, err = lockBacking(int(fd), st.Rdev, how); err != nil {
				return nil, fmt.Errorf("device %s: %w", path, err)
			}
		}
	default:
		return nil, fmt.Errorf("device %s: mode %#o: %w", path, st.Mode&unix.S_IFMT, ErrNotDevice)
	}
	if size < opts.MinSize {
		return nil, fmt.Errorf("device %s: %d bytes, need at least %d: %w", path, size, opts.MinSize, ErrTooSmall)
	}
	d = &File{f: f, fd: fd, size: size, readOnly: opts.ReadOnly, backing: backing}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && !opts.ReadOnly && !opts.NoZeroAhead {
		reg := opts.Accounting
		if reg == nil {
			reg = accounting.Default
		}
		d.zero = newZeroAhead(fd, size, reg.Layer("device").Counter("zero-ahead-regions"))
	}
	return d, nil
}

// blockDeviceSize asks the kernel for a block device's size in bytes
// (x/sys has no 64-bit ioctl getter, hence the raw call).
func blockDeviceSize(fd uintptr) (int64, error) {
	var size uint64
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, unix.BLKGETSIZE64, uintptr(unsafe.Pointer(&size)))
	if errno != 0 {
		return 0, fmt.Errorf("BLKGETSIZE64: %w", errno)
	}
	return int64(size), nil
}

// ReadAt reads len(p) bytes at off; a short read is an error.
func (d *File) ReadAt(p []byte, off int64) (int, error) {
	if d.closed.Load() {
		return 0, ErrClosed
	}
	if err := checkRange(off, len(p), d.size); err != nil {
		return 0, err
	}
	n, err := d.f.ReadAt(p, off)
	if err != nil {
		return n, fmt.Errorf("device: read %d bytes at %d: %w", len(p), off, err)
	}
	return n, nil
}

// Prefetch asks the kernel to read [off, off+n) into its page cache
// in the background (posix_fadvise WILLNEED): the call queues the reads
// and returns without waiting for them. Pages already cached cost a
// lookup each. Errors are dropped: it is a hint.
func (d *File) Prefetch(off, n int64) {
	if d.closed.Load() || off >= d.size || n <= 0 {
		return
	}
	n = min(n, d.size-off)
	_ = unix.Fadvise(int(d.fd), off, n, unix.FADV_WILLNEED)
}

// WriteAt writes p at off. The data is durable only after Flush.
func (d *File) WriteAt(p []byte, off int64) (int, error) {
	if d.closed.Load() {
		return 0, ErrClosed
	}
	if d.readOnly {
		return 0, ErrReadOnly
	}
	if err := checkRange(off, len(p), d.size); err != nil {
		return 0, err
	}
	if z := d.zero; z != nil && z.left.Load() > 0 {
		if err := z.prepare(off, int64(len(p)), false, nil); err != nil {
			return 0, err
		}
	}
	n, err := d.f.WriteAt(p, off)
	if err != nil {
		return n, fmt.Errorf("device: write %d bytes at %d: %w", len(p), off, err)
	}
	return n, nil
}

// ZeroAhead implements ZeroAheader: the next write to [off, off+n), which
// the caller will flush soon, finds plain written blocks on the host.
func (d *File) ZeroAhead(off, n int64) error {
	if d.closed.Load() {
		return ErrClosed
	}
	if err := checkRange(off, int(n), d.size); err != nil {
		return err
	}
	if z := d.zero; z != nil && z.left.Load() > 0 && !d.readOnly {
		return z.prepare(off, n, true, d.writeZeros)
	}
	return nil
}

func (d *File) writeZeros(off, end int64) error { return writeZeros(d.fd, off, end) }

// ZeroAheadStats reports the regions zero-ahead has written since Open
// and those still unwritten and never written (see ZeroRegion).
func (d *File) ZeroAheadStats() (zeroed, unwritten int64) {
	if z := d.zero; z != nil {
		return z.zeroed.Load(), z.left.Load()
	}
	return 0, 0
}

// Flush makes every completed write durable (fdatasync).
func (d *File) Flush() error {
	if d.closed.Load() {
		return ErrClosed
	}
	if d.readOnly {
		return nil
	}
	if err := unix.Fdatasync(int(d.fd)); err != nil {
		return fmt.Errorf("device: fdatasync: %w", err)
	}
	return nil
}

// Size is the device size in bytes, fixed at Open.
func (d *File) Size() int64 { return d.size }

// Fd is the descriptor, for zero-copy reads (fuse.ReadResultFd). It stays
// valid until Close.
func (d *File) Fd() uintptr { return d.fd }

// Close releases the lock and the descriptor. It does not flush.
func (d *File) Close() error {
	if d.closed.Swap(true) {
		return ErrClosed
	}
	err := d.f.Close()
	if d.backing != nil {
		d.backing.Close()
	}
	if err != nil {
		return fmt.Errorf("device: close: %w", err)
	}
	return nil
}

// isBlock reports whether path is a block device now; Open fstats what it
// opened in any case.
func isBlock(path string) bool {
	var st unix.Stat_t
	return unix.Stat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK
}

// Prealloc is how an image file's new bytes get their blocks on the host
// filesystem (the modes of qemu-img's preallocation).
type Prealloc uint8

const (
	// PreallocFalloc allocates the blocks at once (fallocate): a host
	// without the room refuses the image now (ENOSPC) instead of failing
	// writes under a mounted volume. Where the host filesystem cannot
	// (EOPNOTSUPP), the file is extended sparse.
	PreallocFalloc Prealloc = iota
	// PreallocOff extends the file sparse: the host allocates as the
	// volume writes, and may run out of space then.
	PreallocOff
	// PreallocFull allocates the blocks and writes zeros over them. It
	// takes a write of the whole size, but the blocks are then plain
	// written blocks: the host has nothing to allocate or convert (an
	// allocated block is "unwritten" until first written) when the volume
	// writes, so an fdatasync commits nothing of the host's own (zero-ahead
	// gets the same on fallocated blocks, a region at a time; figures in
	// docs/PERFORMANCE.md, "Preallocation, zero-ahead and one flush per
	// commit").
	PreallocFull
)

func (p Prealloc) String() string {
	switch p {
	case PreallocFalloc:
		return "falloc"
	case PreallocOff:
		return "off"
	case PreallocFull:
		return "full"
	}
	return fmt.Sprintf("Prealloc(%d)", uint8(p))
}

// ParsePrealloc returns the Prealloc a String gives, for flags.
func ParsePrealloc(s string) (Prealloc, error) {
	for _, p := range []Prealloc{PreallocFalloc, PreallocOff, PreallocFull} {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("want falloc, full or off")
}

// zeroChunk is how much PreallocFull writes per call.
const zeroChunk = 1 << 20

// extend grows an image file from size to want bytes, allocating the new
// range as p says.
func extend(f *os.File, size, want int64, p Prealloc, progress func(done, total int64)) error {
	if p != PreallocOff {
		// Without fallocate (EOPNOTSUPP) falloc leaves the file sparse;
		// full still allocates, by writing.
		err := unix.Fallocate(int(f.Fd()), 0, size, want-size)
		if err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("allocate %d bytes: %w", want-size, err)
		}
	}
	if p == PreallocFull {
		zeros := make([]byte, zeroChunk)
		for off := size; off < want; off += zeroChunk {
			if _, err := f.WriteAt(zeros[:min(zeroChunk, want-off)], off); err != nil {
				return fmt.Errorf("write zeros: %w", err)
			}
			if done := min(off+zeroChunk, want) - size; progress != nil && (done%(64*zeroChunk) == 0 || done == want-size) {
				progress(done, want-size)
			}
		}
	}
	return f.Truncate(want)
}
