package volume

import (
	"sync"

	"github.com/smallfs/smallfs/alloc"
)

// space is the volume's view of the block allocator: it keeps the counts
// statfs needs (alloc.Stats walks every free extent) and the frees waiting
// for their transaction to become durable.
//
// Its mutex is a leaf: nothing else is locked while it is held. The
// allocator has its own lock.
type space struct {
	a          *alloc.Allocator
	dataBlocks uint64 // blocks of the data area, used or not

	mu      sync.Mutex
	used    uint64    // blocks allocated and not freed
	pending []pending // freed, not yet durable; in sequence order
}

type pending struct{ seq, blocks uint64 }

// newSpace builds the allocator of a device of capacity blocks where used
// (the reserved areas and every extent the metadata references) is in use.
// reserved blocks are not part of the data area.
func newSpace(capacity, reserved uint64, used []alloc.Extent, blockSize int) (*space, error) {
	a, err := alloc.NewWithUsed(capacity, used, alloc.Options{BlockSize: uint64(blockSize)})
	if err != nil {
		return nil, err
	}
	return &space{a: a, dataBlocks: capacity - reserved, used: blocksIn(used) - reserved}, nil
}

// alloc returns one extent of 1 to want blocks near hint.
func (s *space) alloc(hint, want uint64) (alloc.Extent, error) {
	e, err := s.a.Alloc(hint, want, 1)
	if err != nil {
		return e, err
	}
	s.mu.Lock()
	s.used += e.Len
	s.mu.Unlock()
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

// freeAfter frees e once transaction seq is durable.
func (s *space) freeAfter(e alloc.Extent, seq uint64) error {
	if err := s.a.FreeDeferred(e, seq); err != nil {
		return err
	}
	s.mu.Lock()
	s.used -= e.Len
	if k := len(s.pending) - 1; k >= 0 && s.pending[k].seq == seq {
		s.pending[k].blocks += e.Len
	} else {
		s.pending = append(s.pending, pending{seq, e.Len})
	}
	s.mu.Unlock()
	return nil
}

// durable makes the frees of transactions up to seq allocatable.
func (s *space) durable(seq uint64) {
	s.a.Commit(seq)
	s.mu.Lock()
	i := 0
	for i < len(s.pending) && s.pending[i].seq <= seq {
		i++
	}
	s.pending = s.pending[i:]
	s.mu.Unlock()
}

// free returns the allocatable blocks.
func (s *space) free() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.dataBlocks - s.used
	for _, p := range s.pending {
		n -= p.blocks
	}
	return n
}
