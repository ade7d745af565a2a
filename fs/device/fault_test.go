package device

import (
	"errors"
	"syscall"
	"testing"
)

func TestFaultyRules(t *testing.T) {
	m := NewMem(4096)
	f := NewFaulty(m)
	f.FailNth(OpWrite, 2, syscall.EIO)
	b := []byte{1}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	_, err := f.WriteAt([]byte{2}, 1)
	if !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrInjected) {
		t.Fatalf("second write: %v", err)
	}
	if m.Bytes()[1] != 0 {
		t.Fatal("failed write reached the device")
	}
	if _, err := f.WriteAt(b, 2); err != nil {
		t.Fatalf("third write: %v", err)
	}
	f.FailFrom(OpAny, 6, syscall.ENOSPC) // ops so far: 3 writes
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Flush(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("op 6: %v", err)
	}
	if _, err := f.ReadAt(b, 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("op 7: %v", err)
	}
	f.Heal()
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatalf("healed: %v", err)
	}
	if f.Count(OpWrite) != 3 || f.Count(OpFlush) != 2 || f.Count(OpRead) != 3 || f.Count(OpAny) != 8 {
		t.Errorf("counts r%d w%d f%d any%d", f.Count(OpRead), f.Count(OpWrite), f.Count(OpFlush), f.Count(OpAny))
	}
}

func TestFaultyHook(t *testing.T) {
	f := NewFaulty(NewMem(4096))
	var seen []Op
	f.SetHook(func(op Op, n int64) error {
		seen = append(seen, op)
		if op == OpFlush && n == 1 {
			return syscall.EIO
		}
		return nil
	})
	f.WriteAt([]byte{1}, 0)
	if err := f.Flush(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("hook error: %v", err)
	}
	f.SetHook(nil)
	if err := f.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0] != OpWrite || seen[1] != OpFlush {
		t.Errorf("hook saw %v", seen)
	}
}

// TestFaultyRange: a range rule fails the reads (or writes) that touch a
// byte of the range, every time, and nothing else; flushes go through.
func TestFaultyRange(t *testing.T) {
	f := NewFaulty(NewMem(4096))
	f.FailRange(OpRead, 1000, 100, syscall.EIO)
	b := make([]byte, 10)
	for _, c := range []struct {
		off  int64
		fail bool
	}{{990, false}, {991, true}, {1050, true}, {1099, true}, {1100, false}, {1050, true}} {
		_, err := f.ReadAt(b, c.off)
		if c.fail != (err != nil) || c.fail && (!errors.Is(err, syscall.EIO) || !errors.Is(err, ErrInjected)) {
			t.Errorf("read at %d: %v, want failure %v", c.off, err, c.fail)
		}
	}
	if _, err := f.WriteAt(b, 1050); err != nil {
		t.Errorf("write in a read-failing range: %v", err)
	}
	if err := f.Flush(); err != nil {
		t.Errorf("flush: %v", err)
	}
	f.Heal()
	if _, err := f.ReadAt(b, 1050); err != nil {
		t.Errorf("healed: %v", err)
	}
}
