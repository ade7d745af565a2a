package volume

import (
	"sync/atomic"
	"time"
)

// readGate keeps device blocks that a read may still be reading from
// being allocated again: a ReadPlan hands its caller a device range to
// read after the data lock is gone (a splice, or a read into a buffer),
// and a write-back, punch, truncate or inode free of the same file may
// free those blocks meanwhile. Frees already wait for their commit to be
// durable (space.freeAfter); the gate adds a grace period after that:
// the frees a durable commit covers become allocatable only once every
// read pinned before it has called Done.
//
// That covers every read of a freed block: a read pins while it holds
// the data lock of the file whose extent map it read, and every change
// that drops extents from a file's map takes that lock for writing
// before it appends its transaction (an inode free needs the last open
// gone, and Release takes it too). So the read pinned before the
// transaction that frees its blocks was appended, let alone durable.
//
// Readers count themselves in one of two slots, the one of the current
// epoch (pin: a load and an add; Done: an add, and a load or two). A
// batch of frees made durable is put behind a flip of the epoch, which
// sends new readers to the other slot, and released once the slot the
// readers before the flip used is empty. A flip needs the other slot
// empty first. So a batch goes only after both slots were seen empty,
// one after the other, both times after the batch was made durable:
// every reader pinned before that, which is in one slot or the other, is
// done. The flip is what lets a drain end while new readers come. A
// reader that loaded the epoch before a flip and adds to the stale slot
// after it only delays a drain; it has not yet looked at the extent map,
// so it cannot see blocks freed before.
//
// Each slot is striped by inode number over pinStripes counters, each
// stripe on a cache line of its own: readers of different files touch
// different lines, and readers of one file share one, as they share the
// file's data lock. Seeing a slot empty reads every stripe; one after
// another is enough, as every reader that matters pinned before the
// first read.
//
// Commits, checkpoints and write-backs never wait for a read: they go on
// while one is pinned, and the frees behind it (and behind any later
// commit, which joins the next batch) stay unallocatable until it is
// done. The last reader out of the drained slot releases the batch
// (unpinRead); a durable commit also tries. Only a write short of space
// waits for the reads holding back the frees it needs, and not for long
// (awaitReads).
//
// The epoch, the counts and gated are atomics; the batches are guarded by
// space.mu.
type readGate struct {
	// The epoch and gated, which every read loads, share no cache line
	// with what writers change all the time (space.mu before them, the
	// batches after the stripes), nor with the stripes: lines are 64
	// bytes, and nothing here is aligned to one.
	_     [64]byte
	epoch atomic.Uint64
	// gated is set while a batch waits: the reader that empties the
	// drained slot then releases it. Set before a drain is checked, so
	// that a reader leaving at that moment sees it (unpin).
	gated   atomic.Bool
	_       [pinStripeBytes - 9]byte
	stripes [pinStripes]pinStripe

	next, draining       uint64        // the last sequence of each batch
	hasNext, hasDraining bool          // next: not yet behind a flip; draining: behind the last flip
	released             uint64        // frees up to this sequence are allocatable
	wake                 chan struct{} // closed at the next release, for awaitReads; nil if nobody waits
}

// pinStripes is the number of stripes of the reader counts (a power of
// two): more than the CPUs of most machines running this.
const pinStripes = 64

// pinStripe is one stripe of both slots' reader counts, padded to two
// cache lines: whatever the alignment, no two stripes' counts share one.
type pinStripe struct {
	n [2]atomic.Int64
	_ [pinStripeBytes - 16]byte
}

const pinStripeBytes = 128

// readPin is what a pinned read holds: its stripe and slot.
type readPin uint16

// pin counts a read of inode ino in the current epoch's slot.
func (g *readGate) pin(ino Ino) readPin {
	e := g.epoch.Load() & 1
	i := uint64(ino) % pinStripes
	g.stripes[i].n[e].Add(1)
	return readPin(i<<1 | e)
}

// empty reports whether no reader is counted in slot, stripe by stripe.
func (g *readGate) empty(slot uint64) bool {
	for i := range g.stripes {
		if g.stripes[i].n[slot].Load() != 0 {
			return false
		}
	}
	return true
}

// pinned returns the reads pinned and not yet done.
func (g *readGate) pinned() int64 {
	var n int64
	for i := range g.stripes {
		n += g.stripes[i].n[0].Load() + g.stripes[i].n[1].Load()
	}
	return n
}

// pinRead pins the blocks a read of inode ino is about to read (see
// readGate). The caller holds the data lock of the file whose extents it
// reads.
func (s *space) pinRead(ino Ino) readPin { return s.gate.pin(ino) }

// unpinRead ends a pinned read; the last reader out of a stripe of the
// slot a batch waits for tries to release it.
func (s *space) unpinRead(p readPin) {
	g := &s.gate
	slot := uint64(p & 1)
	if g.stripes[p>>1].n[slot].Add(-1) == 0 && g.gated.Load() && slot != g.epoch.Load()&1 {
		s.mu.Lock()
		seq, ok := s.advance()
		s.mu.Unlock()
		if ok {
			s.commitFrees(seq)
		}
	}
}

// durable makes the frees of transactions up to seq allocatable, once
// every read pinned before now is done.
func (s *space) durable(seq uint64) {
	s.mu.Lock()
	g := &s.gate
	if !g.hasNext || seq > g.next {
		g.next = seq
	}
	g.hasNext = true
	seq, ok := s.advance()
	s.mu.Unlock()
	if ok {
		s.commitFrees(seq)
	}
}

// advance moves the gate on as far as the readers let it: it lets the
// draining batch through once the slot it waits for is empty, and puts
// the next batch behind a flip, letting it through at once if the slot
// the flip leaves is empty too. It returns the sequence up to which the
// frees it let through go, for commitFrees (s.mu held).
func (s *space) advance() (seq uint64, ok bool) {
	g := &s.gate
	for g.hasNext || g.hasDraining {
		g.gated.Store(true)
		e := g.epoch.Load()
		if !g.empty(1 - e&1) {
			return seq, ok // readers of the previous epoch, or stale ones
		}
		if g.hasDraining {
			seq, ok = g.draining, true
			g.hasDraining = false
		}
		if g.hasNext {
			g.epoch.Store(e + 1)
			g.draining, g.hasDraining = g.next, true
			g.hasNext = false
		}
	}
	g.gated.Store(false)
	return seq, ok
}

// commitFrees makes the frees of transactions up to seq allocatable. The
// allocator's part runs without s.mu, which reservations take: a commit
// that freed many extents takes a while to give them back.
func (s *space) commitFrees(seq uint64) {
	s.a.Commit(seq)
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for i < len(s.pending) && s.pending[i].seq <= seq {
		s.waiting -= s.pending[i].blocks
		i++
	}
	s.pending = s.pending[i:]
	g := &s.gate
	g.released = max(g.released, seq)
	if g.wake != nil {
		close(g.wake)
		g.wake = nil
	}
}

// PinnedReads returns the ReadPlans whose device range is not yet Done.
func (v *Volume) PinnedReads() int64 { return v.space.gate.pinned() }

// readWait bounds how long a write short of space waits for the reads
// that hold frees back (settleFrees): a reply takes microseconds, a read
// of a slow device milliseconds; one stuck for longer leaves the write
// to its ENOSPC rather than holding its file's data lock. A variable for
// tests.
var readWait = time.Second

// awaitReads waits until the frees made durable so far are allocatable,
// that is until the reads pinned before them are done, for at most d.
// The caller holds no lock a reader between its pin and its Done could
// wait for (readers take none there).
func (s *space) awaitReads(d time.Duration) {
	g := &s.gate
	s.mu.Lock()
	target := max(g.next, g.draining)
	s.mu.Unlock()
	var timer *time.Timer
	for {
		s.mu.Lock()
		if g.released >= target {
			s.mu.Unlock()
			return
		}
		if g.wake == nil {
			g.wake = make(chan struct{})
		}
		wake := g.wake
		s.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		}
		select {
		case <-wake:
		case <-timer.C:
			return
		}
	}
}
