package alloc

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/smallfs/smallfs/accounting"
)

// waitCompaction waits for a running compaction to end, if any.
func (a *Allocator) waitCompaction() {
	a.mu.Lock()
	c := a.compaction
	a.mu.Unlock()
	if c != nil {
		<-c.done
	}
}

// churned returns an Allocator of 1<<16 blocks aged by random Alloc, Free
// and deferred frees (some still pending), with automatic compaction off.
func churned(t *testing.T, opts Options) *Allocator {
	t.Helper()
	opts.CompactExtents = -1
	a := mustNew(t, 1<<16, nil, opts)
	r := rand.New(rand.NewPCG(5, 6))
	var live []Extent
	for i := range 20000 {
		if len(live) > 0 && r.IntN(2) == 0 {
			j := r.IntN(len(live))
			var err error
			if i%7 == 0 {
				err = a.FreeDeferred(live[j], uint64(i))
			} else {
				err = a.Free(live[j])
			}
			if err != nil {
				t.Fatal(err)
			}
			live[j] = live[len(live)-1]
			live = live[:len(live)-1]
			continue
		}
		if e, err := a.Alloc(r.Uint64N(1<<16), 1+r.Uint64N(8), 1); err == nil {
			live = append(live, e)
		}
	}
	a.Commit(15000)
	return a
}

func TestCompactKeepsFreeSpace(t *testing.T) {
	a := churned(t, Options{})
	before, pending := a.AppendFree(nil), a.Usage().PendingBlocks
	if len(before) < 300 || pending == 0 {
		t.Fatalf("churn left %d free extents and %d pending blocks; want many and some", len(before), pending)
	}
	figs, err := a.Compact()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	if after := a.AppendFree(nil); !slices.Equal(before, after) {
		t.Fatalf("compaction changed free space")
	}
	st := a.Stats()
	if st.PendingBlocks != pending || st.Compactions != 1 || st.LastCompaction != figs || figs.Extents != uint64(len(before)) {
		t.Errorf("after compaction: %d pending blocks (want %d), %d compactions, last %+v; Compact returned %+v for %d extents",
			st.PendingBlocks, pending, st.Compactions, st.LastCompaction, figs, len(before))
	}
	if figs.Replayed != 0 || figs.Rounds != 0 {
		t.Errorf("nothing happened meanwhile, yet %d mutations replayed in %d rounds", figs.Replayed, figs.Rounds)
	}
	if n := allocsPerPair(t, a, before[len(before)/2].Off, 1); n != 0 {
		t.Errorf("%v heap allocations per Alloc+Free after a compaction; want 0", n)
	}
}

// compactState reports, under the mutex, whether a compaction has started
// and the size index's removals and extents.
func (a *Allocator) compactState() (started bool, removals uint64, extents int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.compaction != nil || a.compactions > 0, a.free.bySize.removals, a.free.extents()
}

// TestAutoCompactionTrigger: with n one-block holes, Alloc+Free pairs at
// the holes remove one size key in each Alloc (none in Free) and hold n-1
// extents after an Alloc, n after a Free. A compaction starts once the
// removals reach half the extents held: with n = 300, at the 150th Alloc
// (call 299) if CompactExtents <= 299, at the 150th Free (call 300) if it
// is 300, never if it is above n or off; and never before.
func TestAutoCompactionTrigger(t *testing.T) {
	const holes = 300
	var used []Extent
	for b := uint64(0); b < 2*holes; b += 2 {
		used = append(used, Extent{Off: b, Len: 1})
	}
	for _, c := range []struct {
		threshold int
		at        int // the call (Alloc 2i-1, Free 2i) that starts it; 0: none in 3n pairs
	}{{64, 299}, {holes, 300}, {holes + 1, 0}, {-1, 0}} {
		a := mustNew(t, 2*holes, used, Options{CompactExtents: c.threshold})
		r := rand.New(rand.NewPCG(1, 1))
		got := 0
		check := func(call int) {
			if started, removals, _ := a.compactState(); started && got == 0 {
				got = call
			} else if !started && removals != uint64((call+1)/2) {
				t.Fatalf("threshold %d: %d size-index removals after call %d", c.threshold, removals, call)
			}
		}
		for i := 1; i <= 3*holes && got == 0; i++ {
			e, err := a.Alloc(1+2*r.Uint64N(holes), 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			check(2*i - 1)
			if err := a.Free(e); err != nil {
				t.Fatal(err)
			}
			check(2 * i)
		}
		if got != c.at {
			t.Errorf("threshold %d: compaction started at call %d; want %d (0: never)", c.threshold, got, c.at)
		}
		a.Close()
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

func layerType(t *testing.T, reg *accounting.Registry, name string) accounting.TypeStat {
	t.Helper()
	ts, _ := mustLayer(t, reg).Type(name)
	return ts
}

// TestCloseStopsCompaction closes the Allocator while a compaction waits
// in each phase (with Alloc+Free pairs made at the phases before, so that
// it replays a round and then drains): Compact returns ErrClosed, free
// space is as the pairs left it, nothing stays recorded or accounted, and
// no goroutine is left (Close waited for it).
func TestCloseStopsCompaction(t *testing.T) {
	for _, at := range []phase{phaseCloned, phaseBuilt, phaseCaughtUp, phaseDraining} {
		reg := accounting.NewRegistry()
		a := churned(t, Options{Registry: reg})
		a.swapOps = 2
		n := len(a.AppendFree(nil))
		r := rand.New(rand.NewPCG(3, 3))
		closed := make(chan struct{})
		_, err := a.compactWith(func(p phase) {
			if p != at {
				for range 8 {
					e, err := a.Alloc(r.Uint64N(1<<16), 1, 1)
					if err != nil {
						t.Fatal(err)
					}
					if err := a.Free(e); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			if ts := layerType(t, reg, "compaction"); ts.Live != 1 || ts.Bytes != int64(n)*extentBytes {
				t.Errorf("phase %d: compaction accounted as %d objects of %d bytes; want 1 of %d", p, ts.Live, ts.Bytes, n*extentBytes)
			}
			go func() { a.Close(); close(closed) }()
			for {
				a.mu.Lock()
				c := a.closed
				a.mu.Unlock()
				if c {
					return
				}
				runtime.Gosched()
			}
		})
		<-closed
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("phase %d: Compact during Close = %v; want ErrClosed", at, err)
		}
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		if got := len(a.AppendFree(nil)); got != n {
			t.Errorf("phase %d: %d free extents after the aborted compaction; want %d", at, got, n)
		}
		if st := a.Stats(); a.compaction != nil || a.free.log != nil || st.Compactions != 0 {
			t.Errorf("phase %d: after the abort: running %v, recording %v, %d compactions", at, a.compaction != nil, a.free.log != nil, st.Compactions)
		}
		for _, name := range []string{"compaction", "free-extent"} {
			if ts := layerType(t, reg, name); ts.Live != 0 || ts.Bytes != 0 {
				t.Errorf("phase %d: after Close %s accounted as %d objects, %d bytes", at, name, ts.Live, ts.Bytes)
			}
		}
		if _, err := a.Compact(); !errors.Is(err, ErrClosed) {
			t.Errorf("Compact after Close = %v; want ErrClosed", err)
		}
	}
}

// TestCompactionAccounting: the new indexes are accounted while they are
// built, the free extents stay accounted across the swap, nothing twice.
func TestCompactionAccounting(t *testing.T) {
	reg := accounting.NewRegistry()
	a := churned(t, Options{Registry: reg})
	u := a.Usage()
	held := int64(u.FreeExtents + u.PendingExtents)
	figs, err := a.compactWith(func(p phase) {
		if ts := layerType(t, reg, "compaction"); ts.Bytes != int64(u.FreeExtents)*extentBytes {
			t.Errorf("phase %d: compaction accounted at %d bytes; want %d", p, ts.Bytes, u.FreeExtents*extentBytes)
		}
	})
	if err != nil || figs.Extents != u.FreeExtents {
		t.Fatalf("Compact = %+v, %v", figs, err)
	}
	a.Stats()
	if ts := layerType(t, reg, "compaction"); ts.Live != 0 || ts.Bytes != 0 {
		t.Errorf("after the swap compaction accounted as %d objects, %d bytes", ts.Live, ts.Bytes)
	}
	if ts := layerType(t, reg, "free-extent"); ts.Live != held {
		t.Errorf("after the swap %d free extents accounted; allocator holds %d", ts.Live, held)
	}
}
