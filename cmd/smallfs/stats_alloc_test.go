package main

import (
	"slices"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

// TestVolumeAlloc: the section info and stats show is the volume's
// allocator figures, with the histogram's empty tail cut.
func TestVolumeAlloc(t *testing.T) {
	dev := device.NewMem(4 << 20)
	if err := volume.Mkfs(dev, volume.MkfsOptions{}); err != nil {
		t.Fatal(err)
	}
	vol, err := volume.Open(dev, volume.Options{CommitInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer vol.Close()
	st := vol.AllocStats()
	got := volumeAlloc(vol)
	if got.FreeBlocks != st.FreeBlocks || got.FreeExtents != st.FreeExtents || got.LargestFree != st.LargestFree || got.Score != st.Score {
		t.Fatalf("section %+v, allocator %+v", got, st.Usage)
	}
	if len(got.Histogram) == 0 || got.Histogram[len(got.Histogram)-1] == 0 {
		t.Fatalf("histogram %v: trailing empty buckets not cut", got.Histogram)
	}
	if !slices.Equal(got.Histogram, st.Histogram[:len(got.Histogram)]) {
		t.Fatalf("histogram %v, allocator %v", got.Histogram, st.Histogram)
	}
	for _, n := range st.Histogram[len(got.Histogram):] {
		if n != 0 {
			t.Fatalf("histogram %v cut a non-empty bucket of %v", got.Histogram, st.Histogram)
		}
	}
}
