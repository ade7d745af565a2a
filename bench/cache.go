package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
)

// dropCachesPath is where the kernel takes the request to drop clean
// caches; a variable so tests can point it elsewhere.
var dropCachesPath = "/proc/sys/vm/drop_caches"

// drops counts the drops asked for, for the tests.
var drops atomic.Int64

// dropCaches writes back every dirty page (sync(2)) and then drops the
// kernel's clean page cache, dentries and inodes (drop_caches 3): the
// pages of every mount, FUSE ones included, and the host's pages of every
// image file, so the next read of a file reaches its daemon and the
// daemon's read reaches the disk. Needs root: without the right to drop
// them it returns ErrUnsupported (the cold step is reported n/a), and
// ErrTarget on any other failure.
func dropCaches() error {
	drops.Add(1)
	syscall.Sync()
	err := os.WriteFile(dropCachesPath, []byte("3\n"), 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: dropping the caches needs root: %w", ErrUnsupported, err)
	}
	return fmt.Errorf("%w: dropping the caches: %w", ErrTarget, err)
}
