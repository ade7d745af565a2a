package device

import "fmt"

// checkRange reports whether [off, off+n) lies inside a device of size bytes.
// Every implementation calls it first, so that a bad offset fails the same
// way everywhere instead of growing an image file or panicking on a slice.
func checkRange(off int64, n int, size int64) error {
	if off < 0 || int64(n) > size || off > size-int64(n) {
		return fmt.Errorf("device: %d bytes at offset %d, size %d: %w", n, off, size, ErrOutOfRange)
	}
	return nil
}
