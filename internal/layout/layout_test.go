package layout

import "testing"

func TestExtentsMergesRunsThatContinueOnTheDevice(t *testing.T) {
	for _, tc := range []struct {
		runs []Run
		want int
	}{
		{nil, 0},
		{[]Run{{Start: 5, Len: 0}}, 0},
		{[]Run{{Start: 5, Len: 3}}, 1},
		{[]Run{{Start: 5, Len: 3}, {Start: 8, Len: 2}}, 1},                     // logically split, physically one
		{[]Run{{Start: 5, Len: 3}, {Start: 9, Len: 2}}, 2},                     // a gap of one block
		{[]Run{{Start: 9, Len: 2}, {Start: 5, Len: 4}}, 2},                     // backwards on the device
		{[]Run{{Start: 1, Len: 1}, {Start: 2, Len: 0}, {Start: 2, Len: 1}}, 1}, // empty run ignored
	} {
		if got := Extents(tc.runs); got != tc.want {
			t.Errorf("Extents(%v) = %d, want %d", tc.runs, got, tc.want)
		}
	}
}

func TestFigures(t *testing.T) {
	b := NewBuilder(4096)
	// Directory a: three files packed end to end in blocks 10-15, one
	// empty file: spread 1.
	a := b.Dir()
	a.File(4096, []Run{{10, 1}})
	a.File(8192, []Run{{11, 2}})
	a.File(12000, []Run{{13, 3}})
	a.File(0, nil)
	a.Done()
	// Directory c: two one-block files 100 blocks apart: (109-10+1)/2 = 50.
	c := b.Dir()
	c.File(100, []Run{{10, 1}})
	c.File(100, []Run{{109, 1}})
	c.Done()
	// Directory d: one large file in three extents: no spread (one file).
	d := b.Dir()
	d.File(1<<20, []Run{{200, 100}, {400, 100}, {600, 56}})
	d.Done()
	f := b.Figures()
	if f.Files != 7 || f.NoBlocks != 1 || f.BlockSize != 4096 {
		t.Errorf("files %d, without blocks %d, block size %d; want 7, 1, 4096", f.Files, f.NoBlocks, f.BlockSize)
	}
	wantAll := Dist{Files: 6, Median: 1, P99: 3, Max: 3, Mean: 8.0 / 6, Fragmented: 1}
	if f.Extents != wantAll {
		t.Errorf("extents %+v, want %+v", f.Extents, wantAll)
	}
	if want := (Dist{Files: 5, Median: 1, P99: 1, Max: 1, Mean: 1}); f.Small != want {
		t.Errorf("small files %+v, want %+v", f.Small, want)
	}
	if want := (Spread{Dirs: 2, Median: 1, P90: 50, Max: 50}); f.Spread != want {
		t.Errorf("spread %+v, want %+v", f.Spread, want)
	}
}

func TestFiguresOfNothing(t *testing.T) {
	f := NewBuilder(512).Figures()
	if f.Files != 0 || f.Extents.Files != 0 || f.Spread.Dirs != 0 || f.Extents.Median != 0 {
		t.Errorf("empty filesystem: %+v", f)
	}
}

func TestRankIsNearestRank(t *testing.T) {
	for _, tc := range []struct{ n, p, want int }{
		{1, 50, 0}, {1, 99, 0}, {2, 50, 0}, {3, 50, 1}, {4, 50, 1}, {100, 99, 98}, {101, 99, 99}, {1000, 90, 899},
	} {
		if got := rank(tc.n, tc.p); got != tc.want {
			t.Errorf("rank(%d, %d) = %d, want %d", tc.n, tc.p, got, tc.want)
		}
	}
}
