package device

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"sync"
)

// SectorSize is the unit a simulated power cut tears writes at: a sector is
// written whole or not at all, as on real disks.
const SectorSize = 512

// CrashMode says what a simulated power cut does to the writes completed
// since the last Flush ("unflushed" below). Flushed writes always survive.
type CrashMode uint8

const (
	// DropUnflushed loses every unflushed write.
	DropUnflushed CrashMode = iota
	// KeepPrefix keeps a random prefix of them, in completion order.
	KeepPrefix
	// KeepSubset keeps a random subset: a later write may survive an
	// earlier one (the disk reordered its cache).
	KeepSubset
	// TearOne keeps a random prefix and then part of the next write: a
	// random proper subset of its sectors (a write inside one sector is
	// lost whole). There is always a torn write if anything is unflushed.
	TearOne
	// KeepUnflushed keeps them all (power failed after the disk caught up).
	KeepUnflushed
	numCrashModes
)

// CrashModes lists every mode, for tests that try them all.
var CrashModes = []CrashMode{DropUnflushed, KeepPrefix, KeepSubset, TearOne, KeepUnflushed}

func (m CrashMode) String() string {
	switch m {
	case DropUnflushed:
		return "drop-unflushed"
	case KeepPrefix:
		return "keep-prefix"
	case KeepSubset:
		return "keep-subset"
	case TearOne:
		return "tear-one"
	case KeepUnflushed:
		return "keep-unflushed"
	}
	return fmt.Sprintf("crash-mode(%d)", uint8(m))
}

// CrashDevice is an in-memory Device that knows what a power cut would keep.
// Reads see every completed write; Crash returns the image a machine would
// find after losing power now. Results are deterministic for a given seed and
// sequence of calls. All methods are serialised by one mutex: it is a test
// device, and the order writes complete in is part of what it records.
type CrashDevice struct {
	seed int64

	mu      sync.Mutex
	cur     []byte  // what reads see
	durable []byte  // what survives any crash
	pending []write // unflushed writes, in completion order
	flushes int
	crashes uint64
	hist    *history // nil unless KeepHistory was called
	closed  bool
}

type write struct {
	off  int64
	data []byte
}

// history is what CrashAt rebuilds images from: the durable image when
// KeepHistory was called and the writes each later Flush made durable.
type history struct {
	base    []byte
	batches [][]write
}

var _ Device = (*CrashDevice)(nil)

// NewCrash returns a zeroed crash-simulating device of size bytes.
func NewCrash(size int64, seed int64) *CrashDevice {
	return NewCrashFrom(make([]byte, size), seed)
}

// NewCrashFrom returns a crash-simulating device whose durable content is
// img (for example a Mem's image after an earlier crash); it takes ownership.
func NewCrashFrom(img []byte, seed int64) *CrashDevice {
	return &CrashDevice{seed: seed, durable: img, cur: append([]byte(nil), img...)}
}

func (c *CrashDevice) ReadAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, ErrClosed
	}
	if err := checkRange(off, len(p), int64(len(c.cur))); err != nil {
		return 0, err
	}
	return copy(p, c.cur[off:]), nil
}

func (c *CrashDevice) WriteAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, ErrClosed
	}
	if err := checkRange(off, len(p), int64(len(c.cur))); err != nil {
		return 0, err
	}
	copy(c.cur[off:], p)
	c.pending = append(c.pending, write{off: off, data: append([]byte(nil), p...)})
	return len(p), nil
}

// Flush makes every completed write durable.
func (c *CrashDevice) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	for _, w := range c.pending {
		copy(c.durable[w.off:], w.data)
	}
	if c.hist != nil {
		c.hist.batches = append(c.hist.batches, c.pending)
	}
	c.pending = nil
	c.flushes++
	return nil
}

func (c *CrashDevice) Size() int64 { return int64(len(c.durable)) }

// Close closes the device for I/O; Crash and CrashAt keep working, so a test
// can look at what a clean close left behind.
func (c *CrashDevice) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.closed = true
	return nil
}

// Flushes counts the Flush calls so far.
func (c *CrashDevice) Flushes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushes
}

// Unflushed counts the writes a crash now could lose.
func (c *CrashDevice) Unflushed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// Crash returns the image after a power cut now, as a new open Mem. The
// device itself is unchanged and can go on (or crash again differently).
func (c *CrashDevice) Crash(mode CrashMode) (*Mem, error) {
	if mode >= numCrashModes {
		return nil, fmt.Errorf("crash device: %v: %w", mode, fs.ErrInvalid)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crashes++
	rng := rand.New(rand.NewPCG(uint64(c.seed), c.crashes))
	img := append([]byte(nil), c.durable...)
	survive(img, c.pending, mode, rng)
	return NewMemFrom(img), nil
}

// KeepHistory starts recording every write, so CrashAt can rebuild the
// image at any later flush point. It costs memory for all data written.
func (c *CrashDevice) KeepHistory() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hist == nil {
		c.hist = &history{base: append([]byte(nil), c.durable...)}
	}
}

// FlushPoints is the number of Flush calls since KeepHistory; CrashAt
// accepts points 0 through FlushPoints().
func (c *CrashDevice) FlushPoints() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hist == nil {
		return 0
	}
	return len(c.hist.batches)
}

// CrashAt returns the image of a power cut just after flush point (0 is
// when KeepHistory was called), with the writes that completed before the
// next Flush in flight and treated by mode. Iterating point over
// [0, FlushPoints()] and every mode enumerates the crashes of a workload.
func (c *CrashDevice) CrashAt(point int, mode CrashMode) (*Mem, error) {
	if mode >= numCrashModes {
		return nil, fmt.Errorf("crash device: %v: %w", mode, fs.ErrInvalid)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	img, inFlight, err := c.imageAt(point)
	if err != nil {
		return nil, err
	}
	// The stream depends on the point and mode only, so a given crash is
	// the same whatever order a test enumerates them in.
	rng := rand.New(rand.NewPCG(uint64(c.seed), 1<<63|uint64(point)<<8|uint64(mode)))
	survive(img, inFlight, mode, rng)
	return NewMemFrom(img), nil
}

// InFlight is the number of writes in flight at flush point: those
// CrashAt treats by its mode, and CrashAfter keeps a prefix of.
func (c *CrashDevice) InFlight(point int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkPoint(point); err != nil {
		return 0, err
	}
	if point < len(c.hist.batches) {
		return len(c.hist.batches[point]), nil
	}
	return len(c.pending), nil
}

// CrashAfter returns the image of a power cut just after flush point with
// exactly the first keep writes in flight on the device, in completion
// order, and with torn the next one torn (a random proper subset of its
// sectors, as TearOne). Iterating keep over [0, InFlight(point)] crashes
// after every write.
func (c *CrashDevice) CrashAfter(point, keep int, torn bool) (*Mem, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img, inFlight, err := c.imageAt(point)
	if err != nil {
		return nil, err
	}
	if keep < 0 || keep > len(inFlight) || torn && keep == len(inFlight) {
		return nil, fmt.Errorf("crash device: %d of %d writes in flight (torn %v): %w", keep, len(inFlight), torn, ErrOutOfRange)
	}
	survive(img, inFlight[:keep], KeepUnflushed, nil)
	if torn {
		tear(img, inFlight[keep], rand.New(rand.NewPCG(uint64(c.seed), uint64(point)<<20|uint64(keep))))
	}
	return NewMemFrom(img), nil
}

// imageAt is the durable image at flush point and the writes in flight
// there (c.mu held).
func (c *CrashDevice) imageAt(point int) ([]byte, []write, error) {
	if err := c.checkPoint(point); err != nil {
		return nil, nil, err
	}
	img := append([]byte(nil), c.hist.base...)
	for _, b := range c.hist.batches[:point] {
		survive(img, b, KeepUnflushed, nil)
	}
	if point < len(c.hist.batches) {
		return img, c.hist.batches[point], nil
	}
	return img, c.pending, nil
}

// checkPoint reports a flush point CrashAt cannot rebuild (c.mu held).
func (c *CrashDevice) checkPoint(point int) error {
	if c.hist == nil {
		return fmt.Errorf("crash device: a crash at a flush point without KeepHistory: %w", errors.ErrUnsupported)
	}
	if point < 0 || point > len(c.hist.batches) {
		return fmt.Errorf("crash device: flush point %d outside [0, %d]: %w", point, len(c.hist.batches), ErrOutOfRange)
	}
	return nil
}

// survive applies to img the part of ws that mode keeps.
func survive(img []byte, ws []write, mode CrashMode, rng *rand.Rand) {
	keep := len(ws)
	switch mode {
	case DropUnflushed:
		keep = 0
	case KeepPrefix:
		keep = rng.IntN(len(ws) + 1)
	case TearOne:
		if len(ws) > 0 {
			keep = rng.IntN(len(ws)) // ws[keep] is the torn one
		}
	case KeepSubset:
		for _, w := range ws {
			if rng.IntN(2) == 0 {
				copy(img[w.off:], w.data)
			}
		}
		return
	}
	for _, w := range ws[:keep] {
		copy(img[w.off:], w.data)
	}
	if mode == TearOne && keep < len(ws) {
		tear(img, ws[keep], rng)
	}
}

// tear writes a random proper subset of w's sectors (aligned to the device,
// not to w) into img. A write within one sector is atomic, so it is lost.
func tear(img []byte, w write, rng *rand.Rand) {
	end := w.off + int64(len(w.data))
	first, last := w.off/SectorSize, (end-1)/SectorSize
	n := int(last - first + 1)
	if n < 2 {
		return
	}
	kept, dropped := rng.IntN(n), rng.IntN(n-1)
	if dropped >= kept {
		dropped++
	}
	for i := range n {
		if i != kept && (i == dropped || rng.IntN(2) == 0) {
			continue
		}
		lo := max((first+int64(i))*SectorSize, w.off)
		hi := min((first+int64(i)+1)*SectorSize, end)
		copy(img[lo:hi], w.data[lo-w.off:hi-w.off])
	}
}
