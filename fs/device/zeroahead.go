package device

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/smallfs/smallfs/accounting"
)

// Zero-ahead: an image file whose blocks came from fallocate holds them
// "unwritten" on the host. They read as zeros, and the first write into one
// makes the host filesystem convert it, a change of its own metadata that
// the next fdatasync must commit through the host's journal. Written a few
// blocks per commit at scattered places, every fsync pays that: an
// fdatasync after writes into unwritten blocks takes nearly twice as long
// as one after writes into written blocks (figures in docs/PERFORMANCE.md,
// "Preallocation, zero-ahead and one flush per commit"). So a caller
// about to write what it will flush at once (the log, an fsync-ed file)
// calls ZeroAhead first, and a region of ZeroRegion bytes that the host
// holds unwritten end to end gets zeros over all of it: the host converts
// once per region, and later commits there write plain blocks, as on an
// image made with --preallocate full, without writing the whole image at
// mkfs. Other writes leave the conversion to the host's own write-back,
// where it costs nothing a caller waits for, while zeros cost a second
// copy into the page cache (64 KiB creates without fsync ran markedly
// slower with every write zeroing ahead). A region written without zeros is
// never zeroed afterwards. Holes (a sparse image) are left alone: sparse
// was asked for.

// ZeroAheader is a Device that can have the host convert its unwritten
// blocks a region at a time before a write that will be flushed soon
// (File; Tracked passes it on).
type ZeroAheader interface {
	// ZeroAhead writes zeros over each region [off, off+n) touches that
	// the host still holds unwritten, unless [off, off+n) covers it.
	ZeroAhead(off, n int64) error
}

// ZeroRegion is the unit zero-ahead writes: 256 blocks of 4 KiB, about a
// millisecond of writing into the page cache, paid once per region.
const ZeroRegion = 1 << 20

// zeroVec is the buffer a region's zeros are written from, repeated in one
// pwritev.
var zeroVec = make([]byte, 64<<10)

// Region states.
const (
	regionReady     uint8 = iota // written (or not ours to zero): write at once
	regionUnwritten              // unwritten end to end: zero before the first write
	regionZeroing                // being zeroed: writers wait
)

// zeroAhead tracks which regions still need their zeros. mu guards state;
// left lets WriteAt skip the lock once every region is ready.
type zeroAhead struct {
	size   int64
	mu     sync.Mutex
	cond   sync.Cond
	state  []uint8
	left   atomic.Int64
	zeroed atomic.Int64 // regions zeroed since Open
	ctr    *accounting.Counter
}

// newZeroAhead reads the host's map of fd (after syncing it, so data still
// in the page cache is not taken for unwritten space) and returns the
// tracker, or nil when no region is unwritten or the host cannot tell
// (no FIEMAP: tmpfs, some network filesystems).
// ctr counts the regions it zeroes, for stats.
func newZeroAhead(fd uintptr, size int64, ctr *accounting.Counter) *zeroAhead {
	regions := (size + ZeroRegion - 1) / ZeroRegion
	z := &zeroAhead{size: size, state: make([]uint8, regions), ctr: ctr}
	z.cond.L = &z.mu
	n := int64(0)
	err := unwrittenExtents(fd, size, func(off, length int64) {
		// Only regions inside the extent: a region with written blocks
		// must not be zeroed over them.
		for r := (off + ZeroRegion - 1) / ZeroRegion; r < regions && min((r+1)*ZeroRegion, size) <= off+length; r++ {
			if z.state[r] != regionUnwritten {
				z.state[r] = regionUnwritten
				n++
			}
		}
	})
	if err != nil || n == 0 {
		return nil
	}
	z.left.Store(n)
	return z
}

// prepare makes every region [off, off+n) touches ready for a write.
// With zero it zeroes the unwritten ones with write (called with the
// region's byte range), unless [off, off+n) covers one whole; without, it
// only marks them ready, so they are never zeroed over the data to come.
// Writers into a region being zeroed wait for it.
func (z *zeroAhead) prepare(off, n int64, zero bool, write func(off, end int64) error) error {
	for r := off / ZeroRegion; r*ZeroRegion < off+n && r < int64(len(z.state)); r++ {
		z.mu.Lock()
		for z.state[r] == regionZeroing {
			z.cond.Wait()
		}
		if z.state[r] == regionReady {
			z.mu.Unlock()
			continue
		}
		start, end := r*ZeroRegion, min((r+1)*ZeroRegion, z.size)
		if !zero || off <= start && off+n >= end {
			z.state[r] = regionReady
			z.left.Add(-1)
			z.mu.Unlock()
			continue
		}
		z.state[r] = regionZeroing
		z.mu.Unlock()
		err := write(start, end)
		z.mu.Lock()
		if err != nil { // still all zeros where written: try again next time
			z.state[r] = regionUnwritten
		} else {
			z.state[r] = regionReady
			z.left.Add(-1)
			z.zeroed.Add(1)
			z.ctr.Inc()
		}
		z.cond.Broadcast()
		z.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeZeros writes zeros over [off, end) of fd in one pwritev.
func writeZeros(fd uintptr, off, end int64) error {
	var iov [][]byte
	for at := off; at < end; at += int64(len(zeroVec)) {
		iov = append(iov, zeroVec[:min(int64(len(zeroVec)), end-at)])
	}
	for len(iov) > 0 {
		n, err := unix.Pwritev(int(fd), iov, off)
		if err != nil {
			return fmt.Errorf("device: zero-ahead write of %d bytes at %d: %w", end-off, off, err)
		}
		off += int64(n)
		for n > 0 && len(iov) > 0 { // a short write: go on after it
			k := min(n, len(iov[0]))
			iov[0], n = iov[0][k:], n-k
			if len(iov[0]) == 0 {
				iov = iov[1:]
			}
		}
	}
	return nil
}

// FIEMAP, which x/sys does not wrap: <linux/fiemap.h>.
const (
	fsIocFiemap        = 0xC020660B // _IOWR('f', 11, struct fiemap)
	fiemapFlagSync     = 0x1
	fiemapExtentLast   = 0x1
	fiemapExtentUnwrit = 0x800
	fiemapBatch        = 256
)

type fiemapHeader struct {
	Start, Length                    uint64
	Flags, Mapped, Count, reserved32 uint32
}

type fiemapExtent struct {
	Logical, Physical, Length uint64
	reserved64                [2]uint64
	Flags                     uint32
	reserved32                [3]uint32
}

// unwrittenExtents calls fn for every extent of fd in [0, size) that the
// host reports unwritten.
func unwrittenExtents(fd uintptr, size int64, fn func(off, length int64)) error {
	type request struct {
		h fiemapHeader
		e [fiemapBatch]fiemapExtent
	}
	req := new(request)
	for start := uint64(0); start < uint64(size); {
		req.h = fiemapHeader{Start: start, Length: uint64(size) - start, Flags: fiemapFlagSync, Count: fiemapBatch}
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, fsIocFiemap, uintptr(unsafe.Pointer(req))); errno != 0 {
			return errno
		}
		if req.h.Mapped == 0 {
			return nil
		}
		for _, e := range req.e[:req.h.Mapped] {
			if e.Flags&fiemapExtentUnwrit != 0 {
				fn(int64(e.Logical), int64(e.Length))
			}
			start = e.Logical + e.Length
			if e.Flags&fiemapExtentLast != 0 {
				return nil
			}
		}
	}
	return nil
}
