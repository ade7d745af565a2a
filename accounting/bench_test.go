package accounting

import (
	"fmt"
	"sync"
	"testing"

	"github.com/smallfs/smallfs/internal/cputime"
)

// mutexRecord is the locked equivalent of a Record: the same figures, exact
// peak and underflow check, one mutex. It exists to be measured against.
type mutexRecord struct {
	mu                             sync.Mutex
	live, bytes, total, peak, anom int64
}

func (m *mutexRecord) Alloc(n int64) {
	m.mu.Lock()
	m.live++
	m.total++
	m.bytes += n
	m.peak = max(m.peak, m.bytes)
	m.mu.Unlock()
}

func (m *mutexRecord) Free(n int64) {
	m.mu.Lock()
	if m.live == 0 || m.bytes < n {
		m.anom++
	} else {
		m.live--
		m.bytes -= n
	}
	m.mu.Unlock()
}

type updater interface {
	Alloc(int64)
	Free(int64)
}

// BenchmarkUpdate measures one update (an Alloc or a Free, alternating) of
// a Record (a Type, and a FixedType) against the mutex equivalent, serial
// and with RunParallel.
func BenchmarkUpdate(b *testing.B) {
	for _, impl := range []struct {
		name string
		new  func() updater
	}{
		{"atomic", func() updater { return NewRegistry().Layer("l").Type("t") }},
		{"fixed", func() updater { return NewRegistry().Layer("l").FixedType("t", 64) }},
		{"mutex", func() updater { return new(mutexRecord) }},
	} {
		b.Run(impl.name+"/serial", func(b *testing.B) {
			defer cputime.PerOp(b)()
			u := impl.new()
			for i := 0; b.Loop(); i++ {
				update(u, i, 64)
			}
		})
		b.Run(impl.name+"/parallel", func(b *testing.B) {
			defer cputime.PerOp(b)()
			u := impl.new()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					update(u, i, 64)
				}
			})
		})
	}
}

// BenchmarkFloor measures what any lock-free update pays on this machine,
// to compare with BenchmarkUpdate in the same run: one atomic add to a word
// of the goroutine's own cache line (the whole of a FixedType update or a
// Counter.Inc), and two (a Type update: count and bytes are two words).
// In parallel each goroutine has its own stripe, so nothing is shared.
func BenchmarkFloor(b *testing.B) {
	for _, adds := range []int{1, 2} {
		op := func(s *stripe) {
			s.allocs.Add(1)
			if adds == 2 {
				s.allocBytes.Add(64)
			}
		}
		b.Run(fmt.Sprintf("adds=%d/serial", adds), func(b *testing.B) {
			defer cputime.PerOp(b)()
			s := new(stripe)
			for b.Loop() {
				op(s)
			}
		})
		b.Run(fmt.Sprintf("adds=%d/parallel", adds), func(b *testing.B) {
			defer cputime.PerOp(b)()
			b.RunParallel(func(pb *testing.PB) {
				s := new(stripe)
				for pb.Next() {
					op(s)
				}
			})
		})
	}
}

// BenchmarkPeak measures what the peak costs: the sample runs once per
// peakGrain bytes a stripe allocates, so its share grows with object size
// (64 B: every 1024th Alloc; 4 KiB: every 16th; 64 KiB: every Alloc).
func BenchmarkPeak(b *testing.B) {
	for _, size := range []int64{64, 4096, 65536} {
		for _, par := range []bool{false, true} {
			b.Run(fmt.Sprintf("size=%d/parallel=%v", size, par), func(b *testing.B) {
				defer cputime.PerOp(b)()
				rec := NewRegistry().Layer("l").Type("t")
				if !par {
					for i := 0; b.Loop(); i++ {
						update(rec, i, size)
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					for i := 0; pb.Next(); i++ {
						update(rec, i, size)
					}
				})
			})
		}
	}
}

// BenchmarkCounter measures Counter.Inc, serial and parallel.
func BenchmarkCounter(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		defer cputime.PerOp(b)()
		c := NewRegistry().Layer("l").Counter("c")
		for b.Loop() {
			c.Inc()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		defer cputime.PerOp(b)()
		c := NewRegistry().Layer("l").Counter("c")
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				c.Inc()
			}
		})
	})
}

func update(u updater, i int, n int64) {
	if i&1 == 0 {
		u.Alloc(n)
	} else {
		u.Free(n)
	}
}
