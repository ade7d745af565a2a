package device

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// marked writes: write i puts byte i+1 over its own 512-byte sector i, so an
// image tells exactly which writes survived.
func writeMarked(t *testing.T, c *CrashDevice, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := c.WriteAt(bytes.Repeat([]byte{byte(i + 1)}, SectorSize), int64(i)*SectorSize); err != nil {
			t.Fatal(err)
		}
	}
}

// survivors lists which of the first n marked writes an image holds, and
// fails on a sector that is neither old nor new.
func survivors(t *testing.T, m *Mem, n int) []bool {
	t.Helper()
	kept := make([]bool, n)
	for i := range n {
		sec := m.Bytes()[i*SectorSize : (i+1)*SectorSize]
		switch {
		case bytes.Equal(sec, bytes.Repeat([]byte{byte(i + 1)}, SectorSize)):
			kept[i] = true
		case !bytes.Equal(sec, make([]byte, SectorSize)):
			t.Fatalf("sector %d mixed: %v", i, sec[:8])
		}
	}
	return kept
}

func isPrefix(kept []bool) bool {
	for i := 1; i < len(kept); i++ {
		if kept[i] && !kept[i-1] {
			return false
		}
	}
	return true
}

func TestCrashModes(t *testing.T) {
	const flushed, unflushed = 3, 8
	nonPrefix := false
	for seed := range int64(64) {
		c := NewCrash(64<<10, seed)
		writeMarked(t, c, 0, flushed)
		c.Flush()
		writeMarked(t, c, flushed, flushed+unflushed)
		for _, mode := range CrashModes {
			m, err := c.Crash(mode)
			if err != nil {
				t.Fatal(err)
			}
			kept := survivors(t, m, flushed+unflushed)
			for i := range flushed {
				if !kept[i] {
					t.Fatalf("seed %d %v: flushed write %d lost", seed, mode, i)
				}
			}
			n := 0
			for _, k := range kept {
				if k {
					n++
				}
			}
			switch mode {
			case DropUnflushed:
				if n != flushed {
					t.Errorf("seed %d: drop kept %d", seed, n-flushed)
				}
			case KeepUnflushed:
				if n != flushed+unflushed {
					t.Errorf("seed %d: keep-all lost %d", seed, flushed+unflushed-n)
				}
			case KeepPrefix, TearOne: // sector-sized writes cannot tear
				if !isPrefix(kept) {
					t.Errorf("seed %d %v: not a prefix: %v", seed, mode, kept)
				}
			case KeepSubset:
				nonPrefix = nonPrefix || !isPrefix(kept)
			}
		}
	}
	if !nonPrefix {
		t.Error("keep-subset never reordered in 64 seeds")
	}
}

func TestCrashTearsAtSectors(t *testing.T) {
	const sectors = 8
	for seed := range int64(32) {
		c := NewCrash(64<<10, seed)
		// One write of 8 sectors starting mid-sector: 9 device sectors.
		data := bytes.Repeat([]byte{0xAB}, sectors*SectorSize)
		c.WriteAt(data, 100)
		m, err := c.Crash(TearOne)
		if err != nil {
			t.Fatal(err)
		}
		img := m.Bytes()
		newSecs := 0
		for s := range sectors + 1 {
			lo, hi := max(int64(s*SectorSize), 100), min(int64((s+1)*SectorSize), 100+int64(len(data)))
			part := img[lo:hi]
			switch {
			case bytes.Equal(part, data[:len(part)]):
				newSecs++
			case !bytes.Equal(part, make([]byte, len(part))):
				t.Fatalf("seed %d: sector %d torn inside", seed, s)
			}
		}
		// The only write is the torn one: a proper, non-empty subset.
		if newSecs == 0 || newSecs == sectors+1 {
			t.Fatalf("seed %d: %d of %d sectors: not torn", seed, newSecs, sectors+1)
		}
		// Any bytes outside the write stay zero.
		if img[99] != 0 || img[100+len(data)] != 0 {
			t.Fatal("tear wrote outside the write")
		}
	}
}

func TestCrashDeterministic(t *testing.T) {
	run := func() [][]byte {
		c := NewCrash(64<<10, 42)
		writeMarked(t, c, 0, 20)
		var imgs [][]byte
		for _, mode := range CrashModes {
			m, _ := c.Crash(mode)
			imgs = append(imgs, m.Bytes())
		}
		return imgs
	}
	a, b := run(), run()
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("mode %v differs between runs", CrashModes[i])
		}
	}
}

func TestCrashAtEnumeratesFlushPoints(t *testing.T) {
	c := NewCrash(64<<10, 7)
	writeMarked(t, c, 0, 2)
	c.Flush()
	c.KeepHistory()
	var want []*Mem // durable image at each point
	want = append(want, mustCrash(t, c, DropUnflushed))
	for step := range 4 {
		writeMarked(t, c, 2+step*3, 5+step*3)
		if step < 3 {
			c.Flush()
			want = append(want, mustCrash(t, c, DropUnflushed))
		}
	}
	if c.FlushPoints() != 3 {
		t.Fatalf("flush points %d", c.FlushPoints())
	}
	for p := 0; p <= c.FlushPoints(); p++ {
		m, err := c.CrashAt(p, DropUnflushed)
		if err != nil {
			t.Fatal(err)
		}
		if p < len(want) && !bytes.Equal(m.Bytes(), want[p].Bytes()) {
			t.Errorf("point %d differs from the image at that flush", p)
		}
		all, _ := c.CrashAt(p, KeepUnflushed)
		kept := survivors(t, all, 14)
		for i, k := range kept {
			if k != (i < 5+p*3) {
				t.Errorf("point %d keep-all: write %d kept=%v", p, i, k)
			}
		}
		again, _ := c.CrashAt(p, KeepSubset)
		once, _ := c.CrashAt(p, KeepSubset)
		if !bytes.Equal(again.Bytes(), once.Bytes()) {
			t.Errorf("point %d: CrashAt not deterministic", p)
		}
	}
	if _, err := c.CrashAt(5, DropUnflushed); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("bad point: %v", err)
	}
	if _, err := c.Crash(CrashMode(99)); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("bad mode: %v", err)
	}
	if _, err := NewCrash(1024, 1).CrashAt(0, DropUnflushed); err == nil {
		t.Error("CrashAt without history")
	}
}

func mustCrash(t *testing.T, c *CrashDevice, mode CrashMode) *Mem {
	t.Helper()
	m, err := c.Crash(mode)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ExampleCrashDevice() {
	c := NewCrash(4096, 1)
	c.WriteAt([]byte("durable"), 0)
	c.Flush()
	c.WriteAt([]byte("lost"), 100)
	m, _ := c.Crash(DropUnflushed)
	fmt.Printf("%q %q\n", m.Bytes()[:7], m.Bytes()[100:104])
	// Output: "durable" "\x00\x00\x00\x00"
}

// TestCrashAfterEveryWrite: CrashAfter keeps exactly the first k writes
// in flight at a flush point, in completion order; torn, the next one is
// partly there: some of its sectors, never all.
func TestCrashAfterEveryWrite(t *testing.T) {
	c := NewCrash(64<<10, 7)
	c.KeepHistory()
	w := func(off int64, b byte) {
		if _, err := c.WriteAt(bytes.Repeat([]byte{b}, 4*SectorSize), off); err != nil {
			t.Fatal(err)
		}
	}
	w(0, 1)
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	w(4096, 2)
	w(8192, 3)
	w(4096, 4) // overwrites the first write in flight
	if n, err := c.InFlight(1); err != nil || n != 3 {
		t.Fatalf("InFlight(1) = %d, %v; want 3", n, err)
	}
	if n, err := c.InFlight(0); err != nil || n != 1 {
		t.Fatalf("InFlight(0) = %d, %v; want 1", n, err)
	}
	at := func(img *Mem, off int64) byte { return img.Bytes()[off] }
	for keep, want := range [][2]byte{{0, 0}, {2, 0}, {2, 3}, {4, 3}} {
		img, err := c.CrashAfter(1, keep, false)
		if err != nil {
			t.Fatal(err)
		}
		if at(img, 0) != 1 || at(img, 4096) != want[0] || at(img, 8192) != want[1] {
			t.Errorf("keep %d: blocks read %d %d %d, want 1 %d %d", keep, at(img, 0), at(img, 4096), at(img, 8192), want[0], want[1])
		}
	}
	img, err := c.CrashAfter(1, 1, true) // the write of 3s torn
	if err != nil {
		t.Fatal(err)
	}
	n := bytes.Count(img.Bytes()[8192:8192+4*SectorSize], []byte{3})
	if n == 0 || n == 4*SectorSize || n%SectorSize != 0 {
		t.Errorf("torn write: %d of its %d bytes landed, want some whole sectors", n, 4*SectorSize)
	}
	if _, err := c.CrashAfter(1, 3, true); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("tearing past the last write: %v, want ErrOutOfRange", err)
	}
}
