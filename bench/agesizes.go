package bench

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
)

// sizeSampler draws file sizes from a real population: the sizes of the
// regular files under a directory tree, measured when the run starts.
type sizeSampler struct {
	root  string
	sizes []int64 // sorted
	total int64
}

// sampleSizes walks root (without following symlinks) and keeps the size
// of every regular file. A tree without a regular file holding data is a
// usage error.
// Unreadable subdirectories are skipped: the population is what could be
// measured.
func sampleSizes(root string) (*sizeSampler, error) {
	s := &sizeSampler{root: root}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed while walking
		}
		s.sizes = append(s.sizes, fi.Size())
		s.total += fi.Size()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: file sizes from %s: %w", ErrUsage, root, err)
	}
	if s.total == 0 {
		// Without a byte to write, no fill level or churn budget is ever reached.
		return nil, fmt.Errorf("%w: file sizes from %s: no regular files with data there", ErrUsage, root)
	}
	slices.Sort(s.sizes)
	return s, nil
}

// draw returns the size of a file of the population picked uniformly.
func (s *sizeSampler) draw(rng *rand.Rand) int64 { return s.sizes[rng.IntN(len(s.sizes))] }

// mean is the population's mean size in bytes.
func (s *sizeSampler) mean() float64 { return float64(s.total) / float64(len(s.sizes)) }

// meanBlocks is the population's mean size rounded up to whole blocks of
// bs bytes, in bytes: what a file takes on a filesystem of that block.
func (s *sizeSampler) meanBlocks(bs int64) float64 {
	var t int64
	for _, v := range s.sizes {
		t += roundUp(v, bs)
	}
	return float64(t) / float64(len(s.sizes))
}

// quantile is the nearest-rank p-th percentile size.
func (s *sizeSampler) quantile(p int) int64 {
	k := (p*len(s.sizes) + 99) / 100
	return s.sizes[max(k, 1)-1]
}

func roundUp(v, bs int64) int64 { return (v + bs - 1) / bs * bs }
