package iobuf

import (
	"fmt"
	"sync"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/internal/invariants"
)

// Pool lends aligned I/O buffers. It is safe for concurrent use.
type Pool struct {
	disabled bool
	small    [numPooled]sync.Pool // of *Buf
	slab     slabPool
	stats    [numClasses]classStats

	badGets *accounting.Counter // Get(n) with n < 0
	badPuts *accounting.Counter // foreign, double or resized Put
}

// classStats are the figures of one class. Gets are rec's total, puts its
// frees, hits gets minus misses: the hot path updates only rec.
type classStats struct {
	rec       *accounting.Record  // lent buffers and their bytes (capacity)
	misses    *accounting.Counter // no idle buffer: a new one was made
	overflows *accounting.Counter // slab bound reached: served from the heap
}

// Default is a pooling Pool with DefaultSlabLimit, accounted in
// accounting.Default.
var Default = newPool(Options{SlabLimit: DefaultSlabLimit, Registry: accounting.Default})

// New returns a Pool configured by opts, or an error wrapping
// ErrInvalidOptions that names every bad field.
func New(opts Options) (*Pool, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return newPool(o), nil
}

func newPool(o Options) *Pool {
	l := o.Registry.Layer("iobuf")
	p := &Pool{
		disabled: o.Disabled,
		badGets:  l.Counter("bad-gets"),
		badPuts:  l.Counter("bad-puts"),
	}
	for c := range p.stats {
		name := className(c)
		// classSize(large, 0) is 0: the large class is an ordinary Type.
		rec := l.FixedType(name, int64(classSize(c, 0)))
		p.stats[c] = classStats{rec: rec, misses: l.Counter(name + ".misses"), overflows: l.Counter(name + ".overflows")}
	}
	p.slab.init(o.SlabLimit, l)
	return p
}

// Get returns a buffer with len(B) == n, capacity the class size, and its
// first byte aligned to Align. Its contents are not zeroed. A negative n is
// counted as a bad get and treated as 0.
func (p *Pool) Get(n int) *Buf {
	if n < 0 {
		p.badGets.Inc()
		n = 0
	}
	c := classOf(n)
	var b *Buf
	if c < numPooled && !p.disabled {
		if b, _ = p.small[c].Get().(*Buf); b != nil {
			b.checkPoison()
		} else {
			p.stats[c].misses.Inc()
			b = p.fresh(c, classSize(c, n), true)
		}
	} else {
		b = p.getUnpooled(c, n)
	}
	b.out = true
	b.B = b.mem[:n]
	p.stats[c].rec.Alloc(int64(cap(b.mem)))
	return b
}

// getUnpooled serves the classes sync.Pool does not: the slab classes, the
// large class, and every class when pooling is off.
func (p *Pool) getUnpooled(c, n int) *Buf {
	if p.disabled || c == large {
		return p.fresh(c, classSize(c, n), false)
	}
	return p.slabGet(c)
}

// Put gives b back. Put(nil) does nothing. A Buf from another Pool, one
// already put back, or one whose B was re-sliced from an offset, replaced
// or grown by append is refused: counted as a bad put and, in a build with
// the invariants tag, a panic. A refused buffer is never recycled, so it
// cannot corrupt the pool.
func (p *Pool) Put(b *Buf) {
	if b == nil {
		return
	}
	if b.pool != p || !b.out || b.resized() {
		p.refuse(b)
		return
	}
	b.out = false
	b.B = nil
	p.stats[b.class].rec.Free(int64(cap(b.mem)))
	if !b.pooled {
		return
	}
	b.poison()
	if b.class < numPooled {
		p.small[b.class].Put(b)
	} else {
		p.slabPut(b)
	}
}

// refuse handles a bad Put, off the common path: it counts it and, in an
// invariant build, panics. A buffer of ours that is lent but resized is
// accounted as put back and dropped, never recycled.
func (p *Pool) refuse(b *Buf) {
	p.badPuts.Inc()
	err := p.misuse(b)
	if invariants.Enabled {
		panic(err)
	}
	if b.pool == p && b.out {
		b.out, b.pooled = false, false
		p.stats[b.class].rec.Free(int64(cap(b.mem)))
	}
}

// misuse describes why Put refused b.
func (p *Pool) misuse(b *Buf) error {
	switch {
	case b.pool != p:
		return fmt.Errorf("iobuf: Put of a buffer from another pool (len %d)", len(b.B))
	case !b.out:
		return fmt.Errorf("iobuf: Put of a %s buffer already put back", className(int(b.class)))
	default:
		return fmt.Errorf("iobuf: Put of a %s buffer whose B was replaced or resized (cap %d, want %d)",
			className(int(b.class)), cap(b.B), cap(b.mem))
	}
}

// fresh makes a new buffer of class c.
func (p *Pool) fresh(c, size int, pooled bool) *Buf {
	return &Buf{mem: alignedMake(size), pool: p, class: uint8(c), pooled: pooled}
}

// Disabled reports whether pooling is off.
func (p *Pool) Disabled() bool { return p.disabled }

// SlabOwned returns the bytes the slab pool holds now, lent plus idle.
func (p *Pool) SlabOwned() int64 { return p.slab.owned.Load() }
