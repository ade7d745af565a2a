package volume

import (
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// prefetchLog is a device that records what it is asked to prefetch.
type prefetchLog struct {
	device.Device
	mu    sync.Mutex
	calls [][2]int64
}

func (p *prefetchLog) Prefetch(off, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, [2]int64{off, n})
}

func (p *prefetchLog) take() [][2]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls
	p.calls = nil
	return c
}

func TestReadaheadFollowsAWalk(t *testing.T) {
	const K = 1 << 10
	dev := &prefetchLog{}
	r := newReadahead(dev, 512*K)
	r.read(1000*K, 4*K, true)
	if c := dev.take(); c != nil {
		t.Fatalf("one file read alone prefetched %v", c)
	}
	r.read(1008*K, 8*K, true) // the next file, past a gap: a walk
	if c, want := dev.take(), [][2]int64{{1016 * K, 128 * K}}; !slices.Equal(c, want) {
		t.Fatalf("confirmed walk prefetched %v, want %v", c, want)
	}
	// Reading on through the window: the next one, twice as large, once
	// less than half of the window lies ahead; then up to the largest.
	var got [][2]int64
	for off := int64(1016 * K); off < 2500*K; off += 4 * K {
		r.read(off, 4*K, true)
		got = append(got, dev.take()...)
	}
	want := [][2]int64{{1144 * K, 256 * K}, {1400 * K, 512 * K}, {1912 * K, 512 * K}, {2424 * K, 512 * K}}
	if !slices.Equal(got, want) {
		t.Fatalf("walk prefetched %v, want %v", got, want)
	}
}

func TestReadaheadIgnoresReadsInsideFiles(t *testing.T) {
	dev := &prefetchLog{}
	r := newReadahead(dev, 1<<20)
	for off := int64(0); off < 1<<20; off += 128 << 10 {
		r.read(off, 128<<10, false) // no file's start: no stream
	}
	r.read(4<<20, 128<<10, true) // one large file from its start, then on
	for off := int64(4<<20 + 128<<10); off < 6<<20; off += 128 << 10 {
		r.read(off, 128<<10, false)
	}
	if c := dev.take(); c != nil {
		t.Fatalf("reads of one file prefetched %v", c)
	}
	r.read(6<<20+4096, 4096, true) // the next file: a walk
	if c, want := dev.take(), [][2]int64{{6<<20 + 8192, 128 << 10}}; !slices.Equal(c, want) {
		t.Fatalf("the file after a large one: %v, want %v", c, want)
	}
}

func TestReadaheadRandomFilesCostNothing(t *testing.T) {
	dev := &prefetchLog{}
	r := newReadahead(dev, 1<<20)
	for i := range int64(100) {
		r.read((i*7919%1000)*(1<<20), 4096, true) // files a megabyte or more apart
	}
	if c := dev.take(); c != nil {
		t.Fatalf("files read far apart prefetched %v", c)
	}
}

func TestReadaheadStreams(t *testing.T) {
	const M = 1 << 20
	dev := &prefetchLog{}
	r := newReadahead(dev, M)
	// raStreams walks at once, each confirmed by two reads: each keeps
	// its own window.
	for s := range int64(raStreams) {
		r.read(s*100*M, 4096, true)
		r.read(s*100*M+4096, 4096, true)
	}
	if c := dev.take(); len(c) != raStreams {
		t.Fatalf("%d walks prefetched %v", raStreams, c)
	}
	// One more walk takes the place of the one read least recently
	// (walk 0): walk 1 goes on where it was.
	r.read(900*M, 4096, true)
	r.read(900*M+4096, 4096, true)
	r.read(100*M+8192, 4096, true)
	r.read(8192, 4096, true)
	if c, want := dev.take(), [][2]int64{{900*M + 8192, 128 << 10}}; !slices.Equal(c, want) {
		t.Fatalf("after a ninth walk: %v, want %v", c, want)
	}
	r.read(12288, 4096, true) // walk 0 again, as a new one
	if c, want := dev.take(), [][2]int64{{16384, 128 << 10}}; !slices.Equal(c, want) {
		t.Fatalf("walk 0 restarted: %v, want %v", c, want)
	}
}

func TestReadaheadOff(t *testing.T) {
	if r := newReadahead(&prefetchLog{}, -1); r != nil {
		t.Fatal("readahead -1 is on")
	}
	if r := newReadahead(device.NewMem(1<<20), 1<<20); r != nil {
		t.Fatal("a device that cannot prefetch got a readahead")
	}
	var r *readahead
	r.read(0, 4096, true) // a nil readahead does nothing
}

// TestReadaheadThroughTheVolume reads a directory of committed files in
// order on a volume whose device records prefetches: the walk is found
// and the blocks ahead of it are asked for.
func TestReadaheadThroughTheVolume(t *testing.T) {
	for _, sums := range []bool{true, false} {
		t.Run(fmt.Sprintf("checksums=%v", sums), func(t *testing.T) {
			mem := device.NewMem(64 << 20)
			if err := Mkfs(mem, MkfsOptions{NoBlockSums: !sums}); err != nil {
				t.Fatal(err)
			}
			dev := &prefetchLog{Device: mem}
			v, err := Open(dev, Options{CommitInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			if v.ra == nil {
				t.Fatal("no readahead on a device that prefetches")
			}
			ctx := Context{}
			d, err := v.Mkdir(ctx, RootIno, "d", 0o755)
			if err != nil {
				t.Fatal(err)
			}
			var inos []Ino
			for i := range 20 {
				a, h, err := v.Create(ctx, d.Ino, fmt.Sprintf("f%02d", i), 0o644, syscall.O_WRONLY)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := h.WriteAt(make([]byte, 4096), 0); err != nil {
					t.Fatal(err)
				}
				if err := h.Release(); err != nil {
					t.Fatal(err)
				}
				inos = append(inos, a.Ino)
			}
			if err := v.Sync(); err != nil {
				t.Fatal(err)
			}
			dev.take()
			first, err := v.Extents(inos[0])
			if err != nil || len(first) != 1 {
				t.Fatalf("extents of the first file: %v, %v", first, err)
			}
			buf := make([]byte, 4096)
			for _, ino := range inos {
				h, err := v.OpenFile(ino, syscall.O_RDONLY)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := h.ReadAt(buf, 0); err != nil {
					t.Fatal(err)
				}
				h.Release()
			}
			calls := dev.take()
			bs := int64(v.blockSize)
			if len(calls) == 0 || calls[0][0] != (int64(first[0].Physical)+2)*bs {
				t.Fatalf("a walk of 20 files from device block %d prefetched %v, want a first window from block %d",
					first[0].Physical, calls, first[0].Physical+2)
			}
		})
	}
}
