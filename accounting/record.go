package accounting

import "sync/atomic"

// peakGrain is how many bytes a stripe allocates between two peak samples
// (64 KiB). Smaller samples more often and costs more; see doc.go.
const peakGrain = 1 << 16

// Record accounts one type of object in one layer: how many are alive, how
// many bytes they hold, how many were ever created, and the peak of bytes.
// Callers look it up once (Layer.Type) and keep the pointer. All methods are
// safe for concurrent use and take no lock.
type Record struct {
	name    string
	shift   uint // 64 - log2(len(stripes)), for stripeOf
	stripes []stripe

	// Written only by peak samples, snapshots and misuse: cold words.
	peak         atomic.Int64 // highest sampled live bytes
	deficit      atomic.Int64 // most frees ever seen beyond allocs
	deficitBytes atomic.Int64 // most bytes ever seen freed beyond allocated
	invalid      atomic.Int64 // calls with a negative size
}

func newRecord(name string, stripes int) *Record {
	return &Record{name: name, shift: uint(64 - log2(stripes)), stripes: make([]stripe, stripes)}
}

// Alloc records that one object of the given size came to life. A negative
// size is counted as an anomaly and changes nothing else.
func (r *Record) Alloc(bytes int64) {
	if s := r.stripeFor(bytes); s != nil {
		s.allocs.Add(1)
		r.grow(s, uint64(bytes))
	}
}

// Free records that one object of the given size died. Freeing more objects
// or bytes than were allocated is not an error here (the hot path cannot see
// the other stripes); it shows in the snapshot as an anomaly. A negative size
// is counted as an anomaly and changes nothing else.
func (r *Record) Free(bytes int64) {
	if s := r.stripeFor(bytes); s != nil {
		s.frees.Add(1)
		s.freeBytes.Add(uint64(bytes))
	}
}

// stripeFor returns the calling goroutine's stripe, or nil after counting
// a negative size as an anomaly.
func (r *Record) stripeFor(bytes int64) *stripe {
	if bytes < 0 {
		r.invalid.Add(1)
		return nil
	}
	return &r.stripes[stripeOf(r.shift)]
}

// Resize records that a live object grew (delta > 0) or shrank (delta < 0).
func (r *Record) Resize(delta int64) {
	s := &r.stripes[stripeOf(r.shift)]
	switch {
	case delta > 0:
		r.grow(s, uint64(delta))
	case delta < 0:
		s.freeBytes.Add(uint64(-delta))
	}
}

// grow adds n allocated bytes to s and samples the peak in two cases. When
// the stripe's own live bytes pass its high mark: serially, or while each
// goroutine frees what it allocated, that is the whole record, so the peak
// follows it to within 1/16 (the mark is set 1/16 above the last sample, so
// a steady or growing record samples rarely). And each time the stripe's
// allocation total crosses a multiple of peakGrain, which bounds the error
// when objects are freed on other stripes than they were allocated on. Both
// checks read the stripe's own cache line only.
func (r *Record) grow(s *stripe, n uint64) {
	after := s.allocBytes.Add(n)
	local := int64(after - s.freeBytes.Load())
	if local > s.high.Load() {
		s.high.Store(local + local>>4)
		r.samplePeak()
	} else if (after-n)/peakGrain != after/peakGrain {
		r.samplePeak()
	}
}

// samplePeak raises the peak to the live bytes now. It reads every
// allocation total before any free total: the frees read are then at least
// those done when the first pass ended and the allocations at most those,
// so the sum is never above the bytes really live at that moment. The peak
// therefore never reports a high that did not happen.
func (r *Record) samplePeak() {
	var alloc, free uint64
	for i := range r.stripes {
		alloc += r.stripes[i].allocBytes.Load()
	}
	for i := range r.stripes {
		free += r.stripes[i].freeBytes.Load()
	}
	raise(&r.peak, int64(alloc-free))
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
