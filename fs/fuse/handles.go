package fuse

import (
	"iter"
	"sync"

	"github.com/smallfs/smallfs/fs/volume"
)

// handleTable maps the file handles the kernel holds (OpenOut.Fh) to the
// volume's open files. A handle is a slot index plus one, so 0 never names
// a file; freed slots are reused, which the kernel never notices because it
// does not use a handle after RELEASE.
//
// One RWMutex guards the table; lookups (every READ and WRITE) take it
// shared and hold it for a slice index only.
type handleTable struct {
	mu    sync.RWMutex
	slots []*volume.Handle
	free  []uint64
}

func (t *handleTable) add(h *volume.Handle) uint64 {
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

// get returns the open file for fh, or nil if fh names none.
func (t *handleTable) get(fh uint64) *volume.Handle {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if fh == 0 || fh > uint64(len(t.slots)) {
		return nil
	}
	return t.slots[fh-1]
}

// remove forgets fh and returns its open file, or nil if fh names none.
func (t *handleTable) remove(fh uint64) *volume.Handle {
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

// drain empties the table, yielding every open file still in it.
func (t *handleTable) drain() iter.Seq2[uint64, *volume.Handle] {
	t.mu.Lock()
	slots := t.slots
	t.slots, t.free = nil, nil
	t.mu.Unlock()
	return func(yield func(uint64, *volume.Handle) bool) {
		for i, h := range slots {
			if h != nil && !yield(uint64(i)+1, h) {
				return
			}
		}
	}
}
