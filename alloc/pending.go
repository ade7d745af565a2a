package alloc

import (
	"cmp"
	"slices"
)

// pending holds extents freed under commit epochs that are not durable yet.
// They are neither free nor allocatable; Commit releases them.
type pending struct {
	set     offSet  // every pending extent, to refuse a second free
	batches []batch // ascending epochs
	blocks  uint64
}

type batch struct {
	epoch uint64
	exts  []Extent
}

func (p *pending) add(e Extent, epoch uint64) {
	i, found := slices.BinarySearchFunc(p.batches, epoch, func(b batch, ep uint64) int { return cmp.Compare(b.epoch, ep) })
	if !found {
		p.batches = slices.Insert(p.batches, i, batch{epoch: epoch})
	}
	p.batches[i].exts = append(p.batches[i].exts, e)
	p.set.insert(e)
	p.blocks += e.Len
}

// release hands every extent of epochs <= epoch to free.
func (p *pending) release(epoch uint64, free func(Extent)) {
	n := 0
	for _, b := range p.batches {
		if b.epoch > epoch {
			break
		}
		for _, e := range b.exts {
			p.set.remove(e)
			p.blocks -= e.Len
			free(e)
		}
		n++
	}
	p.batches = slices.Delete(p.batches, 0, n)
}

// epochOf returns the epoch e was freed under; it serves error messages
// only, so a linear search is fine.
func (p *pending) epochOf(e Extent) uint64 {
	for _, b := range p.batches {
		if slices.Contains(b.exts, e) {
			return b.epoch
		}
	}
	return 0
}
