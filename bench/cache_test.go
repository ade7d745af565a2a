package bench

import (
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
}
