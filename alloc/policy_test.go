package alloc

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// policy is one allocation strategy run by the shared test suite and the
// benchmark harness: the smallfs Allocator or a baseline. Baselines keep
// free space in the same two indexes and differ only in the choice.
type policy interface {
	alloc(hint, want, min uint64) (Extent, bool)
	free(e Extent)
	// cost returns the visits and seeks of all alloc calls so far.
	cost() cost
	// view calls f with free space, for the oracle, the score and the
	// checks; nothing changes it meanwhile (the Allocator holds its mutex:
	// a compaction may swap its indexes at any time).
	view(f func(s *space))
}

// policies lists every strategy, the Allocator first.
var policies = []struct {
	name string
	new  func(capacity uint64, used []Extent) (policy, error)
}{
	{"smallfs", newSmallfsPolicy},
	{"bestfit", newBaseline(bestFit)},
	{"nearest", newBaseline(nearestFit)},
	{"firstfit", newBaseline(firstFit)},
}

// chooser picks where to allocate in a baseline; it changes nothing.
type chooser func(s *space, hint, want, min uint64, c *cost) (pick, bool)

// baseline is a policy made of the package's free-space indexes and a
// chooser.
type baseline struct {
	s      space
	c      cost
	choose chooser
}

func newBaseline(choose chooser) func(uint64, []Extent) (policy, error) {
	return func(capacity uint64, used []Extent) (policy, error) {
		a, err := NewWithUsed(capacity, used, Options{})
		if err != nil {
			return nil, err
		}
		return &baseline{s: a.free, choose: choose}, nil
	}
}

func (b *baseline) alloc(hint, want, min uint64) (Extent, bool) {
	p, ok := b.choose(&b.s, hint, want, min, &b.c)
	if ok {
		b.s.carve(p.from, p.p)
	}
	return p.p, ok
}

func (b *baseline) free(e Extent) {
	if f, ok := b.s.add(e); !ok {
		panic(fmt.Sprintf("harness frees %v, which overlaps free %v", e, f))
	}
}

func (b *baseline) cost() cost          { return b.c }
func (b *baseline) view(f func(*space)) { f(&b.s) }

// largestFit is the partial-allocation rule every baseline shares: the
// largest extent, if it holds min.
func largestFit(s *space, hint, want, min uint64, c *cost) (pick, bool) {
	c.seeks++
	l, ok := s.bySize.largest()
	if !ok {
		return pick{}, false
	}
	return place(l, hint, want, min)
}

// TestPolicies is the shared suite: every policy, driven at random, hands
// out only free blocks, within [min, want], keeps free space coalesced and
// conserved, and fails only when no free extent holds min blocks.
func TestPolicies(t *testing.T) {
	const capacity = 500
	for _, pol := range policies {
		t.Run(pol.name, func(t *testing.T) {
			p, err := pol.new(capacity, []Extent{{100, 50}})
			if err != nil {
				t.Fatal(err)
			}
			blocks := make([]byte, capacity)
			for b := 100; b < 150; b++ {
				blocks[b] = stUsed
			}
			r := rand.New(rand.NewPCG(7, 7))
			var live []Extent
			for i := range 5000 {
				if len(live) > 0 && r.IntN(5) < 2 {
					j := r.IntN(len(live))
					p.free(live[j])
					markBlocks(blocks, live[j], stFree)
					live[j] = live[len(live)-1]
					live = live[:len(live)-1]
				} else {
					want := 1 + r.Uint64N(40)
					min := 1 + r.Uint64N(want)
					hint := r.Uint64N(capacity)
					e, ok := p.alloc(hint, want, min)
					if err := checkAlloc(blocks, e, ok, want, min); err != nil {
						t.Fatalf("step %d: alloc(%d, %d, %d): %v", i, hint, want, min, err)
					}
					if ok {
						live = append(live, e)
					}
				}
				p.view(func(s *space) {
					if errs := s.check(capacity, true); len(errs) > 0 {
						t.Fatalf("step %d: %v", i, errs)
					}
				})
			}
		})
	}
}
