package overlay

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestMatchesAPlainCopy checks random reads and writes against a byte
// slice model, and that the base never changes.
func TestMatchesAPlainCopy(t *testing.T) {
	const size = 5*pageSize + 123 // a short last page
	img := make([]byte, size)
	for i := range img {
		img[i] = byte(i * 7)
	}
	base := device.NewMemFrom(append([]byte(nil), img...))
	o := New(base)
	model := append([]byte(nil), img...)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		off := r.IntN(size)
		n := r.IntN(min(size-off, 3*pageSize) + 1)
		if r.IntN(2) == 0 {
			p := make([]byte, n)
			for j := range p {
				p[j] = byte(r.Uint32())
			}
			if _, err := o.WriteAt(p, int64(off)); err != nil {
				t.Fatal(err)
			}
			copy(model[off:], p)
		} else {
			p := make([]byte, n)
			if _, err := o.ReadAt(p, int64(off)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(p, model[off:off+n]) {
				t.Fatalf("read %d at %d differs from the model", n, off)
			}
		}
	}
	got := make([]byte, size)
	if _, err := base.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, img) {
		t.Error("the base device was written")
	}
	if o.Written() == 0 || o.Written() > 6*pageSize {
		t.Errorf("Written = %d", o.Written())
	}
}

func TestOutOfRange(t *testing.T) {
	o := New(device.NewMem(100))
	if _, err := o.WriteAt(make([]byte, 2), 99); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("WriteAt past the end = %v", err)
	}
	if _, err := o.ReadAt(make([]byte, 1), -1); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("ReadAt before the start = %v", err)
	}
	if o.Written() != 0 {
		t.Error("a refused write changed the overlay")
	}
}
