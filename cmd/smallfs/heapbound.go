package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Under gc_percent=auto the daemon bounds what the collector lets the
// heap grow by between collections: Go's 100 % while the live heap is
// small, but never more than heapHeadroom or an eighth of the live heap,
// whichever is larger. Nearly all of a large heap is metadata that lives
// as long as the mount, so 100 % would keep as much again resident for
// garbage (docs/DECISIONS.md, "The heap grows by at most 32 MiB or an
// eighth between collections").
const (
	heapHeadroom = 32 << 20
	heapShare    = 8 // headroom is at least live/heapShare
)

// heapPercent is the GOGC that gives a live heap of live bytes the
// bounded headroom: 100 up to heapHeadroom of live heap, less above,
// never below 100/heapShare.
func heapPercent(live uint64) int {
	room := max(uint64(heapHeadroom), live/heapShare)
	if live == 0 || room >= live {
		return 100
	}
	return max(int(room*100/live), 100/heapShare)
}

// heapBounded tells whether boundHeap applies (GOGC and GOMEMLIMIT in
// the environment say otherwise) and says what applies, for the log.
func heapBounded() (string, bool) {
	if env := os.Getenv("GOGC"); env != "" {
		return "GOGC=" + env, false
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return "100 (GOMEMLIMIT set)", false
	}
	return "auto (100, at most 32 MiB or 1/8 of the live heap)", true
}

// boundHeap sets GOGC from the live heap after every collection from
// now on. The daemon starts it once the volume is loaded: during the
// load the live heap grows from nothing, and a bounded headroom would
// collect it over and over; the load's garbage is then collected once
// (see mounted.run).
func boundHeap() {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	last := 100
	var after func()
	after = func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			if p := heapPercent(sample[0].Value.Uint64()); p != last {
				debug.SetGCPercent(p)
				last = p
			}
		}
		watchGC(after)
	}
	watchGC(after)
}

// gcWatch is an object whose finalizer runs after the collection that
// found it unreachable: a hook at the end of every collection.
type gcWatch struct{ _ *byte }

// watchGC runs f once after the next collection (on the finalizer
// goroutine).
func watchGC(f func()) {
	runtime.SetFinalizer(&gcWatch{}, func(*gcWatch) { f() })
}
