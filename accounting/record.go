package accounting

import (
	"math/bits"
	"sync/atomic"
)

// Between two peak samples a stripe allocates at most peakGrain bytes or
// peakObjects objects, whichever is more. Smaller values sample more often
// and cost more; see doc.go, "Peak".
const (
	peakGrain   = 1 << 16
	peakObjects = 16
)

// Record accounts one type of object in one layer: how many are alive, how
// many bytes they hold, how many were ever created, and the peak of bytes.
// Callers look it up once (Layer.Type or Layer.FixedType) and keep the
// pointer. All methods are safe for concurrent use and take no lock.
type Record struct {
	name    string
	unit    int64  // FixedType: every object has unit bytes; 0: sizes vary
	span    uint64 // FixedType: objects a stripe allocates between grain samples
	shift   uint   // 64 - log2(len(stripes)), for stripeOf
	stripes []stripe

	// Written only by peak samples, snapshots and misuse: cold words.
	peak         atomic.Int64 // highest sampled live bytes
	deficit      atomic.Int64 // most frees ever seen beyond allocs
	deficitBytes atomic.Int64 // most bytes ever seen freed beyond allocated
	invalid      atomic.Int64 // calls with a bad size
}

// newRecord makes a record; unit > 0 makes it fixed-size, with a span of
// the largest power of two of objects within peakGrain bytes, at least
// peakObjects.
func newRecord(name string, unit int64, stripes int) *Record {
	r := &Record{name: name, unit: max(unit, 0), shift: uint(64 - log2(stripes)), stripes: make([]stripe, stripes)}
	if r.unit > 0 {
		r.span = max(uint64(1)<<(bits.Len64(uint64(max(peakGrain/r.unit, 1)))-1), peakObjects)
	}
	return r
}

// Alloc records that one object of the given size came to life. A negative
// size, or for a FixedType a size other than its own, is counted as an
// anomaly and changes nothing else.
//
// The common path is the atomic adds (one for a FixedType, two otherwise)
// and two plain loads from the stripe's own cache line that tell whether the
// peak is due for a sample.
func (r *Record) Alloc(bytes int64) {
	if bytes < 0 || (r.unit != 0 && bytes != r.unit) {
		r.invalid.Add(1)
		return
	}
	s := &r.stripes[stripeOf(r.shift)]
	if r.unit != 0 { // bytes follow from the count
		n := s.allocs.Add(1)
		if live := int64(n - s.frees.Load()); s.sampleDue(n, live) {
			r.sample(s, n, live, 1)
		}
		return
	}
	s.allocs.Add(1)
	r.grow(s, uint64(bytes))
}

// Free records that one object of the given size died. Freeing more objects
// or bytes than were allocated is not an error here (the hot path cannot see
// the other stripes); it shows in the snapshot as an anomaly. A bad size is
// counted as an anomaly, as for Alloc.
func (r *Record) Free(bytes int64) {
	if bytes < 0 || (r.unit != 0 && bytes != r.unit) {
		r.invalid.Add(1)
		return
	}
	s := &r.stripes[stripeOf(r.shift)]
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

// grow adds n allocated bytes to s and samples the peak when it is due.
func (r *Record) grow(s *stripe, n uint64) {
	after := s.allocBytes.Add(n)
	if live := int64(after - s.freeBytes.Load()); s.sampleDue(after, live) {
		r.sample(s, after, live, n)
	}
}

// sampleDue tells whether the peak is due for a sample, given the stripe's
// allocation total and live figure after an allocation (objects for a
// FixedType, bytes otherwise). It is due in two cases. When live passes the
// stripe's high mark: serially, or while each goroutine frees what it
// allocated, that is the whole record, so the peak follows it to within
// 1/16 (the mark is set 1/16 above live, so a steady or growing record
// samples rarely). And when the total reaches the stripe's due mark, set a
// span past the total at the last sample: that bounds the error when
// objects are freed on other stripes than they were allocated on.
func (s *stripe) sampleDue(total uint64, live int64) bool {
	return total >= s.due.Load() || live > s.high.Load()
}

// sample samples the peak and sets the stripe's next marks, off the common
// path; n is the allocation that made it due (in bytes, or 1 object). The
// next grain sample is due a span later: r.span objects for a FixedType,
// max(peakGrain, peakObjects*n) bytes otherwise. Goroutines sharing a
// stripe may race to set the marks; each value stored follows a sample
// taken at that total or later, so a due sample is never put off by more
// than a span.
func (r *Record) sample(s *stripe, total uint64, live int64, n uint64) {
	r.samplePeak()
	span := r.span
	if r.unit == 0 {
		span = max(peakGrain, peakObjects*n)
	}
	s.high.Store(live + live>>4)
	s.due.Store(total + span)
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
