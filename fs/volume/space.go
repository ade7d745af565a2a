package volume

import (
	"cmp"
	"sync"

	"github.com/smallfs/smallfs/alloc"
)

// space is the volume's view of the block allocator: it keeps the counts
// statfs needs (alloc.Stats walks every free extent) and the frees waiting
// for their transaction to become durable, and then for the reads that
// may still read their blocks (readpin.go).
//
// It also keeps the checkpoint headroom: blocks ordinary allocations and
// metadata growth leave free, so that the next checkpoints fit and Close
// succeeds on a full volume (see headroom).
//
// Its mutex is a leaf: nothing else is locked while it is held. The
// allocator has its own lock.
type space struct {
	a          *alloc.Allocator
	dataBlocks uint64 // blocks of the data area, used or not
	blockSize  uint64

	mu       sync.Mutex
	used     uint64    // blocks allocated and not freed
	reserved uint64    // promised to dirty data not yet allocated
	pending  []pending // freed, not yet allocatable; in sequence order
	waiting  uint64    // blocks in pending: allocatable runs on every write
	ckpt     uint64    // blocks of the newest checkpoint

	// gate holds frees made durable back from reuse until the reads
	// that may still read their blocks are done (readpin.go).
	gate readGate
}

// ckptSlack covers a checkpoint's framing beyond its records: chunk heads,
// the rounding of its extents to blocks.
const ckptSlack = 8

// headroom returns the blocks kept for checkpoints while the log holds
// logUsed blocks since the newest one (s.mu held). Records set state, so
// the next checkpoint holds at most what the newest one held plus what the
// log added since: c' <= ckpt + logUsed. It is written while both slots'
// checkpoints are still allocated, and the one after it too, hence twice
// that: after the next checkpoint frees the older of the two, what is left
// still holds another.
func (s *space) headroom(logUsed uint64) uint64 {
	return 2*(s.ckpt+logUsed) + ckptSlack
}

// setCheckpoint records the size of the newest checkpoint.
func (s *space) setCheckpoint(blocks uint64) {
	s.mu.Lock()
	s.ckpt = blocks
	s.mu.Unlock()
}

// room returns ErrNoSpace unless growing the metadata by bytes leaves the
// checkpoint headroom free; the log holds logUsed blocks.
func (s *space) room(bytes, logUsed uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.allocatable()
	if a-min(a, s.reserved) < s.headroom(logUsed)+2*s.blocks(bytes) {
		return ErrNoSpace
	}
	return nil
}

func (s *space) blocks(bytes uint64) uint64 { return (bytes + s.blockSize - 1) / s.blockSize }

type pending struct{ seq, blocks uint64 }

// newSpace builds the allocator of a device of capacity blocks where used
// (the reserved areas and every extent the metadata references) is in use.
// reserved blocks are not part of the data area.
func newSpace(capacity, reserved uint64, used []alloc.Extent, blockSize int) (*space, error) {
	a, err := alloc.NewWithUsed(capacity, used, alloc.Options{BlockSize: uint64(blockSize)})
	if err != nil {
		return nil, err
	}
	return &space{a: a, dataBlocks: capacity - reserved, blockSize: uint64(blockSize), used: blocksIn(used) - reserved}, nil
}

// alloc returns one extent of 1 to want blocks near hint, taking it from
// the blocks reserved for dirty data, of which the caller holds *held.
func (s *space) alloc(hint, want uint64, held *uint64) (alloc.Extent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.a.Alloc(hint, want, 1)
	if err != nil {
		return e, opErr("alloc", "", ErrNoSpace)
	}
	s.used += e.Len
	k := min(e.Len, *held)
	s.reserved -= k
	*held -= k
	return e, nil
}

// release frees e at once: it was never referenced by a logged record.
func (s *space) release(e alloc.Extent) error {
	if err := s.a.Free(e); err != nil {
		return err
	}
	s.mu.Lock()
	s.used -= e.Len
	s.mu.Unlock()
	return nil
}

// releaseReserving frees es at once, as release, and reserves reserve
// blocks of them in the same step, so no other writer can take them in
// between.
func (s *space) releaseReserving(es []alloc.Extent, reserve uint64) error {
	var n uint64
	var first error
	for _, e := range es {
		if err := s.a.Free(e); err != nil {
			first = cmp.Or(first, err)
			continue
		}
		n += e.Len
	}
	s.mu.Lock()
	s.used -= n
	s.reserved += reserve
	s.mu.Unlock()
	return first
}

// freeAfter frees e once transaction seq is durable.
func (s *space) freeAfter(e alloc.Extent, seq uint64) error {
	if err := s.a.FreeDeferred(e, seq); err != nil {
		return err
	}
	s.mu.Lock()
	s.used -= e.Len
	s.waiting += e.Len
	if k := len(s.pending) - 1; k >= 0 && s.pending[k].seq == seq {
		s.pending[k].blocks += e.Len
	} else {
		s.pending = append(s.pending, pending{seq, e.Len})
	}
	s.mu.Unlock()
	return nil
}

// allocatable returns the blocks the allocator holds free (s.mu held).
func (s *space) allocatable() uint64 {
	return s.dataBlocks - s.used - s.waiting
}

// free returns the blocks neither used nor promised, and of those the ones
// available beyond the checkpoint headroom (the log holds logUsed blocks).
// Blocks waiting for a commit count as free, as ext4 counts them at once:
// a write that needs them commits first (writeSpace), so df shows a
// delete's space when the delete returns, not up to a commit later.
func (s *space) free(logUsed uint64) (free, avail uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	free = s.allocatable() + s.waiting
	free -= min(free, s.reserved)
	return free, free - min(free, s.headroom(logUsed))
}

// reserve promises n blocks to dirty data, so that its write-back cannot
// run out of space; it returns ErrNoSpace when they are not free beyond
// the checkpoint headroom (the log holds logUsed blocks).
func (s *space) reserve(n, logUsed uint64) error {
	_, err := s.reserveUpTo(n, n, logUsed)
	return err
}

// reserveUpTo is reserve of as many blocks as are free, from least to
// most: a write that meets the end of the space takes what is left.
func (s *space) reserveUpTo(least, most, logUsed uint64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.allocatable()
	free := a - min(a, s.reserved)
	avail := free - min(free, s.headroom(logUsed))
	if avail < least {
		return 0, ErrNoSpace
	}
	n := min(most, avail)
	s.reserved += n
	return n, nil
}

// unreserve takes back a promise of n blocks.
func (s *space) unreserve(n uint64) {
	s.mu.Lock()
	s.reserved -= n
	s.mu.Unlock()
}

// hasPending reports whether frees are waiting for a commit (or for
// reads pinned before it).
func (s *space) hasPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) > 0
}

// close withdraws the allocator's extents from accounting at the end of
// the mount; the volume allocates nothing afterwards.
func (s *space) close() { s.a.Close() }
