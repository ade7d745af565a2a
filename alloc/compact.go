package alloc

import (
	"fmt"
	"iter"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/smallfs/smallfs/internal/invariants"
)

// A compaction rebuilds both indexes densely without holding the mutex for
// the rebuild; see "Memory and compaction" in doc.go for the phases.

const (
	// defaultSwapOps is the most recorded mutations a compaction replays
	// in one hold of the mutex. A replayed mutation costs 2-4 descents.
	defaultSwapOps = 64
	// helpOps is how many recorded mutations each Alloc, Free, Commit or
	// Reserve replays, besides recording its own, while a compaction
	// drains its log under the mutex: the log shrinks by at least one per
	// call however busy the callers are.
	helpOps = 2
	// maxRounds bounds the rounds of replay outside the mutex: each must
	// shrink the log by a quarter, so 32 rounds end with at most 1/10^4
	// of what the build left.
	maxRounds = 32
)

// Compaction describes one compaction of the free-space indexes.
type Compaction struct {
	Extents   uint64        // free extents in the indexes when they were cloned
	Replayed  uint64        // mutations made meanwhile, replayed onto the new indexes
	Drained   uint64        // of which under the mutex: in the drain and at the swap
	Rounds    int           // rounds of replay outside the mutex
	CloneHold time.Duration // mutex held to clone both indexes and start the log
	Build     time.Duration // building the new indexes, mutex not held
	CatchUp   time.Duration // replaying rounds, mutex not held
	MaxHold   time.Duration // longest hold of the mutex after the clone
	SwapHold  time.Duration // mutex held by the last replay and the swap
}

// phase names a point of a compaction where a test hook runs, with the
// mutex not held.
type phase int

const (
	phaseCloned   phase = iota // before the build
	phaseBuilt                 // before the first round
	phaseCaughtUp              // after a round replayed outside the mutex
	phaseDraining              // after a hold of the drain
)

// compaction is the state of one compaction. The Allocator's mutex guards
// log, next and cursor, and figs from the drain on; cancel is atomic; the
// rest belongs to the goroutine that runs it until done is closed.
type compaction struct {
	off    offSet  // clone of the offset index, read by the build only
	size   sizeSet // clone of the size index, read by the build only
	blocks uint64  // free blocks at the clone
	log    []op    // mutations since the clone; the live space appends
	spare  []op    // the previous round's log, reused
	next   *space  // in the drain, the new indexes; nil before
	cursor int     // in the drain, the log's ops replayed so far
	figs   Compaction
	err    error
	done   chan struct{} // closed when the compaction has ended
	cancel atomic.Bool
	hook   func(phase) // tests only
}

// Compact rebuilds both free-space indexes densely (see "Memory and
// compaction" in doc.go) and returns its figures. The mutex is held to
// clone the indexes, to swap the new ones in and, if the callers outpace
// the replay of their changes, for holds of 64 replayed changes between;
// Alloc and Free go on meanwhile. If a compaction is running already, Compact waits for it and
// returns its figures. It returns ErrClosed, and changes nothing, if the
// Allocator is closed before or while it runs.
func (a *Allocator) Compact() (Compaction, error) { return a.compactWith(nil) }

// compactWith is Compact with a hook run at each phase (tests).
func (a *Allocator) compactWith(hook func(phase)) (Compaction, error) {
	c := &compaction{done: make(chan struct{}), hook: hook}
	a.mu.Lock()
	t := time.Now()
	if a.closed {
		a.mu.Unlock()
		return Compaction{}, fmt.Errorf("compact: %w", ErrClosed)
	}
	if running := a.compaction; running != nil {
		a.mu.Unlock()
		<-running.done
		c = running
	} else {
		a.begin(c, t)
		a.mu.Unlock()
		a.runCompaction(c)
	}
	if c.err != nil {
		return c.figs, fmt.Errorf("compact: %w", c.err)
	}
	return c.figs, nil
}

// maybeCompact runs after every change of free space (a.mu held). While
// a compaction drains its log, the caller replays helpOps mutations of it.
// Otherwise it begins a compaction, to run in the background, once the
// size index holds at least Options.CompactExtents extents and has seen
// removals of half as many since it was built (half the population has
// turned over; see "Memory and compaction" for why half).
func (a *Allocator) maybeCompact() {
	if c := a.compaction; c != nil {
		if c.next != nil && a.drain(c, helpOps) {
			a.swapIn(c, time.Now())
		}
		return
	}
	if 2*a.free.bySize.removals < a.autoAt || a.closed {
		return
	}
	if n := uint64(a.free.extents()); n < a.autoAt || 2*a.free.bySize.removals < n {
		return
	}
	t := time.Now() // the hold counts the allocation of c, under the mutex here
	c := &compaction{done: make(chan struct{})}
	a.begin(c, t)
	a.starting = c
}

// unlock releases the mutex and then starts the goroutine of a compaction
// begun under it: waking a processor for it takes tens of microseconds,
// too long to hold the mutex for (docs/PERFORMANCE.md, "Allocator").
func (a *Allocator) unlock() {
	c := a.starting
	a.starting = nil
	a.mu.Unlock()
	if c != nil {
		go a.runCompaction(c)
	}
}

// begin clones both indexes and starts recording the mutations of free
// space; the mutex has been held since t (a.mu held).
func (a *Allocator) begin(c *compaction, t time.Time) {
	c.off = offSet{a.free.byOff.clone()}
	c.size = sizeSet{keySet: a.free.bySize.clone()}
	c.blocks = a.free.blocks
	c.figs.Extents = uint64(a.free.extents())
	a.free.log = &c.log
	a.compaction = c
	a.wg.Add(1)
	c.figs.CloneHold = time.Since(t)
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
	ns := &space{blocks: c.blocks}
	ns.init(a.nodes)
	built := ns.fill(c.off.keys(), c.size.keys(), &c.cancel)
	c.off, c.size = offSet{}, sizeSet{}
	c.figs.Build = time.Since(t)
	if !built {
		c.err = a.abortCompaction(c)
		return
	}
	c.at(phaseBuilt)
	if a.catchUp(c, ns) {
		a.drainAll(c)
	}
}

// catchUp replays the log onto ns in rounds outside the mutex while each
// round shrinks it by a quarter at least, and swaps ns in once few
// mutations are left.
// It returns true, with ns handed to the drain, if the callers outpace the
// rounds.
func (a *Allocator) catchUp(c *compaction, ns *space) (drain bool) {
	last := math.MaxInt
	for {
		a.mu.Lock()
		if c.cancel.Load() {
			a.mu.Unlock()
			c.err = a.abortCompaction(c)
			return false
		}
		ops := c.log
		if len(ops) <= a.swapOps {
			t := time.Now()
			ns.replay(ops)
			c.figs.Replayed += uint64(len(ops))
			c.figs.Drained += uint64(len(ops))
			c.next = ns
			a.swapIn(c, t)
			a.mu.Unlock()
			return false
		}
		if len(ops) > last/4*3 || c.figs.Rounds == maxRounds {
			c.next = ns
			a.mu.Unlock()
			return true
		}
		last = len(ops)
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

// drainAll replays the log under the mutex, swapOps mutations per hold,
// until it or a caller helping with it (maybeCompact) has replayed all and
// swapped the new indexes in.
func (a *Allocator) drainAll(c *compaction) {
	for {
		a.mu.Lock()
		if a.compaction != c { // a caller swapped
			a.mu.Unlock()
			return
		}
		if c.cancel.Load() {
			a.mu.Unlock()
			c.err = a.abortCompaction(c)
			return
		}
		t := time.Now()
		if a.drain(c, a.swapOps) {
			a.swapIn(c, t)
			a.mu.Unlock()
			return
		}
		c.figs.MaxHold = max(c.figs.MaxHold, time.Since(t))
		a.mu.Unlock()
		runtime.Gosched() // let the callers waiting for the mutex in
		c.at(phaseDraining)
	}
}

// drain replays up to n recorded mutations onto the new indexes and
// reports whether none is left (a.mu held).
func (a *Allocator) drain(c *compaction, n int) bool {
	ops := c.log[c.cursor:min(c.cursor+n, len(c.log))]
	c.next.replay(ops)
	c.cursor += len(ops)
	c.figs.Replayed += uint64(len(ops))
	c.figs.Drained += uint64(len(ops))
	return c.cursor == len(c.log)
}

func (c *compaction) at(p phase) {
	if c.hook != nil {
		c.hook(p)
	}
}

// swapIn makes the new indexes, which have replayed the whole log, the
// free space; the mutex has been held since t (a.mu held).
func (a *Allocator) swapIn(c *compaction, t time.Time) {
	if invariants.Enabled {
		a.free.mustEqual(c.next)
	}
	a.free = *c.next
	a.free.log = nil
	// The next turnover counts from here, not from the clone: should the
	// callers have turned the extents over while this compaction ran,
	// the next one would otherwise start at once, and compactions would
	// take all the time (and the copies on write and the replays with them).
	a.free.bySize.removals = 0
	a.compaction = nil
	c.next, c.log, c.spare = nil, nil, nil
	c.figs.SwapHold = time.Since(t)
	c.figs.MaxHold = max(c.figs.MaxHold, c.figs.SwapHold)
	a.compactions++
	a.lastCompaction = c.figs
}

// abortCompaction stops recording and leaves the indexes as they are.
func (a *Allocator) abortCompaction(c *compaction) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.free.log = nil
	a.compaction = nil
	c.next, c.log, c.spare = nil, nil, nil
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
