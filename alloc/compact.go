package alloc

import (
	"fmt"
	"iter"
	"sync/atomic"
	"time"

	"github.com/smallfs/smallfs/internal/invariants"
)

// A compaction rebuilds both indexes densely without holding the mutex for
// the rebuild; see "Memory and compaction" in doc.go for the phases.

const (
	// defaultSwapOps is how few recorded mutations a compaction replays
	// under the mutex, at the swap; longer logs are replayed outside it
	// first, in rounds. A replayed mutation costs 2-4 descents.
	defaultSwapOps = 256
	// maxRounds bounds the rounds replayed outside the mutex: should the
	// callers outpace the replay, the last round replays what is left
	// under the mutex rather than chase them forever.
	maxRounds = 16
)

// Compaction describes one compaction of the free-space indexes.
type Compaction struct {
	Extents   uint64        // free extents in the indexes when they were cloned
	Replayed  uint64        // mutations made meanwhile, replayed onto the new indexes
	SwapOps   uint64        // of which replayed under the mutex, at the swap
	Rounds    int           // rounds of replay outside the mutex
	CloneHold time.Duration // mutex held to clone both indexes and start the log
	Build     time.Duration // building the new indexes, mutex not held
	CatchUp   time.Duration // replaying rounds, mutex not held
	SwapHold  time.Duration // mutex held for the last replay and the swap
}

// phase names a point of a compaction where a test hook runs, with the
// mutex not held.
type phase int

const (
	phaseCloned   phase = iota // before the build
	phaseBuilt                 // before the first round
	phaseCaughtUp              // after a round replayed outside the mutex
)

// compaction is the state of one compaction. log and figs.SwapHold are
// guarded by the Allocator's mutex; cancel is atomic; the rest belongs to
// the goroutine that runs it until done is closed.
type compaction struct {
	off    offSet  // clones of the indexes, read by the build only
	size   sizeSet //
	blocks uint64  // free blocks at the clone
	log    []op    // mutations since the clone; the live space appends
	spare  []op    // the previous round's log, reused
	figs   Compaction
	err    error
	done   chan struct{} // closed when the compaction has ended
	cancel atomic.Bool
	hook   func(phase) // tests only
}

// Compact rebuilds both free-space indexes densely (see "Memory and
// compaction" in doc.go) and returns its figures. The mutex is held only to
// clone the indexes and to swap the new ones in; Alloc and Free go on
// meanwhile. If a compaction is running already, Compact waits for it and
// returns its figures. It returns ErrClosed, and changes nothing, if the
// Allocator is closed before or while it runs.
func (a *Allocator) Compact() (Compaction, error) { return a.compactWith(nil) }

// compactWith is Compact with a hook run at each phase (tests).
func (a *Allocator) compactWith(hook func(phase)) (Compaction, error) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return Compaction{}, fmt.Errorf("compact: %w", ErrClosed)
	}
	c := a.compaction
	if c == nil {
		c = a.startCompaction(hook)
		a.mu.Unlock()
		a.runCompaction(c)
	} else {
		a.mu.Unlock()
		<-c.done
	}
	if c.err != nil {
		return c.figs, fmt.Errorf("compact: %w", c.err)
	}
	return c.figs, nil
}

// maybeCompact starts a compaction in the background once the size index
// has seen as many removals as it holds extents (the population has
// turned over) and holds at least Options.CompactExtents (a.mu held).
func (a *Allocator) maybeCompact() {
	if a.free.bySize.removals < a.autoAt || a.compaction != nil || a.closed {
		return
	}
	if n := uint64(a.free.extents()); n < a.autoAt || a.free.bySize.removals < n {
		return
	}
	go a.runCompaction(a.startCompaction(nil))
}

// startCompaction clones both indexes and starts recording the mutations
// of free space (a.mu held).
func (a *Allocator) startCompaction(hook func(phase)) *compaction {
	t := time.Now()
	c := &compaction{
		off:    offSet{a.free.byOff.clone()},
		size:   sizeSet{keySet: a.free.bySize.clone()},
		blocks: a.free.blocks,
		done:   make(chan struct{}),
		hook:   hook,
	}
	c.figs.Extents = uint64(a.free.extents())
	a.free.log = &c.log
	a.compaction = c
	a.wg.Add(1)
	c.figs.CloneHold = time.Since(t)
	return c
}

// runCompaction builds new indexes from the clones, catches up with the
// recorded mutations and swaps the new indexes in.
func (a *Allocator) runCompaction(c *compaction) {
	defer a.wg.Done()
	defer close(c.done)
	bytes := int64(c.figs.Extents) * extentBytes
	a.meter.compaction.Alloc(bytes)
	defer a.meter.compaction.Free(bytes)

	c.at(phaseCloned)
	t := time.Now()
	ns := space{blocks: c.blocks}
	built := ns.fill(c.off.keys(), c.size.keys(), &c.cancel)
	c.off, c.size = offSet{}, sizeSet{}
	c.figs.Build = time.Since(t)
	if !built {
		c.err = a.abortCompaction()
		return
	}
	c.at(phaseBuilt)
	for {
		a.mu.Lock()
		if c.cancel.Load() {
			a.mu.Unlock()
			c.err = a.abortCompaction()
			return
		}
		ops := c.log
		if len(ops) <= a.swapOps || c.figs.Rounds == maxRounds {
			a.swapIn(c, &ns, ops)
			a.mu.Unlock()
			return
		}
		c.log = c.spare[:0]
		a.mu.Unlock()
		t := time.Now()
		ns.replay(ops)
		c.spare = ops
		c.figs.CatchUp += time.Since(t)
		c.figs.Replayed += uint64(len(ops))
		c.figs.Rounds++
		c.at(phaseCaughtUp)
	}
}

func (c *compaction) at(p phase) {
	if c.hook != nil {
		c.hook(p)
	}
}

// swapIn replays the last mutations onto ns and makes it the free space
// (a.mu held).
func (a *Allocator) swapIn(c *compaction, ns *space, ops []op) {
	t := time.Now()
	ns.replay(ops)
	if invariants.Enabled {
		a.free.mustEqual(ns)
	}
	a.free = *ns
	a.compaction = nil
	c.figs.Replayed += uint64(len(ops))
	c.figs.SwapOps = uint64(len(ops))
	c.figs.SwapHold = time.Since(t)
	a.compactions++
	a.lastCompaction = c.figs
}

// abortCompaction stops recording and leaves the indexes as they are.
func (a *Allocator) abortCompaction() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.free.log = nil
	a.compaction = nil
	return ErrClosed
}

// mustEqual panics unless s and t hold the same extents (invariants).
func (s *space) mustEqual(t *space) {
	if s.blocks != t.blocks || s.extents() != t.extents() || t.bySize.len() != t.byOff.len() {
		panic(fmt.Sprintf("alloc: compaction built %d extents of %d blocks, free space has %d of %d",
			t.extents(), t.blocks, s.extents(), s.blocks))
	}
	next, stop := iter.Pull(t.byOff.all())
	defer stop()
	for e := range s.byOff.all() {
		if f, ok := next(); !ok || f != e {
			panic(fmt.Sprintf("alloc: compaction built %v where free space has %v", f, e))
		}
	}
	for e := range t.bySize.all() {
		if f, ok := t.byOff.atOrBefore(e.Off); !ok || f != e {
			panic(fmt.Sprintf("alloc: compaction built %v in the size index only", e))
		}
	}
}
