package device

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
)

// eachDevice runs fn on a fresh 64 KiB device of every kind.
func eachDevice(t *testing.T, fn func(t *testing.T, d Device)) {
	const size = 64 << 10
	kinds := map[string]func(t *testing.T) Device{
		"mem":    func(*testing.T) Device { return NewMem(size) },
		"crash":  func(*testing.T) Device { return NewCrash(size, 1) },
		"faulty": func(*testing.T) Device { return NewFaulty(NewMem(size)) },
		"file": func(t *testing.T) Device {
			f, err := Open(filepath.Join(t.TempDir(), "img"), Options{Create: true, Size: size})
			if err != nil {
				t.Fatal(err)
			}
			return f
		},
	}
	for name, mk := range kinds {
		t.Run(name, func(t *testing.T) { fn(t, mk(t)) })
	}
}

func TestDeviceContract(t *testing.T) {
	eachDevice(t, func(t *testing.T, d Device) {
		if d.Size() != 64<<10 {
			t.Fatalf("size %d", d.Size())
		}
		want := []byte("hello, device")
		if n, err := d.WriteAt(want, 4093); n != len(want) || err != nil {
			t.Fatalf("write: %d %v", n, err)
		}
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(want))
		if n, err := d.ReadAt(got, 4093); n != len(got) || err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read: %d %v %q", n, err, got)
		}
		for _, off := range []int64{-1, d.Size() - 3, d.Size(), 1 << 62} {
			if _, err := d.WriteAt(want, off); !errors.Is(err, ErrOutOfRange) {
				t.Errorf("write at %d: %v", off, err)
			}
			if _, err := d.ReadAt(got, off); !errors.Is(err, ErrOutOfRange) {
				t.Errorf("read at %d: %v", off, err)
			}
		}
		// The tail must be untouched by the refused writes.
		tail := make([]byte, 3)
		if _, err := d.ReadAt(tail, d.Size()-3); err != nil || !bytes.Equal(tail, make([]byte, 3)) {
			t.Fatalf("tail %v %v", tail, err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ReadAt(got, 0); !errors.Is(err, ErrClosed) {
			t.Errorf("read after close: %v", err)
		}
		if err := d.Flush(); !errors.Is(err, ErrClosed) {
			t.Errorf("flush after close: %v", err)
		}
		if err := d.Close(); !errors.Is(err, ErrClosed) {
			t.Errorf("second close: %v", err)
		}
	})
}

func TestMemReopenSharesContent(t *testing.T) {
	m := NewMem(1024)
	m.WriteAt([]byte{7}, 10)
	m.Close()
	r := m.Reopen()
	b := []byte{0}
	if _, err := r.ReadAt(b, 10); err != nil || b[0] != 7 {
		t.Fatalf("reopen: %v %v", b, err)
	}
	c := r.Clone()
	c.WriteAt([]byte{8}, 10)
	if r.Bytes()[10] != 7 {
		t.Fatal("clone shares memory")
	}
}
