package bench

import (
	"context"
	"testing"
)

// The driver must not add work to what it measures: a step on one file
// allocates nothing beyond the C string of its path per system call.
func TestStepsBarelyAllocate(t *testing.T) {
	r, err := Prepare(t.TempDir(), Workload{Threads: 1, Files: 4, Size: 4096, FilesPerDir: 4})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Do(context.Background(), Sequence()[0]); err != nil { // create
		t.Fatal(err)
	}
	th := r.threads[0]
	for _, c := range []struct {
		name string
		f    fileFunc
	}{
		{"read", (*thread).read},
		{"chmod", (*thread).chmod},
	} {
		var err error
		got := testing.AllocsPerRun(50, func() { _, err = c.f(th, 1) })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got > 1 {
			t.Errorf("%s: %.1f allocations per file, want at most 1 (the path)", c.name, got)
		}
	}
}
