package alloc

// smallfsPolicy runs the Allocator itself, lock and all, in the harness.
type smallfsPolicy struct{ a *Allocator }

func newSmallfsPolicy(capacity uint64, used []Extent) (policy, error) {
	a, err := NewWithUsed(capacity, used, Options{WindowExtents: *benchWindow, CompactExtents: *benchCompact})
	return smallfsPolicy{a}, err
}

func (p smallfsPolicy) alloc(hint, want, min uint64) (Extent, bool) {
	e, err := p.a.Alloc(hint, want, min)
	return e, err == nil
}

func (p smallfsPolicy) free(e Extent) {
	if err := p.a.Free(e); err != nil {
		panic(err) // a harness bug: it frees only what it allocated
	}
}

func (p smallfsPolicy) cost() cost {
	return cost{visits: p.a.stats.visits, seeks: p.a.stats.seeks}
}

func (p smallfsPolicy) view(f func(*space)) {
	p.a.mu.Lock()
	defer p.a.mu.Unlock()
	f(&p.a.free)
}

// settle waits for a running compaction, which holds the indexes, to end
// (the harness measures memory next).
func (p smallfsPolicy) settle() { p.a.waitCompaction() }
