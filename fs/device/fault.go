package device

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Op names a kind of device operation, for counting and fault rules.
type Op uint8

const (
	OpRead Op = iota
	OpWrite
	OpFlush
	// OpAny matches every kind; its count is the total of the others.
	OpAny
)

func (o Op) String() string {
	return [...]string{"read", "write", "flush", "any"}[min(o, OpAny)]
}

// Faulty wraps a Device and fails chosen operations: the Nth read, write or
// flush, or every operation from the Nth on. Operations are numbered from 1
// per kind, failed ones included. A failed operation does nothing to the
// inner device and returns an error wrapping ErrInjected and the error the
// rule gave (syscall.EIO, syscall.ENOSPC, ...).
type Faulty struct {
	inner  Device
	counts [OpAny + 1]atomic.Int64
	hook   atomic.Pointer[func(op Op, n int64) error]

	mu    sync.Mutex
	rules []faultRule
}

type faultRule struct {
	op       Op
	from, to int64 // inclusive; to == 0 means forever
	err      error
}

var _ Device = (*Faulty)(nil)

// NewFaulty wraps inner, failing nothing until told to.
func NewFaulty(inner Device) *Faulty { return &Faulty{inner: inner} }

// FailNth makes the nth operation of kind op fail with err.
func (f *Faulty) FailNth(op Op, n int64, err error) { f.addRule(faultRule{op, n, n, err}) }

// FailFrom makes the nth operation of kind op and every later one fail.
func (f *Faulty) FailFrom(op Op, n int64, err error) { f.addRule(faultRule{op, n, 0, err}) }

// Heal removes every rule; counting goes on.
func (f *Faulty) Heal() {
	f.mu.Lock()
	f.rules = nil
	f.mu.Unlock()
}

// SetHook installs fn, called before every operation with its kind and
// number. It may block (a barrier in a concurrency test) or return an error
// to fail the operation. nil removes the hook.
func (f *Faulty) SetHook(fn func(op Op, n int64) error) {
	if fn == nil {
		f.hook.Store(nil)
		return
	}
	f.hook.Store(&fn)
}

// Count is the number of operations of kind op so far.
func (f *Faulty) Count(op Op) int64 { return f.counts[min(op, OpAny)].Load() }

func (f *Faulty) addRule(r faultRule) {
	f.mu.Lock()
	f.rules = append(f.rules, r)
	f.mu.Unlock()
}

// admit counts an operation and says whether it may run.
func (f *Faulty) admit(op Op) error {
	n := f.counts[op].Add(1)
	total := f.counts[OpAny].Add(1)
	if h := f.hook.Load(); h != nil {
		if err := (*h)(op, n); err != nil {
			return fmt.Errorf("device: %s #%d: %w: %w", op, n, ErrInjected, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rules {
		k := n
		if r.op == OpAny {
			k = total
		} else if r.op != op {
			continue
		}
		if k >= r.from && (r.to == 0 || k <= r.to) {
			return fmt.Errorf("device: %s #%d: %w: %w", op, n, ErrInjected, r.err)
		}
	}
	return nil
}

func (f *Faulty) ReadAt(p []byte, off int64) (int, error) {
	if err := f.admit(OpRead); err != nil {
		return 0, err
	}
	return f.inner.ReadAt(p, off)
}

func (f *Faulty) WriteAt(p []byte, off int64) (int, error) {
	if err := f.admit(OpWrite); err != nil {
		return 0, err
	}
	return f.inner.WriteAt(p, off)
}

func (f *Faulty) Flush() error {
	if err := f.admit(OpFlush); err != nil {
		return err
	}
	return f.inner.Flush()
}

func (f *Faulty) Size() int64  { return f.inner.Size() }
func (f *Faulty) Close() error { return f.inner.Close() }
