package device

import (
	"syscall"
	"testing"
)

func TestTrackedUnflushed(t *testing.T) {
	d := Track(NewMem(1 << 20))
	if d.Unflushed() {
		t.Fatal("a fresh device reports an unflushed write")
	}
	if _, err := d.WriteAt([]byte{1}, 0); err != nil {
		t.Fatal(err)
	}
	if !d.Unflushed() {
		t.Fatal("a write is not reported before a flush")
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if d.Unflushed() {
		t.Fatal("a flush did not cover the write before it")
	}
	// A failed flush covers nothing.
	f := NewFaulty(NewMem(1 << 20))
	d = Track(f)
	if _, err := d.WriteAt([]byte{1}, 0); err != nil {
		t.Fatal(err)
	}
	f.FailFrom(OpFlush, f.Count(OpFlush)+1, syscall.EIO)
	if d.Flush() == nil {
		t.Fatal("the injected flush error was lost")
	}
	if !d.Unflushed() {
		t.Fatal("a failed flush counted as covering the write")
	}
}
