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
// flush, every operation from the Nth on, or every read or write touching
// a byte range. Operations are numbered from 1 per kind, failed ones
// included. A failed operation does nothing to the inner device and
// returns an error wrapping ErrInjected and the error the rule gave
// (syscall.EIO, syscall.ENOSPC, ...).
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
	// off, end: with end > 0, the rule is a byte range [off, end) instead:
	// it fails the reads or writes (op) that touch it, whatever their number.
	off, end int64
	err      error
}

var _ Device = (*Faulty)(nil)

// NewFaulty wraps inner, failing nothing until told to.
func NewFaulty(inner Device) *Faulty { return &Faulty{inner: inner} }

// FailNth makes the nth operation of kind op fail with err.
func (f *Faulty) FailNth(op Op, n int64, err error) {
	f.addRule(faultRule{op: op, from: n, to: n, err: err})
}

// FailFrom makes the nth operation of kind op and every later one fail.
func (f *Faulty) FailFrom(op Op, n int64, err error) { f.addRule(faultRule{op: op, from: n, err: err}) }

// FailRange makes every read or write (op: OpRead, OpWrite or OpAny) that
// touches a byte of [off, off+length) fail, as a bad stretch of a disk
// does; flushes are not affected.
func (f *Faulty) FailRange(op Op, off, length int64, err error) {
	f.addRule(faultRule{op: op, off: off, end: off + length, err: err})
}

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

// admit counts an operation on bytes [off, end) and says whether it may
// run (a flush has no range: end == off).
func (f *Faulty) admit(op Op, off, end int64) error {
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
		if r.end > 0 {
			if off < r.end && r.off < end {
				return fmt.Errorf("device: %s #%d at %d+%d: %w: %w", op, n, off, end-off, ErrInjected, r.err)
			}
			continue
		}
		if k >= r.from && (r.to == 0 || k <= r.to) {
			return fmt.Errorf("device: %s #%d: %w: %w", op, n, ErrInjected, r.err)
		}
	}
	return nil
}

func (f *Faulty) ReadAt(p []byte, off int64) (int, error) {
	if err := f.admit(OpRead, off, off+int64(len(p))); err != nil {
		return 0, err
	}
	return f.inner.ReadAt(p, off)
}

func (f *Faulty) WriteAt(p []byte, off int64) (int, error) {
	if err := f.admit(OpWrite, off, off+int64(len(p))); err != nil {
		return 0, err
	}
	return f.inner.WriteAt(p, off)
}

func (f *Faulty) Flush() error {
	if err := f.admit(OpFlush, 0, 0); err != nil {
		return err
	}
	return f.inner.Flush()
}

func (f *Faulty) Size() int64  { return f.inner.Size() }
func (f *Faulty) Close() error { return f.inner.Close() }
