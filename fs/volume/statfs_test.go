package volume

import (
	"strconv"
	"testing"
)

// TestAllocStats: holes punched by deleting every other file show up as
// free extents, in the histogram and in the fragmentation score, and the
// free blocks agree with StatFS.
func TestAllocStats(t *testing.T) {
	v := newTestVolume(t, Options{InlineThreshold: -1})
	before := v.AllocStats()
	if before.FreeExtents != 1 || before.Score != 0 {
		t.Fatalf("fresh volume: %d free extents, score %v; want 1 and 0", before.FreeExtents, before.Score)
	}
	data := pattern(3*4096, 1)
	for i := range 40 {
		writeFile(t, v, RootIno, "f"+strconv.Itoa(i), data)
	}
	for i := 0; i < 40; i += 2 {
		ok(t, v.Unlink(root, RootIno, "f"+strconv.Itoa(i)))
	}
	ok(t, v.settleFrees()) // the frees become allocatable once durable
	st := v.AllocStats()
	if st.FreeExtents < 20 {
		t.Fatalf("%d free extents after punching 20 holes", st.FreeExtents)
	}
	var inHist uint64
	for _, n := range st.Histogram {
		inHist += n
	}
	if inHist != st.FreeExtents {
		t.Fatalf("histogram counts %d extents, stats %d", inHist, st.FreeExtents)
	}
	if st.Histogram[1] < 19 { // 3-block holes (bucket 2-3), one may join free space
		t.Fatalf("histogram %v: want at least 19 extents of 2-3 blocks", st.Histogram[:4])
	}
	if st.Score <= 0 || st.Score >= 1 {
		t.Fatalf("fragmentation score %v, want strictly between 0 and 1", st.Score)
	}
	if fs := v.StatFS(); fs.BlocksFree != st.FreeBlocks {
		t.Fatalf("StatFS %d free blocks, allocator %d", fs.BlocksFree, st.FreeBlocks)
	}
	if st.Calls == 0 {
		t.Fatal("no allocator calls counted")
	}
}
