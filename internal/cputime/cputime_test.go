package cputime

import (
	"testing"
	"time"
)

// TestProcessAdvancesWithWork checks that spinning on the CPU shows in
// Process: a broken reading stays at 0 or goes backwards.
func TestProcessAdvancesWithWork(t *testing.T) {
	before := Process()
	x := uint64(1)
	for deadline := time.Now().Add(5 * time.Second); Process() <= before && time.Now().Before(deadline); {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	if after := Process(); after <= before {
		t.Fatalf("CPU time went from %v to %v over a busy loop (x=%d)", before, after, x)
	}
}
