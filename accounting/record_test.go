package accounting

import (
	"sync"
	"testing"
)

// TestConcurrentTotalsExact has many goroutines allocate, resize and free on
// shared records and counters; once they finish, every figure is exact.
func TestConcurrentTotalsExact(t *testing.T) {
	const goroutines, rounds, size = 16, 2000, 96
	reg := NewRegistry()
	rec := reg.Layer("fs").Type("inode")
	hits := reg.Layer("fs").Counter("hits")
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			// Each goroutine keeps g+1 objects alive at the end.
			for i := range rounds {
				rec.Alloc(size)
				rec.Resize(8)
				hits.Inc()
				if i >= g+1 {
					rec.Resize(-8)
					rec.Free(size)
					hits.Add(2)
				}
			}
		})
	}
	wg.Wait()

	var kept int64
	for g := range goroutines {
		kept += int64(g + 1)
	}
	got, _ := mustLayer(t, reg.Snapshot(), "fs").Type("inode")
	want := TypeStat{
		Name: "inode", Live: kept, Bytes: kept * (size + 8),
		Total: goroutines * rounds, Frees: uint64(goroutines*rounds - kept),
		Peak: got.Peak,
	}
	if got != want {
		t.Fatalf("snapshot = %+v, want %+v", got, want)
	}
	// Never above what could have been live at once, never below the end.
	if maxLive := int64(goroutines*rounds) * (size + 8); got.Peak < got.Bytes || got.Peak > maxLive {
		t.Fatalf("peak %d outside [%d, %d]", got.Peak, got.Bytes, maxLive)
	}
	if v := hits.Value(); v != uint64(goroutines*rounds)+2*uint64(goroutines*rounds-kept) {
		t.Fatalf("counter = %d", v)
	}
}

// TestPeakBound checks the documented accuracy: serially, the peak is never
// above the real one and within 1/16 of it.
func TestPeakBound(t *testing.T) {
	for _, size := range []int64{1, 100, 4096, peakGrain, 3 * peakGrain} {
		for _, fixed := range []bool{false, true} {
			testPeakBound(t, size, fixed)
		}
	}
}

func testPeakBound(t *testing.T, size int64, fixed bool) {
	t.Helper()
	reg := NewRegistry()
	rec := reg.Layer("l").Type("t")
	if fixed {
		rec = reg.Layer("l").FixedType("t", size)
	}
	const n = 1000
	for range n {
		rec.Alloc(size)
	}
	for range n {
		rec.Free(size)
	}
	st, _ := mustLayer(t, reg.Snapshot(), "l").Type("t")
	truePeak := n * size
	if st.Peak > truePeak || st.Peak < truePeak*16/17 {
		t.Errorf("size %d fixed %v: peak %d, true peak %d", size, fixed, st.Peak, truePeak)
	}
	if st.Bytes != 0 || st.Live != 0 || st.Anomalies != 0 {
		t.Errorf("size %d fixed %v: left %+v", size, fixed, st)
	}
}

// TestPeakNeverOverstatesAcrossStripes frees on another goroutine (so
// another stripe) than it allocates; the live count is bounded by the queue,
// and the peak must never claim more.
func TestPeakNeverOverstatesAcrossStripes(t *testing.T) {
	const queue, size, n = 64, 4096, 20000
	reg := NewRegistry()
	rec := reg.Layer("l").Type("t")
	ch := make(chan struct{}, queue)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range ch {
			rec.Free(size)
		}
	})
	for range n {
		rec.Alloc(size) // at most queue in the channel, one here, one there
		ch <- struct{}{}
	}
	close(ch)
	wg.Wait()
	st, _ := mustLayer(t, reg.Snapshot(), "l").Type("t")
	if st.Peak > (queue+2)*size || st.Live != 0 || st.Total != n {
		t.Fatalf("%+v: peak above the most that was ever live (%d)", st, (queue+2)*size)
	}
}

// TestFixedType: bytes follow the count exactly under concurrency, and a
// wrong size or a Resize is an anomaly that changes nothing.
func TestFixedType(t *testing.T) {
	const goroutines, rounds, size = 8, 3000, 4096
	reg := NewRegistry()
	rec := reg.Layer("iobuf").FixedType("4KiB", size)
	if again := reg.Layer("iobuf").FixedType("4KiB", 8192); again != rec {
		t.Fatal("second lookup made a new record")
	}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for i := range rounds {
				rec.Alloc(size)
				if i%3 != 0 {
					rec.Free(size)
				}
			}
		})
	}
	wg.Wait()
	rec.Alloc(size + 1)
	rec.Free(1)
	rec.Resize(10)
	st, _ := mustLayer(t, reg.Snapshot(), "iobuf").Type("4KiB")
	live := int64(goroutines * rounds / 3)
	if st.Live != live || st.Bytes != live*size || st.Total != goroutines*rounds || st.Size != size || st.Anomalies != 3 {
		t.Fatalf("%+v, want %d live of %d bytes and 3 anomalies", st, live, size)
	}
	if st.Peak < st.Bytes || st.Peak > goroutines*rounds*size {
		t.Fatalf("peak %d out of range", st.Peak)
	}
}

// TestMisuseIsAnAnomaly frees what was never allocated and passes negative
// sizes: nothing panics, the anomaly shows and stays after later use.
func TestMisuseIsAnAnomaly(t *testing.T) {
	reg := NewRegistry()
	rec := reg.Layer("l").Type("t")
	c := reg.Layer("l").Counter("c")
	rec.Free(10) // nothing alive
	rec.Alloc(-1)
	rec.Free(-1)
	c.Add(-5)
	c.Add(3)

	l := mustLayer(t, reg.Snapshot(), "l")
	st, _ := l.Type("t")
	if st.Live != 0 || st.Bytes != 0 || st.Anomalies != 3 || st.AnomalyBytes != 10 {
		t.Fatalf("after misuse: %+v", st)
	}
	if cs, _ := l.Counter("c"); cs.Value != 3 || cs.Anomalies != 1 {
		t.Fatalf("counter after misuse: %+v", cs)
	}

	// A later allocation cancels the excess in the totals, not the anomaly.
	rec.Alloc(10)
	rec.Alloc(10)
	st, _ = mustLayer(t, reg.Snapshot(), "l").Type("t")
	if st.Anomalies != 3 || st.AnomalyBytes != 10 || st.Live != 1 {
		t.Fatalf("anomaly not kept: %+v", st)
	}
}

func TestLookupIsIdempotentUnderRace(t *testing.T) {
	reg := NewRegistry()
	const goroutines = 8
	recs := make([]*Record, goroutines)
	ctrs := make([]*Counter, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			recs[g] = reg.Layer("journal").Type("entry")
			ctrs[g] = reg.Layer("journal").Counter("entry") // separate name space
		})
	}
	wg.Wait()
	for g := 1; g < goroutines; g++ {
		if recs[g] != recs[0] || ctrs[g] != ctrs[0] {
			t.Fatal("two lookups of one name returned different objects")
		}
	}
	if got := len(reg.Snapshot().Layers); got != 1 {
		t.Fatalf("%d layers, want 1", got)
	}
}

// TestUpdatesDoNotAllocate pins the hot path to zero allocations.
func TestUpdatesDoNotAllocate(t *testing.T) {
	reg := NewRegistry()
	rec := reg.Layer("l").Type("t")
	fixed := reg.Layer("l").FixedType("f", 1<<20)
	c := reg.Layer("l").Counter("c")
	if n := testing.AllocsPerRun(1000, func() {
		rec.Alloc(1 << 20) // crosses peakGrain: samples the peak too
		rec.Resize(-1)
		rec.Free(1<<20 - 1)
		fixed.Alloc(1 << 20) // samples every time
		fixed.Free(1 << 20)
		c.Inc()
	}); n != 0 {
		t.Fatalf("%v allocations per update round, want 0", n)
	}
}

func mustLayer(t *testing.T, s Snapshot, name string) LayerStat {
	t.Helper()
	l, ok := s.Layer(name)
	if !ok {
		t.Fatalf("layer %q missing from snapshot", name)
	}
	return l
}
