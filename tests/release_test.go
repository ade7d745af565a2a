package tests

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// TestUnmountRightAfterClose: close(2) sends no FLUSH, and the kernel
// sends RELEASE (which writes the data back) after close has returned, so
// an unmount right after the last close may find RELEASEs still queued or
// drop them. The data must be on the image either way.
func TestUnmountRightAfterClose(t *testing.T) {
	m := newMount(t)
	const files = 300
	want := make([][]byte, files)
	for i := range files {
		want[i] = pattern(i, 100+i*97) // inline, one block, several blocks
		if err := os.WriteFile(m.path(fmt.Sprint("f", i)), want[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m.remount()
	for i := range files {
		got, err := os.ReadFile(m.path(fmt.Sprint("f", i)))
		if err != nil || !bytes.Equal(got, want[i]) {
			t.Fatalf("file %d after remount: %d bytes, %v; want the %d written", i, len(got), err, len(want[i]))
		}
	}
}
