package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDropCachesWritesThree(t *testing.T) {
	old := dropCachesPath
	t.Cleanup(func() { dropCachesPath = old })
	dropCachesPath = filepath.Join(t.TempDir(), "drop_caches")
	if err := os.WriteFile(dropCachesPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := dropCaches(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dropCachesPath); string(b) != "3\n" {
		t.Fatalf("drop_caches got %q, want \"3\\n\"", b)
	}
	dropCachesPath = filepath.Join(t.TempDir(), "missing", "drop_caches")
	if err := dropCaches(); !errors.Is(err, ErrTarget) {
		t.Fatalf("unwritable drop_caches: %v, want ErrTarget", err)
	}
	// A sysctl file of mode 0444 refuses a write from root too, as
	// drop_caches refuses one from another user.
	dropCachesPath = "/proc/sys/kernel/osrelease"
	if err := dropCaches(); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("drop_caches refused: %v, want ErrUnsupported", err)
	}
}

// fakeDropCaches points dropCaches at a file of the test's, so a test
// running the sequence does not drop the machine's caches.
func fakeDropCaches(t *testing.T) {
	old := dropCachesPath
	t.Cleanup(func() { dropCachesPath = old })
	dropCachesPath = filepath.Join(t.TempDir(), "drop_caches")
}

// A cold step drops the caches before it runs and then reads and checks
// every file as read does; without the right to drop them it is
// unsupported and reads nothing.
func TestColdReadDropsCachesFirst(t *testing.T) {
	fakeDropCaches(t)
	r, err := Prepare(t.TempDir(), smallWorkload)
	if err != nil {
		t.Fatal(err)
	}
	ops := Sequence()
	var cold Op
	for _, op := range ops {
		if op.Cold {
			cold = op
		}
	}
	if cold.Name != "cold-read" || !cold.Data {
		t.Fatalf("the cold step is %+v, want cold-read, a data step", cold)
	}
	if _, err := r.Do(context.Background(), ops[0]); err != nil { // create
		t.Fatal(err)
	}
	res, err := r.Do(context.Background(), cold)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dropCachesPath); string(b) != "3\n" {
		t.Errorf("drop_caches got %q before the cold step, want \"3\\n\"", b)
	}
	if want := r.w.TotalFiles(); res.Files != want || res.Bytes != want*r.w.Size {
		t.Errorf("cold-read: %d files, %d bytes; want %d and %d", res.Files, res.Bytes, want, want*r.w.Size)
	}
	dropCachesPath = "/proc/sys/kernel/osrelease"
	res, err = r.Do(context.Background(), cold)
	if !errors.Is(err, ErrUnsupported) || res.Files != 0 {
		t.Fatalf("cold-read without drop_caches: %d files, %v; want 0 and ErrUnsupported", res.Files, err)
	}
}
