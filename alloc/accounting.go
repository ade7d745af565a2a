package alloc

import "github.com/smallfs/smallfs/accounting"

// extentBytes is what one free or pending extent is accounted at: an
// estimate, since google/btree does not report its nodes. Both indexes
// together measure about 23 bytes per extent after a build or a
// compaction and 28-33 bytes after long churn without one (see "Memory
// and compaction" in doc.go): 24 is what compaction keeps them near.
const extentBytes = 24

// accountBatch is how far the extent count may drift from what accounting
// shows before it is brought up to date. Alloc and Free mostly add and
// remove extents in turn, so the drift cancels and the atomic updates of
// accounting stay off the hot path.
const accountBatch = 64

// meter reports the extents an Allocator holds to accounting, in batches.
type meter struct {
	rec        *accounting.Record
	compaction *accounting.Record // the indexes a running compaction builds
	enospc     *accounting.Counter
	reported   int64 // extents accounting shows
}

func newMeter(reg *accounting.Registry) meter {
	if reg == nil {
		reg = accounting.Default
	}
	l := reg.Layer("alloc")
	return meter{rec: l.FixedType("free-extent", extentBytes), compaction: l.Type("compaction"), enospc: l.Counter("enospc")}
}

// sync brings accounting to n extents if it is accountBatch away, or always
// when force is set.
func (m *meter) sync(n int64, force bool) {
	d := n - m.reported
	if !force && d < accountBatch && d > -accountBatch {
		return
	}
	for ; d > 0; d-- {
		m.rec.Alloc(extentBytes)
	}
	for ; d < 0; d++ {
		m.rec.Free(extentBytes)
	}
	m.reported = n
}

// account reports the extents held to accounting (a.mu held, or a not yet
// shared).
func (a *Allocator) account(force bool) {
	if !a.closed {
		a.meter.sync(int64(a.free.extents()+a.pending.set.len()), force)
	}
}

// Close withdraws the Allocator's memory from accounting, stops a running
// compaction and waits for it to end, and turns automatic compaction off.
// The Allocator still works afterwards, unaccounted; Close is for the end
// of a mount.
func (a *Allocator) Close() {
	a.mu.Lock()
	a.meter.sync(0, true)
	a.closed = true
	if c := a.compaction; c != nil {
		c.cancel.Store(true)
	}
	a.mu.Unlock()
	a.wg.Wait()
}
