package device

import (
	"bytes"
	"github.com/smallfs/smallfs/accounting"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// unwrittenImage makes a fallocated image of regions × ZeroRegion bytes,
// or skips where the host filesystem reports no unwritten extents.
func unwrittenImage(t *testing.T, regions int64, opts Options) (*File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "img")
	opts.Create, opts.Size, opts.Prealloc = true, regions*ZeroRegion, PreallocFalloc
	d, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if n := unwrittenBytes(t, d); n == 0 {
		t.Skip("the host filesystem reports no unwritten extents (no fallocate or no FIEMAP)")
	}
	return d, path
}

// unwrittenBytes is what the host holds unwritten in d now.
func unwrittenBytes(t *testing.T, d *File) int64 {
	t.Helper()
	var n int64
	unwrittenExtents(d.fd, d.size, func(_, length int64) { n += length })
	return n
}

func TestZeroAheadZerosARegionOnce(t *testing.T) {
	d, _ := unwrittenImage(t, 4, Options{})
	if zeroed, left := d.ZeroAheadStats(); zeroed != 0 || left != 4 {
		t.Fatalf("after open: zeroed %d, unwritten %d regions; want 0, 4", zeroed, left)
	}
	data := bytes.Repeat([]byte("smallfs!"), 512)
	at := int64(ZeroRegion + 8192)
	for _, off := range []int64{at, at + 2*4096} { // the second: same region, no more zeros
		if err := d.ZeroAhead(off, int64(len(data))); err != nil {
			t.Fatal(err)
		}
		if _, err := d.WriteAt(data, off); err != nil {
			t.Fatal(err)
		}
	}
	if zeroed, left := d.ZeroAheadStats(); zeroed != 1 || left != 3 {
		t.Errorf("after two writes into region 1: zeroed %d, unwritten %d; want 1, 3", zeroed, left)
	}
	if n := unwrittenBytes(t, d); n != 3*ZeroRegion {
		t.Errorf("host holds %d bytes unwritten, want %d: region 1 was not written whole", n, 3*ZeroRegion)
	}
	got := make([]byte, ZeroRegion)
	if _, err := d.ReadAt(got, ZeroRegion); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, ZeroRegion)
	copy(want[8192:], data)
	copy(want[8192+2*4096:], data)
	if !bytes.Equal(got, want) {
		t.Error("region 1 reads back other than the two writes over zeros")
	}
}

func TestZeroAheadSkipsWholeRegionWrites(t *testing.T) {
	d, _ := unwrittenImage(t, 2, Options{})
	if err := d.ZeroAhead(0, ZeroRegion); err != nil {
		t.Fatal(err)
	}
	if _, err := d.WriteAt(bytes.Repeat([]byte{7}, ZeroRegion), 0); err != nil {
		t.Fatal(err)
	}
	if zeroed, left := d.ZeroAheadStats(); zeroed != 0 || left != 1 {
		t.Errorf("after a whole-region write: zeroed %d, unwritten %d; want 0, 1", zeroed, left)
	}
}

func TestZeroAheadLeavesWrittenRegions(t *testing.T) {
	// Region 0 holds data written before Open: zeroing it would lose it.
	path := filepath.Join(t.TempDir(), "img")
	d, err := Open(path, Options{Create: true, Size: 2 * ZeroRegion, Prealloc: PreallocFalloc, NoZeroAhead: true})
	if err != nil {
		t.Fatal(err)
	}
	if unwrittenBytes(t, d) == 0 {
		d.Close()
		t.Skip("the host filesystem reports no unwritten extents")
	}
	old := []byte("written before this open")
	if _, err := d.WriteAt(old, 100); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if d, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, left := d.ZeroAheadStats(); left != 1 {
		t.Errorf("%d regions to zero, want 1 (region 1 only)", left)
	}
	if err := d.ZeroAhead(8192, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := d.WriteAt([]byte("new"), 8192); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(old))
	d.ReadAt(got, 100)
	if !bytes.Equal(got, old) {
		t.Errorf("data written before open reads %q", got)
	}
}

// A plain write (no ZeroAhead: nothing will flush it soon) leaves its
// region to the host, and no later ZeroAhead zeroes over it.
func TestZeroAheadNeverZeroesOverAPlainWrite(t *testing.T) {
	d, _ := unwrittenImage(t, 2, Options{})
	old := []byte("written without zero-ahead")
	if _, err := d.WriteAt(old, 4096); err != nil {
		t.Fatal(err)
	}
	if err := d.ZeroAhead(3*4096, 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := d.WriteAt([]byte("fsynced"), 3*4096); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(old))
	d.ReadAt(got, 4096)
	if !bytes.Equal(got, old) {
		t.Errorf("the plain write reads back %q", got)
	}
	if zeroed, left := d.ZeroAheadStats(); zeroed != 0 || left != 1 {
		t.Errorf("zeroed %d, unwritten %d; want 0, 1", zeroed, left)
	}
}

func TestZeroAheadOff(t *testing.T) {
	dir := t.TempDir()
	for name, opts := range map[string]Options{
		"sparse":        {Prealloc: PreallocOff},
		"full":          {Prealloc: PreallocFull},
		"no-zero-ahead": {Prealloc: PreallocFalloc, NoZeroAhead: true},
	} {
		opts.Create, opts.Size = true, 2*ZeroRegion
		d, err := Open(filepath.Join(dir, name), opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, left := d.ZeroAheadStats(); left != 0 {
			t.Errorf("%s: %d regions to zero, want 0", name, left)
		}
		d.Close()
	}
}

// Writers racing into regions being zeroed: every completed write must
// read back, never overwritten by zeros (run with -race).
func TestZeroAheadConcurrentWriters(t *testing.T) {
	d, _ := unwrittenImage(t, 4, Options{})
	const writers, each = 4, 64
	var wg sync.WaitGroup
	slots := rand.Perm(int(4 * ZeroRegion / 4096))[:writers*each]
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, s := range slots[w*each : (w+1)*each] {
				if s%3 != 0 { // the rest are plain writes: never zeroed over
					if err := d.ZeroAhead(int64(s)*4096, 4096); err != nil {
						t.Error(err)
						return
					}
				}
				if _, err := d.WriteAt(bytes.Repeat([]byte{byte(s%250 + 1)}, 4096), int64(s)*4096); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := make([]byte, 4096)
	for _, s := range slots {
		d.ReadAt(got, int64(s)*4096)
		if want := bytes.Repeat([]byte{byte(s%250 + 1)}, 4096); !bytes.Equal(got, want) {
			t.Fatalf("block %d lost its write", s)
		}
	}
	if _, left := d.ZeroAheadStats(); left != 0 {
		t.Errorf("%d regions left unwritten after writes into all", left)
	}
}

// A writer into a region another writer is zeroing waits for the zeros,
// so they cannot land over its data.
func TestZeroAheadWaitsForZeroing(t *testing.T) {
	z := &zeroAhead{size: 2 * ZeroRegion, state: []uint8{regionUnwritten, regionUnwritten}, ctr: accounting.NewRegistry().Layer("device").Counter("zero-ahead-regions")}
	z.cond.L = &z.mu
	z.left.Store(2)
	zeroing, release := make(chan struct{}), make(chan struct{})
	go z.prepare(10, 4096, true, func(off, end int64) error {
		close(zeroing)
		<-release
		return nil
	})
	<-zeroing
	done := make(chan error)
	go func() {
		done <- z.prepare(8192, 4096, false, func(off, end int64) error {
			t.Error("the region was zeroed twice")
			return nil
		})
	}()
	select {
	case <-done:
		t.Fatal("a second writer went ahead while the region was being zeroed")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if zeroed, left := z.zeroed.Load(), z.left.Load(); zeroed != 1 || left != 1 {
		t.Errorf("zeroed %d, left %d; want 1, 1", zeroed, left)
	}
}
