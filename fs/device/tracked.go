package device

import "sync/atomic"

// Tracked is a Device that knows whether any write has completed since the
// last flush began. A flush covers every write completed before it starts,
// so when none has, a flush has nothing to order: the journal skips its
// data barrier then (a metadata-only commit costs one flush, not two).
//
// Every write whose durability the caller relies on must go through the
// same Tracked; writes made to the underlying device directly are not
// seen.
type Tracked struct {
	Device
	writes  atomic.Uint64 // writes completed (or failed), ever
	flushed atomic.Uint64 // writes counted when the latest flush that succeeded began
}

// Track wraps d.
func Track(d Device) *Tracked { return &Tracked{Device: d} }

// WriteAt writes through and counts the write once it has returned; a
// failed write counts too, since part of it may have landed.
func (t *Tracked) WriteAt(p []byte, off int64) (int, error) {
	n, err := t.Device.WriteAt(p, off)
	t.writes.Add(1)
	return n, err
}

// Flush flushes and, if that succeeds, records the writes it covered:
// those completed before it began.
func (t *Tracked) Flush() error {
	w := t.writes.Load()
	if err := t.Device.Flush(); err != nil {
		return err
	}
	for {
		f := t.flushed.Load()
		if f >= w || t.flushed.CompareAndSwap(f, w) {
			return nil
		}
	}
}

// ZeroAhead passes the call on when the device zeroes ahead.
func (t *Tracked) ZeroAhead(off, n int64) error {
	if z, ok := t.Device.(ZeroAheader); ok {
		err := z.ZeroAhead(off, n)
		t.writes.Add(1) // zeros may have been written
		return err
	}
	return nil
}

// Unflushed reports whether a write has completed since the latest
// successful flush began.
func (t *Tracked) Unflushed() bool { return t.writes.Load() > t.flushed.Load() }
