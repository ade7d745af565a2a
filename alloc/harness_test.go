package alloc

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"time"
)

// harness drives one policy through a workload and records what the
// benchmarks report. Frees pick a uniformly random live extent; when the
// remaining release quota is smaller, only its head is released (Ceph's
// rule). A request of n blocks asks for one extent of n blocks and, only if
// none exists, gathers smaller pieces.
type harness struct {
	p        policy
	r        *rand.Rand
	capacity uint64
	used     uint64   // blocks live
	live     []Extent // extents the workload owns
	rec      *recorder

	oracleEvery int // run the regret oracle on every n-th Alloc call
	calls       int

	// Per-run request figures, reset by workloads that report one phase.
	requests, fragReqs, fragExts, failed int
}

// recorder accumulates figures over every run of one benchmark.
type recorder struct {
	allocNs   []int64 // latency of each Alloc call
	regret    []int64 // blocks farther than the nearest fit, sampled
	timedNs   int64   // time inside Alloc and Free calls
	frees     int
	requests  int
	fragReqs  int // requests served by more than one extent
	fragExts  int // extents of those requests
	failed    int // requests not served while enough blocks were free
	allocs    int
	scores    []float64
	bytesPerX []float64
	extents   []float64 // free extents at the end of each run
	visits    uint64
	gcs       uint32
}

func newHarness(p policy, seed uint64, capacity uint64, rec *recorder) *harness {
	return &harness{p: p, r: rand.New(rand.NewPCG(seed, 0x5eed)), capacity: capacity, rec: rec, oracleEvery: 1}
}

// gap is the distance between hint and e: 0 when e touches or holds it.
func gap(e Extent, hint uint64) uint64 {
	switch {
	case e.Off > hint:
		return e.Off - hint
	case e.End() < hint:
		return hint - e.End()
	}
	return 0
}

// alloc is one timed Alloc call. On every oracleEvery-th call the regret
// oracle runs first, untimed, and the call's latency is left out.
func (h *harness) alloc(hint, want, min uint64) (Extent, bool) {
	h.calls++
	oracle := int64(-1)
	sampled := h.calls%h.oracleEvery == 0
	if min == want && sampled {
		var c cost
		h.p.view(func(s *space) {
			if p, ok := nearestFit(s, hint, want, want, &c); ok && p.p.Len == want {
				oracle = int64(p.rank.dist())
			}
		})
	}
	t := time.Now()
	e, ok := h.p.alloc(hint, want, min)
	d := time.Since(t).Nanoseconds()
	h.rec.timedNs += d
	if !sampled {
		// The oracle's scan evicts what the call would find in cache.
		h.rec.allocNs = append(h.rec.allocNs, d)
	}
	if ok {
		h.used += e.Len
		if oracle >= 0 {
			h.rec.regret = append(h.rec.regret, int64(gap(e, hint))-oracle)
		}
	}
	return e, ok
}

// request allocates n blocks near hint and returns the extents; it records
// a failure if it could not while n blocks were free.
func (h *harness) request(hint, n uint64) []Extent {
	h.requests++
	if e, ok := h.alloc(hint, n, n); ok {
		return []Extent{e}
	}
	var got []Extent
	for left := n; left > 0; {
		e, ok := h.alloc(hint, left, 1)
		if !ok {
			if h.capacity-h.used >= left {
				h.failed++
			}
			break
		}
		got = append(got, e)
		left -= e.Len
		hint = e.End()
	}
	if len(got) > 1 {
		h.fragReqs++
		h.fragExts += len(got)
	}
	return got
}

// keep makes extents live, for release to free.
func (h *harness) keep(exts []Extent) { h.live = append(h.live, exts...) }

// free is one timed Free call.
func (h *harness) free(e Extent) {
	t := time.Now()
	h.p.free(e)
	h.rec.timedNs += time.Since(t).Nanoseconds()
	h.rec.frees++
	h.used -= e.Len
}

// release frees quota blocks from random live extents.
func (h *harness) release(quota uint64) {
	for quota > 0 && len(h.live) > 0 {
		i := h.r.IntN(len(h.live))
		e := h.live[i]
		if e.Len > quota {
			h.free(Extent{Off: e.Off, Len: quota})
			h.live[i] = Extent{Off: e.Off + quota, Len: e.Len - quota}
			return
		}
		h.free(e)
		quota -= e.Len
		h.live[i] = h.live[len(h.live)-1]
		h.live = h.live[:len(h.live)-1]
	}
}

// score records the fragmentation score of free space now.
func (h *harness) score() {
	h.p.view(func(s *space) {
		h.rec.scores = append(h.rec.scores, FragmentationScore(func(yield func(uint64) bool) {
			for e := range s.byOff.all() {
				if !yield(e.Len) {
					return
				}
			}
		}, defaultBlockSize))
	})
}

// finish records the memory the policy holds per free extent and its
// visits. It runs two collections, so call it once per run, untimed.
func (h *harness) finish() {
	h.rec.requests += h.requests
	h.rec.fragReqs += h.fragReqs
	h.rec.fragExts += h.fragExts
	h.rec.failed += h.failed
	h.rec.allocs += h.calls
	h.rec.visits += h.p.cost().visits
	h.p.view(func(s *space) { h.rec.extents = append(h.rec.extents, float64(s.extents())) })
	h.rec.bytesPerX = append(h.rec.bytesPerX, bytesPerExtent(&h.p))
}

// bytesPerExtent measures the heap that *p holds per free extent: the live
// heap with the policy minus the live heap after it is dropped. A running
// compaction, which holds both the old and the new indexes, is waited for.
func bytesPerExtent(p *policy) float64 {
	if s, ok := (*p).(interface{ settle() }); ok {
		s.settle()
	}
	var n int
	(*p).view(func(s *space) { n = s.extents() })
	with := liveHeap()
	runtime.KeepAlive(*p)
	*p = nil
	without := liveHeap()
	if n == 0 {
		return 0
	}
	return float64(int64(with)-int64(without)) / float64(n)
}

func liveHeap() uint64 {
	runtime.GC()
	return memStats().HeapAlloc
}

func gcCount() uint32 { return memStats().NumGC }

func memStats() runtime.MemStats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// percentile returns the p-th percentile (0 <= p <= 1) of xs, sorting it.
func percentile(xs []int64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return float64(xs[int(p*float64(len(xs)-1))])
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}
