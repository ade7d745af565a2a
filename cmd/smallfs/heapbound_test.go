package main

import "testing"

func TestHeapPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{10 << 20, 100},
		{32 << 20, 100},
		{64 << 20, 50},
		{200 << 20, 16},
		{256 << 20, 12}, // an eighth from here on
		{4 << 30, 12},
	} {
		if got := heapPercent(c.live); got != c.want {
			t.Errorf("heapPercent(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}
