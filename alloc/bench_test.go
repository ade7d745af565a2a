package alloc

import (
	"flag"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/smallfs/smallfs/internal/cputime"
)

// The workloads of docs/ALLOCATOR.md, seeded, on 4 KiB blocks with an
// allocation unit of one block. Scale with -alloc.capacity.
//
// The regret oracle is an unbounded nearest-fit scan: from block 0 at high
// fill it visits thousands of extents. It runs on every 16th call in W1 and
// W2 (hundreds of thousands of calls), every 2nd in W3 and W4; latencies
// come from the other calls. In W5 it runs on 20 calls after the 1000
// timed ones: at 10^6 extents its walk of half the offset index (9 MB)
// between timed calls evicted what they would find in cache.
var (
	benchCapacity = flag.Uint64("alloc.capacity", 1<<20, "device size in blocks for benchmarks W1-W4 (W3 uses 4x)")
	benchHints    = flag.String("alloc.hints", "zero", "hints of W1-W3: zero (as Ceph's tests) or random")
	benchWindow   = flag.Int("alloc.window", 0, "WindowExtents (K) of the smallfs policy; 0 for the default")
	benchCompact  = flag.Int("alloc.compact", 0, "CompactExtents of the smallfs policy; 0 for the default, -1 for no automatic compaction")
	benchSeed     = flag.Uint64("alloc.seed", 0, "seed of the first run of W1-W5; run i uses seed+i")
	benchStop     = flag.String("alloc.stop", "end", "where W3 and W4 end: end, or the last cycle's high or low mark (W3 ends at high, W4 at low)")
)

// stopAt reports whether a W3 or W4 run ends at mark ("high" or "low") of
// its last cycle, as -alloc.stop asks.
func stopAt(mark string, last bool) bool { return last && *benchStop == mark }

// runWorkload runs work once per b.N iteration on a fresh policy (seed
// -alloc.seed plus i) and reports the figures over all runs.
func runWorkload(b *testing.B, newPolicy func(uint64, []Extent) (policy, error),
	capacity uint64, used []Extent, oracleEvery int, work func(h *harness)) {
	rec := &recorder{}
	for i := range b.N {
		p, err := newPolicy(capacity, used)
		if err != nil {
			b.Fatal(err)
		}
		h := newHarness(p, *benchSeed+uint64(i), capacity, rec)
		h.oracleEvery = oracleEvery
		p = nil
		// Collect the setup's garbage now: in W5 at 10^6 extents a cycle
		// started by NewWithUsed was still marking (write barriers on, a
		// worker on one of the two cores) through the timed calls.
		runtime.GC()
		gc := gcCount()
		work(h)
		rec.gcs += gcCount() - gc
		h.finish()
	}
	report(b, rec)
}

// report prints the figures of docs/ALLOCATOR.md. Latencies (p50-ns .. max-ns)
// are per Alloc call, each timed alone, GC and scheduler stalls included
// (gcs/run counts the collections during the work); visits/op per Alloc
// call; regret-* in blocks past the nearest extent that held the request
// (sampled calls that asked for min = want); score is Ceph's S at the end
// (W3: at the last high mark); fragallocs-% and ext/fragalloc count
// requests that needed more than one extent; failed-allocs counts requests
// left short while enough blocks were free; B/extent is the heap the policy
// holds per free extent at the end, extents how many it holds; pairs/s counts Alloc and Free calls,
// over the time spent inside them. ns/op is the wall time of a whole run,
// oracle and checks included: ignore it.
func report(b *testing.B, rec *recorder) {
	b.ReportMetric(percentile(rec.allocNs, 0.5), "p50-ns")
	b.ReportMetric(percentile(rec.allocNs, 0.99), "p99-ns")
	b.ReportMetric(percentile(rec.allocNs, 0.999), "p999-ns")
	b.ReportMetric(percentile(rec.allocNs, 1), "max-ns")
	b.ReportMetric(float64(rec.visits)/float64(max(rec.allocs, 1)), "visits/op")
	b.ReportMetric(percentile(rec.regret, 0.5), "regret-p50")
	b.ReportMetric(percentile(rec.regret, 0.99), "regret-p99")
	b.ReportMetric(mean(rec.scores), "score")
	b.ReportMetric(100*float64(rec.fragReqs)/float64(max(rec.requests, 1)), "fragallocs-%")
	if rec.fragReqs > 0 {
		b.ReportMetric(float64(rec.fragExts)/float64(rec.fragReqs), "ext/fragalloc")
	}
	b.ReportMetric(float64(rec.failed), "failed-allocs")
	b.ReportMetric(mean(rec.bytesPerX), "B/extent")
	b.ReportMetric(mean(rec.extents), "extents")
	b.ReportMetric(float64(rec.allocs+rec.frees)/2/(float64(rec.timedNs)/1e9), "pairs/s")
	b.ReportMetric(float64(rec.gcs)/float64(b.N), "gcs/run")
}

// forPolicies runs one sub-benchmark per policy.
func forPolicies(b *testing.B, run func(b *testing.B, newPolicy func(uint64, []Extent) (policy, error))) {
	for _, pol := range policies {
		b.Run("policy="+pol.name, func(b *testing.B) { run(b, pol.new) })
	}
}

// pow2Size returns one unit times 2^U{0..9}.
func (h *harness) pow2Size() uint64 { return 1 << h.r.IntN(10) }

// hint is where W1-W3 ask for space: block 0, as Ceph's tests do, or with
// -alloc.hints=random anywhere (no locality to keep, so a locality policy
// splits free extents at random places).
func (h *harness) hint() uint64 {
	if *benchHints == "random" {
		return h.r.Uint64N(h.capacity)
	}
	return 0
}

// fillTo requests sizes from next until fill of the device is used.
func (h *harness) fillTo(fill float64, next func() uint64) {
	for float64(h.used) < fill*float64(h.capacity) {
		n := next()
		if h.capacity-h.used < n {
			return
		}
		h.keep(h.request(h.hint(), n))
	}
}

// BenchmarkW1Overwrite is Ceph's doOverwriteTest: prefill, then allocate
// and release random power-of-two sizes until 3x the device is written.
func BenchmarkW1Overwrite(b *testing.B) {
	for _, fill := range []int{90, 50, 10} {
		b.Run(fmt.Sprintf("fill=%d", fill), func(b *testing.B) {
			forPolicies(b, func(b *testing.B, np func(uint64, []Extent) (policy, error)) {
				runWorkload(b, np, *benchCapacity, nil, 16, func(h *harness) {
					h.fillTo(float64(fill)/100, h.pow2Size)
					for written := uint64(0); written < 3*h.capacity; {
						quota, n := h.pow2Size(), h.pow2Size()
						if h.capacity-h.used >= n {
							h.keep(h.request(h.hint(), n))
							written += n
						}
						h.release(quota)
					}
					h.score()
				})
			})
		})
	}
}

// BenchmarkW2SmallOverwrites is Ceph's bench2: large extents aged by small
// overwrites at a steady utilisation.
func BenchmarkW2SmallOverwrites(b *testing.B) {
	for _, fill := range []int{90, 75, 50, 20} {
		b.Run(fmt.Sprintf("fill=%d", fill), func(b *testing.B) {
			forPolicies(b, func(b *testing.B, np func(uint64, []Extent) (policy, error)) {
				runWorkload(b, np, *benchCapacity, nil, 16, func(h *harness) {
					h.fillTo(float64(fill+5)/100, func() uint64 { return 256 << h.r.IntN(3) })
					for target := h.used - h.capacity/20; h.used > target; {
						h.release(1 + h.r.Uint64N(512))
					}
					for written := uint64(0); written < 5*h.capacity; {
						q := 1 + h.r.Uint64N(16)
						h.release(q)
						h.keep(h.request(h.hint(), q))
						written += q
					}
					h.score()
				})
			})
		})
	}
}

// triangle returns blocks for a size in bytes drawn from the triangular
// distribution (1 B, mode 8 MiB, max 16 MiB), rounded up to whole blocks.
func (h *harness) triangle() uint64 {
	const lo, mode, hi = 1.0, 8 << 20, 16 << 20
	u := h.r.Float64()
	var v float64
	if u < (mode-lo)/(hi-lo) {
		v = lo + math.Sqrt(u*(hi-lo)*(mode-lo))
	} else {
		v = hi - math.Sqrt((1-u)*(hi-lo)*(hi-mode))
	}
	return uint64(math.Ceil(v / defaultBlockSize))
}

// BenchmarkW3Aging is Ceph's Allocator_aging_fragmentation: fill to high,
// then three times free down to low and fill back with leaks. Figures are
// over the last fill, the score at the last high mark.
func BenchmarkW3Aging(b *testing.B) {
	type cfg struct{ high, low, leak int }
	cfgs := []cfg{{80, 60, 10}, {90, 70, 0}, {90, 70, 10}, {80, 60, 50}, {90, 70, 50}}
	sizes := map[string]func(h *harness) uint64{
		"triangle": (*harness).triangle,
		"8M-or-64K": func(h *harness) uint64 {
			if h.r.IntN(2) == 0 {
				return 8 << 20 / defaultBlockSize
			}
			return 64 << 10 / defaultBlockSize
		},
	}
	for _, c := range cfgs {
		for _, sname := range []string{"triangle", "8M-or-64K"} {
			size := sizes[sname]
			name := fmt.Sprintf("high=%d,low=%d,leak=%d/sizes=%s", c.high, c.low, c.leak, sname)
			b.Run(name, func(b *testing.B) {
				forPolicies(b, func(b *testing.B, np func(uint64, []Extent) (policy, error)) {
					runWorkload(b, np, 4**benchCapacity, nil, 2, func(h *harness) { w3(h, c.high, c.low, c.leak, size) })
				})
			})
		}
	}
}

func w3(h *harness, high, low, leak int, size func(*harness) uint64) {
	next := func() uint64 { return size(h) }
	h.fillTo(float64(high)/100, next)
	for cycle := range 3 {
		for float64(h.used) > float64(low)/100*float64(h.capacity) && len(h.live) > 0 {
			h.release(h.live[h.r.IntN(len(h.live))].Len)
		}
		if stopAt("low", cycle == 2) {
			break
		}
		if cycle == 2 {
			h.requests, h.fragReqs, h.fragExts = 0, 0, 0
		}
		for float64(h.used) < float64(high)/100*float64(h.capacity) {
			n := next()
			if h.capacity-h.used < n {
				break
			}
			h.keep(h.request(h.hint(), n))
			if h.r.IntN(100) < leak && len(h.live) > 0 {
				h.release(h.live[h.r.IntN(len(h.live))].Len)
			}
		}
	}
	h.score()
}

// BenchmarkW4Locality creates small files in directories, each placed at
// its directory's cursor, and deletes them by directory: 90/70 % cycles.
func BenchmarkW4Locality(b *testing.B) {
	forPolicies(b, func(b *testing.B, np func(uint64, []Extent) (policy, error)) {
		runWorkload(b, np, *benchCapacity, nil, 2, w4)
	})
}

func w4(h *harness) {
	const dirs = 1024
	type dir struct {
		cursor uint64
		files  [][]Extent
	}
	ds := make([]dir, dirs)
	for i := range ds {
		ds[i].cursor = uint64(i) * h.capacity / dirs
	}
	size := func() uint64 {
		switch x := h.r.IntN(100); {
		case x < 80:
			return 1 + h.r.Uint64N(4)
		case x < 98:
			return 5 + h.r.Uint64N(60)
		}
		return 256
	}
	for cycle := range 3 {
		for float64(h.used) < 0.9*float64(h.capacity) {
			d := &ds[h.r.IntN(dirs)]
			for range 1 + h.r.IntN(16) {
				exts := h.request(d.cursor, size())
				if len(exts) == 0 {
					break
				}
				d.files = append(d.files, exts)
				d.cursor = exts[len(exts)-1].End()
			}
		}
		if stopAt("high", cycle == 2) {
			break
		}
		for float64(h.used) > 0.7*float64(h.capacity) {
			d := &ds[h.r.IntN(dirs)]
			if len(d.files) == 0 {
				continue
			}
			i := h.r.IntN(len(d.files))
			j := min(len(d.files), i+1+h.r.IntN(32))
			for _, f := range d.files[i:j] {
				for _, e := range f {
					h.free(e)
				}
			}
			d.files = append(d.files[:i], d.files[j:]...)
		}
	}
	h.score()
}

// BenchmarkW5Pathological allocates 8 blocks at hints among N one-block
// holes whose only fitting extents are far away, and frees them again (the
// layout stays the same). B/extent is measured on this layout, where
// almost every other block is free.
func BenchmarkW5Pathological(b *testing.B) {
	for _, n := range []uint64{10000, 1000000} {
		b.Run(fmt.Sprintf("extents=%d", n), func(b *testing.B) {
			capacity, hint, used := pathological(n / 2)
			forPolicies(b, func(b *testing.B, np func(uint64, []Extent) (policy, error)) {
				runWorkload(b, np, capacity, used, math.MaxInt, func(h *harness) {
					for i := range 1000 + 20 {
						if i == 1000 {
							h.oracleEvery = 1 // sampled calls: regret only, no latency
						}
						h0 := hint - n/2 + h.r.Uint64N(n)
						for _, e := range h.request(h0, 8) {
							h.free(e)
						}
					}
					h.score()
				})
			})
		})
	}
}

// BenchmarkW5Pairs is W5's Alloc+Free pair on the smallfs Allocator in a
// loop, without per-call timing or oracle: ns/op is one pair. Under
// cachegrind the difference of two -benchtime counts gives the
// instructions and cache misses of a pair at each size.
func BenchmarkW5Pairs(b *testing.B) {
	for _, n := range []uint64{10000, 1000000} {
		b.Run(fmt.Sprintf("extents=%d", n), func(b *testing.B) {
			capacity, hint, used := pathological(n / 2)
			a, err := NewWithUsed(capacity, used, Options{})
			if err != nil {
				b.Fatal(err)
			}
			h := newHarness(nil, 1, capacity, nil)
			hints := make([]uint64, 1<<16)
			for i := range hints {
				hints[i] = hint - n/2 + h.r.Uint64N(n)
			}
			b.ResetTimer()
			for i := range b.N {
				e, err := a.Alloc(hints[i&(len(hints)-1)], 8, 8)
				if err != nil {
					b.Fatal(err)
				}
				if err := a.Free(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewWithUsed is the mount-time rebuild of free space from used
// extents given in random order.
func BenchmarkNewWithUsed(b *testing.B) {
	for _, n := range []uint64{10000, 1000000} {
		b.Run(fmt.Sprintf("extents=%d", n), func(b *testing.B) {
			capacity, _, used := pathological(n / 2)
			newHarness(nil, 1, capacity, nil).r.Shuffle(len(used), func(i, j int) { used[i], used[j] = used[j], used[i] })
			b.ResetTimer()
			for range b.N {
				if _, err := NewWithUsed(capacity, used, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkW1Throughput is W1's steady state (allocate and release random
// power-of-two sizes at a fixed fill) without per-call timing or oracle:
// ns/op is the time of one Alloc+Free pair, cpu-ns/op its CPU time (of
// the process: compactions included); the smallfs policy also reports its
// compactions per million pairs and the free extents it ends with.
func BenchmarkW1Throughput(b *testing.B) {
	for _, fill := range []int{50} {
		b.Run(fmt.Sprintf("fill=%d", fill), func(b *testing.B) {
			forPolicies(b, func(b *testing.B, np func(uint64, []Extent) (policy, error)) {
				p, err := np(*benchCapacity, nil)
				if err != nil {
					b.Fatal(err)
				}
				h := newHarness(p, 1, *benchCapacity, &recorder{})
				h.fillTo(float64(fill)/100, h.pow2Size)
				sizes := make([]uint64, 1<<16)
				hints := make([]uint64, len(sizes))
				picks := make([]int, len(sizes))
				for i := range sizes {
					sizes[i], hints[i], picks[i] = h.pow2Size(), h.hint(), h.r.Int()
				}
				live := h.live
				b.ResetTimer()
				defer cputime.PerOp(b)()
				for i := range b.N {
					j := i & (len(sizes) - 1)
					e, ok := p.alloc(hints[j], sizes[j], 1)
					if !ok {
						b.Fatal("no space")
					}
					k := picks[j] % len(live)
					p.free(live[k])
					live[k] = e
				}
				b.StopTimer()
				if s, ok := p.(smallfsPolicy); ok {
					st := s.a.Stats()
					b.ReportMetric(float64(st.Compactions)/float64(b.N)*1e6, "compactions/Mpair")
					b.ReportMetric(float64(st.FreeExtents), "extents")
				}
			})
		})
	}
}
