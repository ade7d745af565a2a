package accounting

import (
	"math/bits"
	"sync/atomic"
)

// peakGrain is how many bytes a stripe allocates between two peak samples
// (64 KiB). Smaller samples more often and costs more; see doc.go.
const peakGrain = 1 << 16

// Record accounts one type of object in one layer: how many are alive, how
// many bytes they hold, how many were ever created, and the peak of bytes.
// Callers look it up once (Layer.Type or Layer.FixedType) and keep the
// pointer. All methods are safe for concurrent use and take no lock.
type Record struct {
	name    string
	unit    int64 // FixedType: every object has unit bytes; 0: sizes vary
	shift   uint  // 64 - log2(len(stripes)), for stripeOf
	mask    uint64
	stripes []stripe

	// Written only by peak samples, snapshots and misuse: cold words.
	peak         atomic.Int64 // highest sampled live bytes
	deficit      atomic.Int64 // most frees ever seen beyond allocs
	deficitBytes atomic.Int64 // most bytes ever seen freed beyond allocated
	invalid      atomic.Int64 // calls with a bad size
}

// newRecord makes a record; unit > 0 makes it fixed-size. Its peak is then
// also sampled every time a stripe's allocations reach a multiple of mask+1:
// the largest power of two of objects within peakGrain bytes, at least 1.
func newRecord(name string, unit int64, stripes int) *Record {
	r := &Record{name: name, unit: max(unit, 0), shift: uint(64 - log2(stripes)), stripes: make([]stripe, stripes)}
	if r.unit > 0 {
		r.mask = 1<<(bits.Len64(uint64(max(peakGrain/r.unit, 1)))-1) - 1
	}
	return r
}

// Alloc records that one object of the given size came to life. A negative
// size, or for a FixedType a size other than its own, is counted as an
// anomaly and changes nothing else.
func (r *Record) Alloc(bytes int64) {
	s := r.stripeFor(bytes)
	if s == nil {
		return
	}
	n := s.allocs.Add(1)
	if r.unit != 0 { // bytes follow from the count
		r.maybeSample(s, int64(n-s.frees.Load()), n&r.mask == 0)
		return
	}
	r.grow(s, uint64(bytes))
}

// Free records that one object of the given size died. Freeing more objects
// or bytes than were allocated is not an error here (the hot path cannot see
// the other stripes); it shows in the snapshot as an anomaly. A bad size is
// counted as an anomaly, as for Alloc.
func (r *Record) Free(bytes int64) {
	s := r.stripeFor(bytes)
	if s == nil {
		return
	}
	s.frees.Add(1)
	if r.unit == 0 {
		s.freeBytes.Add(uint64(bytes))
	}
}

// Resize records that a live object grew (delta > 0) or shrank (delta < 0).
// Objects of a FixedType cannot: that is counted as an anomaly.
func (r *Record) Resize(delta int64) {
	if r.unit != 0 {
		r.invalid.Add(1)
		return
	}
	s := &r.stripes[stripeOf(r.shift)]
	switch {
	case delta > 0:
		r.grow(s, uint64(delta))
	case delta < 0:
		s.freeBytes.Add(uint64(-delta))
	}
}

// stripeFor returns the calling goroutine's stripe, or nil after counting
// a bad size as an anomaly.
func (r *Record) stripeFor(bytes int64) *stripe {
	if bytes < 0 || (r.unit != 0 && bytes != r.unit) {
		r.invalid.Add(1)
		return nil
	}
	return &r.stripes[stripeOf(r.shift)]
}

// grow adds n allocated bytes to s, and may sample the peak.
func (r *Record) grow(s *stripe, n uint64) {
	after := s.allocBytes.Add(n)
	r.maybeSample(s, int64(after-s.freeBytes.Load()), (after-n)/peakGrain != after/peakGrain)
}

// maybeSample samples the peak in two cases. When local, the stripe's own
// live bytes (objects for a FixedType), passes its high mark: serially, or
// while each goroutine frees what it allocated, that is the whole record, so
// the peak follows it to within 1/16 (the mark is set 1/16 above the last
// sample, so a steady or growing record samples rarely). And when crossed
// says the stripe's allocations passed another peakGrain bytes, which bounds
// the error when objects are freed on other stripes than they were
// allocated on. Both inputs come from the stripe's own cache line.
func (r *Record) maybeSample(s *stripe, local int64, crossed bool) {
	if local > s.high.Load() {
		s.high.Store(local + local>>4)
		r.samplePeak()
	} else if crossed {
		r.samplePeak()
	}
}

// samplePeak raises the peak to the live bytes now. Reading every
// allocation total before any free total makes the frees read at least
// those done when the first pass ended and the allocations at most those,
// so the sum is never above the bytes really live at that moment. The peak
// therefore never reports a high that did not happen.
func (r *Record) samplePeak() {
	t := r.sum(false)
	raise(&r.peak, int64(t.allocBytes-t.freeBytes))
}

// totals are a record's stripes summed.
type totals struct{ allocs, frees, allocBytes, freeBytes uint64 }

// sum adds up the stripes in two passes, allocations then frees, or frees
// then allocations when freesFirst (see samplePeak and stat for why each).
func (r *Record) sum(freesFirst bool) totals {
	var t totals
	for pass := range 2 {
		readFrees := (pass == 0) == freesFirst
		for i := range r.stripes {
			s := &r.stripes[i]
			if readFrees {
				t.frees += s.frees.Load()
				t.freeBytes += s.freeBytes.Load()
			} else {
				t.allocs += s.allocs.Load()
				t.allocBytes += s.allocBytes.Load()
			}
		}
	}
	if r.unit != 0 {
		t.allocBytes, t.freeBytes = t.allocs*uint64(r.unit), t.frees*uint64(r.unit)
	}
	return t
}

// raise sets *w to max(*w, v) without a lock.
func raise(w *atomic.Int64, v int64) {
	for old := w.Load(); v > old; old = w.Load() {
		if w.CompareAndSwap(old, v) {
			return
		}
	}
}

func log2(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}
