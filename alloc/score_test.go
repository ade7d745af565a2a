package alloc

import (
	"math"
	"testing"
)

// lens yields n extents of length l.
func lens(n, l uint64) func(func(uint64) bool) {
	return func(yield func(uint64) bool) {
		for range n {
			if !yield(l) {
				return
			}
		}
	}
}

// Ceph's sanity cases for get_fragmentation_score, on a 16 GiB device of
// 4 KiB units.
func TestFragmentationScoreSanity(t *testing.T) {
	const unit, units = 4096, 16 << 30 / 4096
	// One unit taken every 100 MB: almost no fragmentation.
	step := uint64(100 << 20 / unit)
	if s := FragmentationScore(lens(units/step, step-1), unit); s >= 1e-4 {
		t.Errorf("one unit per 100 MB used: S = %g; want < 1e-4", s)
	}
	if s := FragmentationScore(lens(units/2, 1), unit); s <= 0.99 {
		t.Errorf("every other unit used: S = %g; want > 0.99", s)
	}
	if s := FragmentationScore(lens(units/5, 4), unit); s <= 0.90 {
		t.Errorf("one unit in five used: S = %g; want > 0.90", s)
	}
	if s := FragmentationScore(lens(1, units), unit); s != 0 {
		t.Errorf("one free extent: S = %g; want 0", s)
	}
	if s := FragmentationScore(lens(1000, 1), unit); math.Abs(s-1) > 1e-12 {
		t.Errorf("all one-unit extents: S = %g; want 1", s)
	}
	if s := FragmentationScore(lens(0, 1), unit); s != 0 {
		t.Errorf("no free space: S = %g; want 0", s)
	}
}

func TestStatsHistogramAndScore(t *testing.T) {
	a := mustNew(t, 100, []Extent{{1, 1}, {5, 1}, {50, 1}}, Options{})
	st := a.Stats()
	if st.FreeExtents != 4 || st.FreeBlocks != 97 || st.LargestFree != 49 {
		t.Fatalf("stats %+v", st)
	}
	// Free: [0,1) [2,5) [6,50) [51,100): lengths 1, 3, 44, 49.
	if st.Histogram[0] != 1 || st.Histogram[1] != 1 || st.Histogram[5] != 2 {
		t.Fatalf("histogram %v", st.Histogram[:8])
	}
	if st.Score <= 0 || st.Score >= 1 {
		t.Fatalf("score %g; want within (0, 1)", st.Score)
	}
}
