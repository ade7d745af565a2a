package alloc

import (
	"fmt"
	"sync"

	"github.com/smallfs/smallfs/internal/invariants"
)

// Allocator manages the free space of one device, in blocks. It is safe for
// concurrent use: one mutex serialises every method (see "Locking").
type Allocator struct {
	opts     Options
	capacity uint64

	mu      sync.Mutex
	free    space
	pending pending
	nodes   *nodeList // emptied nodes, shared by the indexes (sets.go)
	stats   counters
	meter   meter
	closed  bool

	// Compaction (see compact.go). autoAt is Options.CompactExtents, or
	// MaxUint64 when automatic compaction is off; wg counts the running
	// compaction, for Close.
	compaction     *compaction
	starting       *compaction // begun under the mutex, to run once it is released
	autoAt         uint64
	swapOps        int
	compactions    uint64
	lastCompaction Compaction
	wg             sync.WaitGroup
}

// checkRange validates an extent given by a caller.
func (a *Allocator) checkRange(e Extent) error {
	if e.Len == 0 {
		return fmt.Errorf("%w: %v", ErrZeroLength, e)
	}
	if e.Off >= a.capacity || e.Len > a.capacity-e.Off {
		return fmt.Errorf("%w: %v on a device of %d blocks", ErrOutOfRange, e, a.capacity)
	}
	return nil
}

// Capacity returns the size of the device in blocks.
func (a *Allocator) Capacity() uint64 { return a.capacity }

// Alloc returns one free extent of min to want blocks, placed near hint (a
// block number; past the end means the last block), and marks it used. It
// returns ErrNoSpace when no free extent holds min blocks: it never fails
// while one does. See "The near search" in doc.go for where it looks.
func (a *Allocator) Alloc(hint, want, min uint64) (Extent, error) {
	if want == 0 || min == 0 {
		return Extent{}, fmt.Errorf("alloc want %d min %d: %w", want, min, ErrZeroLength)
	}
	if min > want {
		return Extent{}, fmt.Errorf("alloc want %d min %d: %w", want, min, ErrMinAboveWant)
	}
	hint = clampHint(hint, a.capacity)
	a.mu.Lock()
	defer a.unlock()
	var c cost
	p, ok := a.free.near(hint, want, min, a.opts.WindowExtents, a.opts.WindowBlocks, &c)
	a.stats.record(c, p, ok, hint, a.opts.WindowBlocks)
	if !ok {
		a.meter.enospc.Inc()
		largest, _ := a.free.bySize.largest()
		return Extent{}, fmt.Errorf("alloc want %d min %d: largest free extent has %d blocks: %w",
			want, min, largest.Len, ErrNoSpace)
	}
	a.free.carve(p.from, p.p)
	a.account(false)
	a.maybeCompact()
	return p.p, nil
}

func clampHint(hint, capacity uint64) uint64 {
	if hint >= capacity {
		return capacity - 1
	}
	return hint
}

// Free returns e to free space at once. Use FreeDeferred for space whose
// release must wait for a commit.
func (a *Allocator) Free(e Extent) error {
	if err := a.checkRange(e); err != nil {
		return fmt.Errorf("free: %w", err)
	}
	a.mu.Lock()
	defer a.unlock()
	if err := a.checkNotPending(e); err != nil {
		return fmt.Errorf("free: %w", err)
	}
	if f, ok := a.free.add(e); !ok {
		return fmt.Errorf("free: %w: %v overlaps free %v", ErrDoubleFree, e, f)
	}
	a.account(false)
	a.maybeCompact()
	return nil
}

// FreeDeferred frees e under commit epoch: e stays unallocatable until
// Commit is called with an epoch >= epoch, so that blocks freed by a
// transaction are not overwritten before the transaction is durable.
func (a *Allocator) FreeDeferred(e Extent, epoch uint64) error {
	if err := a.checkRange(e); err != nil {
		return fmt.Errorf("free deferred: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.checkUsed(e); err != nil {
		return fmt.Errorf("free deferred: %w", err)
	}
	a.pending.add(e, epoch)
	a.account(false)
	return nil
}

// checkUsed returns ErrDoubleFree if part of e is free or pending.
func (a *Allocator) checkUsed(e Extent) error {
	if f, ok := a.free.byOff.overlapping(e); ok {
		return fmt.Errorf("%w: %v overlaps free %v", ErrDoubleFree, e, f)
	}
	return a.checkNotPending(e)
}

// checkNotPending returns ErrDoubleFree if part of e is pending.
func (a *Allocator) checkNotPending(e Extent) error {
	if a.pending.set.len() == 0 {
		return nil
	}
	if f, ok := a.pending.set.overlapping(e); ok {
		return fmt.Errorf("%w: %v overlaps %v freed under epoch %d", ErrDoubleFree, e, f, a.pending.epochOf(f))
	}
	return nil
}

// Commit declares epoch durable: extents freed under epochs <= epoch become
// allocatable.
func (a *Allocator) Commit(epoch uint64) {
	a.mu.Lock()
	defer a.unlock()
	a.pending.release(epoch, func(e Extent) {
		if f, ok := a.free.add(e); !ok && invariants.Enabled {
			panic(fmt.Sprintf("alloc: pending %v overlaps free %v", e, f))
		}
	})
	a.account(false)
	a.maybeCompact()
}

// Reserve marks e, which must be free, as used: a replay puts an extent
// back exactly where the log says it was.
func (a *Allocator) Reserve(e Extent) error {
	if err := a.checkRange(e); err != nil {
		return fmt.Errorf("reserve: %w", err)
	}
	a.mu.Lock()
	defer a.unlock()
	f, ok := a.free.byOff.atOrBefore(e.Off)
	if !ok || !f.contains(e) {
		return fmt.Errorf("reserve: %w: %v", ErrNotFree, e)
	}
	a.free.carve(f, e)
	a.account(false)
	a.maybeCompact()
	return nil
}
