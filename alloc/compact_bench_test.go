package alloc

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCompact compacts N one-block free extents (the W5 layout) once
// per iteration, first alone, then while another goroutine runs Alloc+Free
// pairs at random holes (each pair changes a random leaf of both indexes:
// the most copy on write a compaction can cause). It reports medians over
// the iterations: the mutex hold of the clone and of the swap, alone and
// under load; the build and the catch-up; mutations replayed, of which
// under the mutex, and rounds; the pairs per second before and during the
// compaction, and the heap they allocated per pair during it (copy on
// write and the log: the allocation of the loaded compaction minus that of
// the one alone).
func BenchmarkCompact(b *testing.B) {
	for _, n := range []uint64{10000, 1000000} {
		b.Run(fmt.Sprintf("extents=%d", n), func(b *testing.B) {
			capacity, _, used := pathological(n / 2)
			a, err := NewWithUsed(capacity, used, Options{CompactExtents: -1})
			if err != nil {
				b.Fatal(err)
			}
			var idle, load []Compaction
			var before, during, cow []float64
			for range b.N {
				runtime.GC()
				heap := totalAlloc()
				figs, err := a.Compact()
				if err != nil {
					b.Fatal(err)
				}
				idleBytes := totalAlloc() - heap
				idle = append(idle, figs)

				p := startPairs(a, capacity)
				p0, t0 := p.count.Load(), time.Now()
				time.Sleep(figs.Build + figs.SwapHold)
				before = append(before, float64(p.count.Load()-p0)/time.Since(t0).Seconds())
				p0, t0, heap = p.count.Load(), time.Now(), totalAlloc()
				figs, err = a.Compact()
				if err != nil {
					b.Fatal(err)
				}
				pairs, d, bytes := p.count.Load()-p0, time.Since(t0), totalAlloc()-heap
				p.stop()
				load = append(load, figs)
				during = append(during, float64(pairs)/d.Seconds())
				cow = append(cow, (float64(bytes)-float64(idleBytes))/float64(max(pairs, 1)))
			}
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			for _, m := range []struct {
				name string
				of   []Compaction
				f    func(Compaction) float64
			}{
				{"clone-hold-ns", idle, func(c Compaction) float64 { return float64(c.CloneHold) }},
				{"swap-hold-ns", idle, func(c Compaction) float64 { return float64(c.SwapHold) }},
				{"build-ms", idle, func(c Compaction) float64 { return ms(c.Build) }},
				{"load-clone-hold-ns", load, func(c Compaction) float64 { return float64(c.CloneHold) }},
				{"load-swap-hold-ns", load, func(c Compaction) float64 { return float64(c.SwapHold) }},
				{"load-max-hold-ns", load, func(c Compaction) float64 { return float64(c.MaxHold) }},
				{"load-build-ms", load, func(c Compaction) float64 { return ms(c.Build) }},
				{"catchup-ms", load, func(c Compaction) float64 { return ms(c.CatchUp) }},
				{"replayed", load, func(c Compaction) float64 { return float64(c.Replayed) }},
				{"drained", load, func(c Compaction) float64 { return float64(c.Drained) }},
				{"rounds", load, func(c Compaction) float64 { return float64(c.Rounds) }},
			} {
				v := make([]float64, len(m.of))
				for i, c := range m.of {
					v[i] = m.f(c)
				}
				b.ReportMetric(median(v), m.name)
			}
			b.ReportMetric(median(before), "pairs/s-before")
			b.ReportMetric(median(during), "pairs/s-during")
			b.ReportMetric(median(cow), "B/pair-during")
		})
	}
}

// pairs runs Alloc+Free pairs of one block at random hints on a goroutine.
type pairs struct {
	count atomic.Uint64
	done  atomic.Bool
	wg    sync.WaitGroup
}

func startPairs(a *Allocator, capacity uint64) *pairs {
	p := &pairs{}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		r := rand.New(rand.NewPCG(1, 2))
		for !p.done.Load() {
			e, err := a.Alloc(r.Uint64N(capacity), 1, 1)
			if err != nil {
				panic(err)
			}
			if err := a.Free(e); err != nil {
				panic(err)
			}
			p.count.Add(1)
		}
	}()
	return p
}

func (p *pairs) stop() {
	p.done.Store(true)
	p.wg.Wait()
}

func totalAlloc() uint64 { return memStats().TotalAlloc }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}
