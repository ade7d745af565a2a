package main

import (
	"slices"
	"testing"

	"github.com/smallfs/smallfs/fs/volume"
)

// TestProgressLine: Open's progress becomes a percentage when the total
// is known and a count when it is not.
func TestProgressLine(t *testing.T) {
	var lines []string
	show := progressLine(func(msg string) { lines = append(lines, msg) })
	show(volume.Progress{Phase: volume.PhaseCheckpoint, Done: 1 << 16, Total: 1 << 18})
	show(volume.Progress{Phase: volume.PhaseReplay, Done: 300})
	want := []string{"loading checkpoint: 25%", "replaying log: 300"}
	if !slices.Equal(lines, want) {
		t.Fatalf("lines %q, want %q", lines, want)
	}
}
