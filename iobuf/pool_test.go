package iobuf

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/smallfs/smallfs/accounting"
)

func newTestPool(t *testing.T, o Options) (*Pool, *accounting.Registry) {
	t.Helper()
	o.Registry = accounting.NewRegistry()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p, o.Registry
}

var sizes = []int{0, 1, 4095, 4096, 4097, 64 << 10, MaxPooled, MaxPooled + 1, 256 << 10, 700 << 10, MaxSlab, MaxSlab + 1, 3<<20 + 5}

func TestGetShape(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		p, _ := newTestPool(t, Options{Disabled: disabled})
		for _, n := range sizes {
			b := p.Get(n)
			c := classOf(n)
			if len(b.B) != n || cap(b.B) != classSize(c, n) || cap(b.B) < n || !aligned(b.B) {
				t.Errorf("disabled=%v Get(%d): len %d cap %d aligned %v", disabled, n, len(b.B), cap(b.B), aligned(b.B))
			}
			for i := range b.B { // the whole length is ours to write
				b.B[i] = byte(i)
			}
			p.Put(b)
		}
	}
}

func TestClassNames(t *testing.T) {
	want := []string{"4KiB", "8KiB", "16KiB", "32KiB", "64KiB", "128KiB", "256KiB", "512KiB", "1MiB", "large"}
	for c, w := range want {
		if got := className(c); got != w {
			t.Errorf("className(%d) = %q, want %q", c, got, w)
		}
	}
}

// TestSlabReuse: a slab put back is the next one lent, and lent slabs are
// distinct.
func TestSlabReuse(t *testing.T) {
	p, _ := newTestPool(t, Options{})
	a, b := p.Get(300<<10), p.Get(300<<10)
	if &a.mem[0] == &b.mem[0] {
		t.Fatal("two lent slabs share memory")
	}
	p.Put(a)
	if c := p.Get(260 << 10); c != a {
		t.Fatal("idle slab not reused")
	}
}

// TestSlabIdleBeyondFront: more idle slabs than the lock-free slots hold
// go to the stack, and all of them are lent again, each once.
func TestSlabIdleBeyondFront(t *testing.T) {
	p, reg := newTestPool(t, Options{})
	const n = 3 * slabFront
	lent := make(map[*Buf]bool)
	var bufs []*Buf
	for range n {
		b := p.Get(256 << 10)
		lent[b] = true
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		p.Put(b)
	}
	again := make(map[*Buf]bool)
	for range n {
		b := p.Get(256 << 10)
		if !lent[b] || again[b] {
			t.Fatalf("Get returned a new or twice-lent slab (new %v, twice %v)", !lent[b], again[b])
		}
		again[b] = true
	}
	l, _ := reg.Snapshot().Layer("iobuf")
	if c, _ := l.Counter("256KiB.misses"); c.Value != n {
		t.Fatalf("misses = %d, want %d", c.Value, n)
	}
}

func TestSlabBound(t *testing.T) {
	const slab = 256 << 10
	p, reg := newTestPool(t, Options{SlabLimit: 4 * slab})
	var lent []*Buf
	for range 5 { // 4 fit, the 5th overflows to the heap
		lent = append(lent, p.Get(slab))
	}
	if got := p.SlabOwned(); got != 4*slab {
		t.Fatalf("owned %d, want %d", got, 4*slab)
	}
	for _, b := range lent {
		p.Put(b)
	}
	// 1 MiB needs all four idle 256 KiB slabs reclaimed.
	big := p.Get(MaxSlab)
	if !big.pooled || p.SlabOwned() != MaxSlab {
		t.Fatalf("1 MiB not served by the slab pool after reclaiming (pooled %v, owned %d)", big.pooled, p.SlabOwned())
	}
	// Now everything is lent: the next 256 KiB goes to the heap.
	if p.Get(slab).pooled {
		t.Fatal("slab lent past the bound")
	}

	l, _ := reg.Snapshot().Layer("iobuf")
	for name, want := range map[string]uint64{"256KiB.misses": 4, "256KiB.overflows": 2, "1MiB.misses": 1, "slab.reclaims": 4} {
		if c, _ := l.Counter(name); c.Value != want {
			t.Errorf("%s = %d, want %d", name, c.Value, want)
		}
	}
	if st, _ := l.Type("slab"); st.Bytes != MaxSlab || st.Anomalies != 0 {
		t.Errorf("slab memory %+v, want %d bytes", st, MaxSlab)
	}
}

// TestAccounting checks gets, puts, live buffers and bytes per class.
func TestAccounting(t *testing.T) {
	p, reg := newTestPool(t, Options{})
	a, b := p.Get(100), p.Get(5000) // 4 KiB and 8 KiB classes
	_ = p.Get(4096)
	p.Put(a)
	p.Put(b)
	l, _ := reg.Snapshot().Layer("iobuf")
	four, _ := l.Type("4KiB")
	eight, _ := l.Type("8KiB")
	if four.Size != 4096 || four.Total != 2 || four.Frees != 1 || four.Live != 1 || four.Bytes != 4096 || four.Anomalies != 0 {
		t.Errorf("4KiB: %+v", four)
	}
	if eight.Total != 1 || eight.Live != 0 || eight.Bytes != 0 || eight.Peak != 8192 {
		t.Errorf("8KiB: %+v", eight)
	}
}

func TestConcurrentGetPut(t *testing.T) {
	p, reg := newTestPool(t, Options{SlabLimit: 2 << 20})
	const goroutines, rounds = 8, 100
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range rounds {
				n := sizes[(g+i)%len(sizes)]
				b := p.Get(n)
				for j := 0; j < n; j += 512 { // a lent buffer is ours alone
					b.B[j] = byte(g)
				}
				for j := 0; j < n; j += 512 {
					if b.B[j] != byte(g) {
						panic(fmt.Sprintf("buffer shared: byte %d changed", j))
					}
				}
				p.Put(b)
			}
		})
	}
	wg.Wait()
	l, _ := reg.Snapshot().Layer("iobuf")
	for _, ty := range l.Types {
		if ty.Name != "slab" && (ty.Live != 0 || ty.Bytes != 0 || ty.Anomalies != 0) {
			t.Errorf("after all puts: %+v", ty)
		}
	}
	if p.SlabOwned() > 2<<20 {
		t.Errorf("slab pool owns %d, above its bound", p.SlabOwned())
	}
}

func TestDisabledNeverReuses(t *testing.T) {
	p, reg := newTestPool(t, Options{Disabled: true})
	a := p.Get(300 << 10)
	mem := a.mem
	p.Put(a)
	if b := p.Get(300 << 10); &b.mem[0] == &mem[0] {
		t.Fatal("pooling off, yet a buffer came back")
	}
	l, _ := reg.Snapshot().Layer("iobuf")
	if st, _ := l.Type("512KiB"); st.Total != 2 || st.Frees != 1 {
		t.Fatalf("pooling off still accounts: %+v", st)
	}
}

func TestBadOptions(t *testing.T) {
	if _, err := New(Options{SlabLimit: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("err = %v, want ErrInvalidOptions", err)
	}
}

// TestHugeSlabLimit: the bound is a ceiling, not a reservation.
func TestHugeSlabLimit(t *testing.T) {
	p, _ := newTestPool(t, Options{SlabLimit: 1 << 62})
	p.Put(p.Get(MaxSlab))
	if got := p.SlabOwned(); got != MaxSlab {
		t.Fatalf("owned %d, want %d", got, MaxSlab)
	}
}

func TestNegativeGet(t *testing.T) {
	p, reg := newTestPool(t, Options{})
	b := p.Get(-3)
	if len(b.B) != 0 {
		t.Fatalf("len %d", len(b.B))
	}
	p.Put(b)
	l, _ := reg.Snapshot().Layer("iobuf")
	if c, _ := l.Counter("bad-gets"); c.Value != 1 {
		t.Fatalf("bad-gets = %d", c.Value)
	}
}

// TestGetPutDoesNotAllocate pins the steady state to zero allocations.
func TestGetPutDoesNotAllocate(t *testing.T) {
	p, _ := newTestPool(t, Options{})
	for _, n := range []int{4 << 10, 64 << 10, MaxPooled, 256 << 10, MaxSlab} {
		if raceEnabled && n <= MaxPooled {
			continue
		}
		p.Put(p.Get(n)) // warm
		if a := testing.AllocsPerRun(100, func() { p.Put(p.Get(n)) }); a != 0 {
			t.Errorf("Get+Put(%d): %v allocations, want 0", n, a)
		}
	}
}
