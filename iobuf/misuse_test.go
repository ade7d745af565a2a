package iobuf

import (
	"testing"

	"github.com/smallfs/smallfs/internal/invariants"
)

// TestBadPuts: in an invariant build each misuse panics; otherwise it is
// counted and the pool stays sound (lent buffers stay distinct).
func TestBadPuts(t *testing.T) {
	other, _ := newTestPool(t, Options{})
	for name, misuse := range map[string]func(p *Pool){
		"double":   func(p *Pool) { b := p.Get(300 << 10); p.Put(b); p.Put(b) },
		"foreign":  func(p *Pool) { p.Put(other.Get(300 << 10)) },
		"handmade": func(p *Pool) { p.Put(&Buf{B: make([]byte, 10)}) },
		"grown":    func(p *Pool) { b := p.Get(300 << 10); b.B = append(b.B[:cap(b.B)], 1); p.Put(b) },
		"offset":   func(p *Pool) { b := p.Get(300 << 10); b.B = b.B[1:]; p.Put(b) },
	} {
		t.Run(name, func(t *testing.T) {
			p, reg := newTestPool(t, Options{})
			if invariants.Enabled {
				defer func() {
					if recover() == nil {
						t.Fatal("no panic in an invariant build")
					}
				}()
			}
			misuse(p)
			l, _ := reg.Snapshot().Layer("iobuf")
			if c, _ := l.Counter("bad-puts"); c.Value != 1 {
				t.Fatalf("bad-puts = %d, want 1", c.Value)
			}
			if st, _ := l.Type("512KiB"); st.Live != 0 || st.Anomalies != 0 {
				t.Fatalf("accounting after %s put: %+v", name, st)
			}
			a, b := p.Get(300<<10), p.Get(300<<10)
			if &a.mem[0] == &b.mem[0] {
				t.Fatal("pool corrupted: one slab lent twice")
			}
		})
	}
}

// TestUseAfterPut writes through a slice kept after Put; an invariant build
// notices when the buffer is lent again.
func TestUseAfterPut(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("needs -tags invariants")
	}
	p, _ := newTestPool(t, Options{})
	b := p.Get(300 << 10)
	kept := b.B
	p.Put(b)
	kept[7] = 1
	defer func() {
		if recover() == nil {
			t.Fatal("write after Put not caught")
		}
	}()
	p.Get(300 << 10)
}
