package overlay

import (
	"errors"
	"fmt"
	"sync"

	"github.com/smallfs/smallfs/fs/device"
)

// pageSize is the unit the overlay copies from the base device on the
// first write to a page.
const pageSize = 4096

// ErrOutOfRange is returned for a read or write outside the device.
var ErrOutOfRange = errors.New("overlay: range outside the device")

// Device is a copy-on-write view of a base device: writes land in memory,
// reads see them over the base, and the base is never written.
type Device struct {
	base  device.Device
	mu    sync.RWMutex
	pages map[int64][]byte // page number -> its current content
}

// New returns an overlay on base. Closing it does not close base.
func New(base device.Device) *Device {
	return &Device{base: base, pages: make(map[int64][]byte)}
}

// ReadAt reads from the overlay where a page was written, else from base.
func (d *Device) ReadAt(p []byte, off int64) (int, error) {
	if err := d.check(p, off); err != nil {
		return 0, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return walk(p, off, func(part []byte, pg, in int64) error {
		if page, ok := d.pages[pg]; ok {
			copy(part, page[in:])
			return nil
		}
		_, err := d.base.ReadAt(part, pg*pageSize+in)
		return err
	})
}

// WriteAt copies p into the overlay's pages.
func (d *Device) WriteAt(p []byte, off int64) (int, error) {
	if err := d.check(p, off); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return walk(p, off, func(part []byte, pg, in int64) error {
		page, ok := d.pages[pg]
		if !ok {
			page = make([]byte, min(pageSize, d.base.Size()-pg*pageSize))
			if _, err := d.base.ReadAt(page, pg*pageSize); err != nil {
				return err
			}
			d.pages[pg] = page
		}
		copy(page[in:], part)
		return nil
	})
}

// walk cuts p, which lies at off, at page boundaries and calls fn with
// each part, its page number and its offset in the page. It returns the
// bytes handled before the first error.
func walk(p []byte, off int64, fn func(part []byte, pg, in int64) error) (int, error) {
	for n := 0; n < len(p); {
		pg, in := (off+int64(n))/pageSize, (off+int64(n))%pageSize
		chunk := min(len(p)-n, pageSize-int(in))
		if err := fn(p[n:n+chunk], pg, in); err != nil {
			return n, err
		}
		n += chunk
	}
	return len(p), nil
}

func (d *Device) check(p []byte, off int64) error {
	if off < 0 || off+int64(len(p)) > d.base.Size() {
		return fmt.Errorf("%d bytes at %d on a device of %d: %w", len(p), off, d.base.Size(), ErrOutOfRange)
	}
	return nil
}

// Flush does nothing: the overlay is never durable.
func (d *Device) Flush() error { return nil }

// Size is the base device's size.
func (d *Device) Size() int64 { return d.base.Size() }

// Close drops the overlay's pages; base stays open.
func (d *Device) Close() error {
	d.mu.Lock()
	d.pages = nil
	d.mu.Unlock()
	return nil
}

// Written is the number of bytes held in the overlay.
func (d *Device) Written() int64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return int64(len(d.pages)) * pageSize
}
