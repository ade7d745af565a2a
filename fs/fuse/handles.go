package fuse

import (
	"iter"
	"sync"
)

// handleTable maps the handles the kernel holds (OpenOut.Fh) to what they
// name: the volume's open files, or the adapter's directory listings. A
// handle is a slot index plus one, so 0 never names one; freed slots are
// reused, which the kernel never notices because it does not use a
// handle after RELEASE.
//
// One RWMutex guards the table; lookups (every READ and WRITE) take it
// shared and hold it for a slice index only.
type handleTable[T any] struct {
	mu    sync.RWMutex
	slots []*T
	free  []uint64
}

func (t *handleTable[T]) add(h *T) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.free); n > 0 {
		fh := t.free[n-1]
		t.free = t.free[:n-1]
		t.slots[fh-1] = h
		return fh
	}
	t.slots = append(t.slots, h)
	return uint64(len(t.slots))
}

// get returns what fh names, or nil if it names nothing.
func (t *handleTable[T]) get(fh uint64) *T {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if fh == 0 || fh > uint64(len(t.slots)) {
		return nil
	}
	return t.slots[fh-1]
}

// remove forgets fh and returns what it named, or nil if it named nothing.
func (t *handleTable[T]) remove(fh uint64) *T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if fh == 0 || fh > uint64(len(t.slots)) || t.slots[fh-1] == nil {
		return nil
	}
	h := t.slots[fh-1]
	t.slots[fh-1] = nil
	t.free = append(t.free, fh)
	return h
}

// drain empties the table, yielding everything still in it.
func (t *handleTable[T]) drain() iter.Seq2[uint64, *T] {
	t.mu.Lock()
	slots := t.slots
	t.slots, t.free = nil, nil
	t.mu.Unlock()
	return func(yield func(uint64, *T) bool) {
		for i, h := range slots {
			if h != nil && !yield(uint64(i)+1, h) {
				return
			}
		}
	}
}
