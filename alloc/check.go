package alloc

import (
	"errors"
	"fmt"
)

// AppendFree appends the free extents, in offset order, to dst and returns
// it. It costs O(free extents) under the lock.
func (a *Allocator) AppendFree(dst []Extent) []Extent {
	a.mu.Lock()
	defer a.mu.Unlock()
	for e := range a.free.byOff.all() {
		dst = append(dst, e)
	}
	return dst
}

// Check walks both indexes and the pending extents and reports every
// inconsistency it finds: the indexes disagree, extents overlap, touch
// without being merged, leave the device, or miscount blocks. nil means
// consistent. It costs O(free extents) under the lock.
func (a *Allocator) Check() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	errs := a.free.check(a.capacity, true)
	errs = append(errs, a.pending.set.checkDisjoint(a.capacity, false)...)
	var pendBlocks uint64
	for e := range a.pending.set.all() {
		pendBlocks += e.Len
		if f, ok := a.free.byOff.overlapping(e); ok {
			errs = append(errs, fmt.Errorf("pending %v overlaps free %v", e, f))
		}
	}
	if pendBlocks != a.pending.blocks {
		errs = append(errs, fmt.Errorf("pending blocks counted %d, hold %d", a.pending.blocks, pendBlocks))
	}
	return errors.Join(errs...)
}

// check reports inconsistencies of free space.
func (s *space) check(capacity uint64, coalesced bool) []error {
	errs := s.byOff.checkDisjoint(capacity, coalesced)
	var blocks uint64
	for e := range s.byOff.all() {
		blocks += e.Len
	}
	if blocks != s.blocks {
		errs = append(errs, fmt.Errorf("free blocks counted %d, hold %d", s.blocks, blocks))
	}
	if s.byOff.len() != s.bySize.len() {
		errs = append(errs, fmt.Errorf("offset index holds %d extents, size index %d", s.byOff.len(), s.bySize.len()))
	}
	for e := range s.bySize.all() {
		if f, ok := s.byOff.atOrBefore(e.Off); !ok || f != e {
			errs = append(errs, fmt.Errorf("%v in the size index only", e))
		}
	}
	if k, _ := s.bySize.max(); s.bySize.topOK && s.bySize.top != k {
		errs = append(errs, fmt.Errorf("largest free extent remembered as %v, is %v", fromSizeKey(s.bySize.top), fromSizeKey(k)))
	}
	return errs
}

// checkDisjoint reports extents that are empty, leave the device, overlap
// or, when coalesced is set, touch.
func (s *offSet) checkDisjoint(capacity uint64, coalesced bool) []error {
	var errs []error
	var prev Extent
	first := true
	for e := range s.all() {
		if e.Len == 0 || e.End() > capacity {
			errs = append(errs, fmt.Errorf("%v outside a device of %d blocks", e, capacity))
		}
		if !first && (e.Off < prev.End() || coalesced && e.Off == prev.End()) {
			errs = append(errs, fmt.Errorf("%v overlaps or touches %v", prev, e))
		}
		prev, first = e, false
	}
	return errs
}
