package iobuf

import (
	"sync"
	"sync/atomic"

	"github.com/smallfs/smallfs/accounting"
)

// slabPool keeps idle buffers of 256 KiB, 512 KiB and 1 MiB per class,
// under a bound on the bytes it owns. Unlike sync.Pool it keeps them across
// garbage collections, so large buffers stop costing GC work.
type slabPool struct {
	limit   int64
	owned   atomic.Int64 // bytes of slabs made and not reclaimed: lent plus idle
	classes [numSlab]slabClass

	mem      *accounting.Record  // slabs the pool owns, lent or idle
	reclaims *accounting.Counter // idle slabs dropped to make room for another class
}

// slabFront is how many idle slabs of a class sit in lock-free slots.
const slabFront = 4

// slabClass holds the idle slabs of one class: the first few in slots that
// a push fills with one compare-and-swap and a pop empties with one swap
// (the slot hands the buffer over whole, so there is no ABA), the rest on a
// mutex-guarded stack. A steady Get+Put then costs two atomic operations
// instead of two lock and unlock pairs.
type slabClass struct {
	front [slabFront]atomic.Pointer[Buf]
	mu    sync.Mutex
	idle  []*Buf // keeps its capacity: once grown, a push never allocates
	_     [128 - slabFront*8 - 8 - 24]byte
}

func (s *slabPool) init(limit int64, l *accounting.Layer) {
	s.limit = limit
	s.mem = l.Type("slab")
	s.reclaims = l.Counter("slab.reclaims")
}

// slabGet returns an idle slab of class c, a new one if the bound allows,
// or else a heap buffer that Put will drop.
func (p *Pool) slabGet(c int) *Buf {
	if b := p.slab.classes[c-numPooled].pop(); b != nil {
		b.checkPoison()
		return b
	}
	size := classSize(c, 0)
	if !p.slab.reserve(size, c) {
		p.stats[c].overflows.Inc()
		return p.fresh(c, size, false)
	}
	p.stats[c].misses.Inc()
	p.slab.mem.Alloc(int64(size))
	return p.fresh(c, size, true)
}

func (p *Pool) slabPut(b *Buf) { p.slab.classes[int(b.class)-numPooled].push(b) }

func (sc *slabClass) push(b *Buf) {
	for i := range sc.front {
		if sc.front[i].Load() == nil && sc.front[i].CompareAndSwap(nil, b) {
			return
		}
	}
	sc.mu.Lock()
	sc.idle = append(sc.idle, b)
	sc.mu.Unlock()
}

// pop returns an idle slab or nil. A slot filled while it looks may be
// missed; the caller then makes a new slab, within the bound.
func (sc *slabClass) pop() *Buf {
	for i := range sc.front {
		if sc.front[i].Load() != nil {
			if b := sc.front[i].Swap(nil); b != nil {
				return b
			}
		}
	}
	var b *Buf
	sc.mu.Lock()
	if n := len(sc.idle); n > 0 {
		b = sc.idle[n-1]
		sc.idle[n-1] = nil
		sc.idle = sc.idle[:n-1]
	}
	sc.mu.Unlock()
	return b
}

// reserve counts size more bytes as owned if that stays within the limit,
// first dropping idle slabs of other classes when they stand in the way.
func (s *slabPool) reserve(size, c int) bool {
	for {
		o := s.owned.Load()
		if o+int64(size) <= s.limit {
			if s.owned.CompareAndSwap(o, o+int64(size)) {
				return true
			}
			continue
		}
		if !s.reclaim(c) {
			return false
		}
	}
}

// reclaim drops one idle slab of a class other than c. It takes one class
// lock at a time, never two.
func (s *slabPool) reclaim(c int) bool {
	for i := range s.classes {
		if i == c-numPooled {
			continue
		}
		if b := s.classes[i].pop(); b != nil {
			size := int64(cap(b.mem))
			s.owned.Add(-size)
			s.mem.Free(size)
			s.reclaims.Inc()
			return true
		}
	}
	return false
}
