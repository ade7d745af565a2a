package device

import (
	"fmt"
	"sync/atomic"
)

// Mem is a Device held in memory. Writes are durable at once, Flush does
// nothing. Like a real disk it does not serialise callers: concurrent calls
// must touch disjoint ranges (the race detector reports those that do not).
type Mem struct {
	buf    []byte
	closed atomic.Bool
}

var _ Device = (*Mem)(nil)

// NewMem returns a zeroed in-memory device of size bytes.
func NewMem(size int64) *Mem { return &Mem{buf: make([]byte, size)} }

// NewMemFrom returns a device whose content is img; it takes ownership of img.
func NewMemFrom(img []byte) *Mem { return &Mem{buf: img} }

// Bytes returns the device content itself (not a copy).
func (m *Mem) Bytes() []byte { return m.buf }

// Clone returns an independent copy of the device, open.
func (m *Mem) Clone() *Mem { return NewMemFrom(append([]byte(nil), m.buf...)) }

// Reopen returns a new open device sharing this one's content, for tests
// that close a volume and open it again on the same image.
func (m *Mem) Reopen() *Mem { return &Mem{buf: m.buf} }

func (m *Mem) ReadAt(p []byte, off int64) (int, error) {
	if m.closed.Load() {
		return 0, ErrClosed
	}
	if err := checkRange(off, len(p), int64(len(m.buf))); err != nil {
		return 0, err
	}
	return copy(p, m.buf[off:]), nil
}

func (m *Mem) WriteAt(p []byte, off int64) (int, error) {
	if m.closed.Load() {
		return 0, ErrClosed
	}
	if err := checkRange(off, len(p), int64(len(m.buf))); err != nil {
		return 0, err
	}
	return copy(m.buf[off:], p), nil
}

func (m *Mem) Flush() error {
	if m.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (m *Mem) Size() int64 { return int64(len(m.buf)) }

func (m *Mem) Close() error {
	if m.closed.Swap(true) {
		return fmt.Errorf("mem device: %w", ErrClosed)
	}
	return nil
}
