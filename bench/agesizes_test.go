package bench

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestSampleSizesDrawsTheTreesFiles: every draw is the size of one of the
// tree's regular files, in their proportions; directories and symlinks
// are not files of the population.
func TestSampleSizesDrawsTheTreesFiles(t *testing.T) {
	root := t.TempDir()
	write := func(rel string, size int) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", 100)
	write("b", 100)
	write("c", 100)
	write("sub/d", 5000)
	write("sub/deeper/e", 0)
	if err := os.Symlink("a", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	s, err := sampleSizes(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.sizes) != 5 || s.mean() != 5300.0/5 {
		t.Fatalf("%d sizes, mean %v; want 5 and 1060", len(s.sizes), s.mean())
	}
	if got := s.meanBlocks(4096); got != (3*4096+8192)/5.0 {
		t.Errorf("mean in 4 KiB blocks %v", got)
	}
	if s.quantile(50) != 100 || s.quantile(100) != 5000 || s.quantile(1) != 0 {
		t.Errorf("quantiles %d %d %d", s.quantile(1), s.quantile(50), s.quantile(100))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[int64]int{}
	const n = 10000
	for range n {
		counts[s.draw(rng)]++
	}
	if len(counts) != 3 {
		t.Fatalf("drew sizes %v, want only 0, 100 and 5000", counts)
	}
	// 3 in 5 files are of 100 bytes: within a few percent over 10^4 draws.
	if c := counts[100]; c < n*55/100 || c > n*65/100 {
		t.Errorf("100 bytes drawn %d times in %d, want about 3/5", c, n)
	}
}

func TestSampleSizesRefusesATreeWithoutData(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := sampleSizes(root); !errors.Is(err, ErrUsage) {
		t.Errorf("tree without files: %v, want ErrUsage", err)
	}
	if err := os.WriteFile(filepath.Join(root, "empty", "zero"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sampleSizes(root); !errors.Is(err, ErrUsage) {
		t.Errorf("tree of empty files: %v, want ErrUsage", err)
	}
	if _, err := sampleSizes(filepath.Join(root, "missing")); !errors.Is(err, ErrUsage) {
		t.Errorf("missing tree: %v, want ErrUsage", err)
	}
}
