package alloc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
)

// source feeds the model driver its choices: a seeded PRNG in tests, the
// fuzzer's bytes in FuzzModel.
type source interface{ intn(n uint64) uint64 }

type randSource struct{ r *rand.Rand }

func (s randSource) intn(n uint64) uint64 { return s.r.Uint64N(n) }

// byteSource reads choices from bytes and reports exhaustion.
type byteSource struct {
	b    []byte
	done bool
}

func (s *byteSource) intn(n uint64) uint64 {
	if len(s.b) < 2 {
		s.done = true
		return 0
	}
	v := uint64(s.b[0])<<8 | uint64(s.b[1])
	s.b = s.b[2:]
	return v % n
}

// Block states of the reference model.
const (
	stFree byte = iota
	stUsed
	stPending
)

// model is the reference: one state per block, plus the live extents a
// caller owns and the pending ones by epoch.
type model struct {
	t          testing.TB
	a          *Allocator
	blocks     []byte
	live       []Extent
	pending    map[uint64][]Extent
	epoch      uint64
	compacting bool // a compact step is running steps from its hook
	rounds     int  // rounds of replay outside the mutex in compact steps
}

// newModel returns a model whose Allocator compacts itself in the
// background once 8 extents have turned over, and replays under its mutex
// only the last 2 mutations of a compaction, so that short sequences see
// every phase.
func newModel(t testing.TB, capacity uint64) *model {
	a, err := New(capacity, Options{WindowExtents: 4, WindowBlocks: capacity / 8, CompactExtents: 8})
	if err != nil {
		t.Fatal(err)
	}
	a.swapOps = 2
	t.Cleanup(a.Close)
	return &model{t: t, a: a, blocks: make([]byte, capacity), pending: map[uint64][]Extent{}}
}

func (m *model) set(e Extent, st byte) { markBlocks(m.blocks, e, st) }

func markBlocks(blocks []byte, e Extent, st byte) {
	for b := e.Off; b < e.End(); b++ {
		blocks[b] = st
	}
}

// checkAlloc checks the outcome of alloc(_, want, min) against the block
// states and marks a returned extent used: it must hold min to want blocks,
// all free; a failure is legitimate only if no free run holds min blocks.
func checkAlloc(blocks []byte, e Extent, ok bool, want, min uint64) error {
	if !ok {
		for _, r := range freeRuns(blocks) {
			if r.Len >= min {
				return fmt.Errorf("no space for min %d while %v is free", min, r)
			}
		}
		return nil
	}
	if e.Len < min || e.Len > want || e.End() > uint64(len(blocks)) {
		return fmt.Errorf("returned %v", e)
	}
	for b := e.Off; b < e.End(); b++ {
		if blocks[b] != stFree {
			return fmt.Errorf("returned %v, block %d not free", e, b)
		}
	}
	markBlocks(blocks, e, stUsed)
	return nil
}

func (m *model) freeRuns() []Extent { return freeRuns(m.blocks) }

// freeRuns returns the maximal runs of free blocks.
func freeRuns(blocks []byte) []Extent {
	var runs []Extent
	for b := uint64(0); b < uint64(len(blocks)); {
		if blocks[b] != stFree {
			b++
			continue
		}
		s := b
		for b < uint64(len(blocks)) && blocks[b] == stFree {
			b++
		}
		runs = append(runs, Extent{Off: s, Len: b - s})
	}
	return runs
}

// verify checks the allocator against the reference.
func (m *model) verify(step int, op string) {
	m.t.Helper()
	if err := m.a.Check(); err != nil {
		m.t.Fatalf("step %d (%s): %v", step, op, err)
	}
	got, want := m.a.AppendFree(nil), m.freeRuns()
	if !slices.Equal(got, want) {
		m.t.Fatalf("step %d (%s): free %v, reference %v", step, op, got, want)
	}
	var pend uint64
	for _, st := range m.blocks {
		if st == stPending {
			pend++
		}
	}
	if st := m.a.Stats(); st.PendingBlocks != pend {
		m.t.Fatalf("step %d (%s): pending %d blocks, reference %d", step, op, st.PendingBlocks, pend)
	}
}

// takeLive removes and returns a random live extent, or a random piece of
// one (the rest stays live).
func (m *model) takeLive(s source) (Extent, bool) {
	if len(m.live) == 0 {
		return Extent{}, false
	}
	i := s.intn(uint64(len(m.live)))
	e := m.live[i]
	m.live = slices.Delete(m.live, int(i), int(i)+1)
	if e.Len > 1 && s.intn(2) == 0 {
		cut := 1 + s.intn(e.Len-1)
		m.live = append(m.live, Extent{Off: e.Off + cut, Len: e.Len - cut})
		e.Len = cut
	}
	return e, true
}

// mustFail runs a misuse and checks it fails with want and changes nothing.
func (m *model) mustFail(step int, op string, want error, f func() error) {
	m.t.Helper()
	before := m.a.AppendFree(nil)
	err := f()
	if !errors.Is(err, want) {
		m.t.Fatalf("step %d (%s): got %v, want %v", step, op, err, want)
	}
	if after := m.a.AppendFree(nil); !slices.Equal(before, after) {
		m.t.Fatalf("step %d (%s): failed call changed free space", step, op)
	}
}

// step performs one random operation and checks the result.
func (m *model) step(i int, s source) string {
	capacity := uint64(len(m.blocks))
	switch op := s.intn(17); {
	case op < 6:
		want := 1 + s.intn(capacity/4)
		min := 1 + s.intn(want)
		hint := s.intn(capacity + 2)
		e, err := m.a.Alloc(hint, want, min)
		if err != nil {
			if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
				m.t.Fatalf("step %d: alloc: %v", i, err)
			}
			if err := checkAlloc(m.blocks, e, false, want, min); err != nil {
				m.t.Fatalf("step %d: alloc(%d, %d, %d): %v", i, hint, want, min, err)
			}
			return "alloc enospc"
		}
		if err := checkAlloc(m.blocks, e, true, want, min); err != nil {
			m.t.Fatalf("step %d: alloc(%d, %d, %d): %v", i, hint, want, min, err)
		}
		m.live = append(m.live, e)
		return "alloc"
	case op < 9:
		e, ok := m.takeLive(s)
		if !ok {
			return "free none"
		}
		if err := m.a.Free(e); err != nil {
			m.t.Fatalf("step %d: free %v: %v", i, e, err)
		}
		m.set(e, stFree)
		return "free"
	case op < 11:
		e, ok := m.takeLive(s)
		if !ok {
			return "defer none"
		}
		ep := m.epoch + s.intn(3)
		if err := m.a.FreeDeferred(e, ep); err != nil {
			m.t.Fatalf("step %d: free deferred %v: %v", i, e, err)
		}
		m.set(e, stPending)
		m.pending[ep] = append(m.pending[ep], e)
		return "defer"
	case op < 12:
		m.epoch += s.intn(2)
		m.a.Commit(m.epoch)
		for ep, es := range m.pending {
			if ep <= m.epoch {
				for _, e := range es {
					m.set(e, stFree)
				}
				delete(m.pending, ep)
			}
		}
		return "commit"
	case op < 13:
		runs := m.freeRuns()
		if len(runs) == 0 {
			return "reserve none"
		}
		r := runs[s.intn(uint64(len(runs)))]
		off := r.Off + s.intn(r.Len)
		e := Extent{Off: off, Len: 1 + s.intn(r.End()-off)}
		if err := m.a.Reserve(e); err != nil {
			m.t.Fatalf("step %d: reserve %v: %v", i, e, err)
		}
		m.set(e, stUsed)
		m.live = append(m.live, e)
		return "reserve"
	case op < 16:
		m.misuse(i, s)
		return "misuse"
	default:
		return m.compact(i, s)
	}
}

// compact runs a compaction that performs random steps, each checked,
// after its clone, after its build and after each round of replay: the
// mutations it must record and replay (a compaction already running in
// the background is waited for instead).
func (m *model) compact(i int, s source) string {
	if m.compacting {
		return "compact busy"
	}
	m.compacting = true
	defer func() { m.compacting = false }()
	figs, err := m.a.compactWith(func(p phase) {
		for j := range s.intn(6) {
			op := m.step(i, s)
			m.verify(i, fmt.Sprintf("%s, step %d of compaction phase %d", op, j, p))
		}
	})
	if err != nil {
		m.t.Fatalf("step %d: compact: %v", i, err)
	}
	m.rounds += figs.Rounds
	return "compact"
}

// misuse tries one call that must fail and change nothing.
func (m *model) misuse(i int, s source) {
	capacity := uint64(len(m.blocks))
	b := s.intn(capacity)
	one := Extent{Off: b, Len: 1}
	switch s.intn(6) {
	case 0:
		m.mustFail(i, "alloc want 0", ErrZeroLength, func() error { _, err := m.a.Alloc(b, 0, 0); return err })
	case 1:
		m.mustFail(i, "alloc min>want", ErrMinAboveWant, func() error { _, err := m.a.Alloc(b, 2, 3); return err })
	case 2:
		m.mustFail(i, "free out of range", ErrOutOfRange, func() error { return m.a.Free(Extent{Off: b, Len: capacity - b + 1}) })
	case 3:
		m.mustFail(i, "free zero", ErrZeroLength, func() error { return m.a.Free(Extent{Off: b}) })
	case 4:
		if m.blocks[b] == stUsed {
			m.mustFail(i, "reserve used", ErrNotFree, func() error { return m.a.Reserve(one) })
		} else {
			m.mustFail(i, "double free", ErrDoubleFree, func() error { return m.a.Free(one) })
		}
	default:
		if m.blocks[b] != stUsed {
			m.mustFail(i, "double deferred free", ErrDoubleFree, func() error { return m.a.FreeDeferred(one, m.epoch) })
		}
	}
}

func TestModel(t *testing.T) {
	rounds, compactions := 0, uint64(0)
	for seed := range uint64(8) {
		m := newModel(t, 64+seed*61)
		s := randSource{rand.New(rand.NewPCG(seed, 2))}
		for i := range 3000 {
			op := m.step(i, s)
			m.verify(i, op)
		}
		m.a.waitCompaction()
		rounds += m.rounds
		compactions += m.a.Stats().Compactions
	}
	// Whatever the timing, the compact steps replayed rounds outside the
	// mutex (their hooks make mutations), and compactions completed.
	if rounds == 0 || compactions == 0 {
		t.Errorf("%d compactions, %d rounds of replay outside the mutex: the model did not exercise compaction", compactions, rounds)
	}
	t.Logf("%d compactions, %d rounds", compactions, rounds)
}

func FuzzModel(f *testing.F) {
	f.Add([]byte{0, 1, 0, 7, 0, 3, 0, 9, 0, 12, 0, 4, 0, 200, 1, 5})
	f.Add([]byte("\x00\x00\x00\x10\x00\x03\x00\x01\x00\x08\x00\x02\x00\x0b\x00\x0f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := newModel(t, 97)
		s := &byteSource{b: data}
		for i := 0; !s.done && i < 1000; i++ {
			op := m.step(i, s)
			m.verify(i, op)
		}
	})
}
