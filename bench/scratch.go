package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/smallfs/smallfs/fs/device"
)

// scratch is the one directory every image, mount point and log of a run
// lives in, so one removal cleans up everything.
type scratch struct {
	dir      string
	seq      int
	prealloc device.Prealloc // how image files get their blocks
}

func newScratch(parent string, prealloc device.Prealloc) (*scratch, error) {
	dir, err := os.MkdirTemp(parent, "smallfs-bench-")
	if err != nil {
		return nil, fmt.Errorf("%w: scratch directory: %w", ErrTarget, err)
	}
	// Resolve symlinks: mountinfo lists real paths, and cleanup matches them.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return &scratch{dir: dir, prealloc: prealloc}, nil
}

// path returns a new, unused path in the scratch directory.
func (s *scratch) path(prefix, suffix string) string {
	s.seq++
	return filepath.Join(s.dir, fmt.Sprintf("%s-%d%s", prefix, s.seq, suffix))
}

// remove unmounts whatever is still mounted in the scratch directory (a
// run cut short), then deletes it. It never deletes through a mount that
// would not go away.
func (s *scratch) remove() error {
	mounts := mountsUnder(s.dir)
	slices.Reverse(mounts)
	for _, m := range mounts {
		_ = unmount(m)
	}
	if left := mountsUnder(s.dir); len(left) > 0 {
		return fmt.Errorf("%w: %s still mounted; %s kept", ErrTarget, left[0], s.dir)
	}
	return os.RemoveAll(s.dir)
}
