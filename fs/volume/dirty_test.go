package volume

import (
	"bytes"
	"errors"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// waitFlusher waits until no background write-back pass is running or
// wanted, so that Check sees no write-back half done.
func waitFlusher(v *Volume) {
	wb := &v.wb
	wb.mu.Lock()
	defer wb.mu.Unlock()
	for (wb.running || len(wb.kick) > 0) && !wb.ended {
		wb.cond.Wait()
	}
}

// TestDirtyLimit writes many files and never closes them: the volume's
// dirty memory stays under DirtyLimit (plus what one write adds), writers
// are throttled, and every byte is there after close and reopen.
func TestDirtyLimit(t *testing.T) {
	const limit = 256 << 10
	opts := Options{DirtyLimit: limit, DirtyBackground: limit / 2}
	v := newTestVolume(t, opts)
	type file struct {
		h    *Handle
		data []byte
	}
	var files []file
	peak := int64(0)
	for i := range 120 {
		size := 4 << 10
		if i%10 == 0 {
			size = 100 << 10 // spans two chunks
		}
		data := pattern(size, byte(i))
		_, h, err := v.Create(root, RootIno, "f"+strconv.Itoa(i), 0o644, syscall.O_RDWR)
		ok(t, err)
		for off := 0; off < size; off += 16 << 10 {
			must[int](t)(h.WriteAt(data[off:min(size, off+16<<10)], int64(off)))
			// One write of 16 KiB adds at most two chunk buffers.
			got := v.DirtyBytes()
			if got > limit+2*int64(v.chunkSize()) {
				t.Fatalf("file %d: %d dirty bytes, limit %d", i, got, limit)
			}
			peak = max(peak, got)
		}
		files = append(files, file{h, data})
	}
	if peak <= opts.DirtyBackground {
		t.Fatalf("peak dirty %d never passed the background mark %d: the test tests nothing", peak, opts.DirtyBackground)
	}
	waitFlusher(v)
	if v.wb.written == 0 {
		t.Fatal("no background write-back")
	}
	for i, f := range files {
		if got := readFile(t, v, f.h.Ino()); !bytes.Equal(got, f.data) {
			t.Fatalf("file %d differs before close", i)
		}
		ok(t, f.h.Release())
	}
	if got := v.DirtyBytes(); got != 0 {
		t.Fatalf("%d dirty bytes after every file is closed", got)
	}
}

// TestDirtyThrottle: a writer at the limit waits for the background
// write-back. The oldest dirty file's data lock is held, so the pass
// cannot get past it until the test lets it.
func TestDirtyThrottle(t *testing.T) {
	const limit = 128 << 10
	v := newTestVolume(t, Options{DirtyLimit: limit, DirtyBackground: limit / 2})
	_, a, err := v.Create(root, RootIno, "a", 0o644, syscall.O_RDWR)
	ok(t, err)
	must[int](t)(a.WriteAt(pattern(64<<10, 1), 0))
	a.fd.mu.Lock()
	_, b, err := v.Create(root, RootIno, "b", 0o644, syscall.O_RDWR)
	ok(t, err)
	must[int](t)(b.WriteAt(pattern(64<<10, 2), 0)) // reaches the limit
	done := make(chan error)
	go func() {
		_, err := b.WriteAt(pattern(64<<10, 3), 64<<10)
		done <- err
	}()
	for v.Throttled() == 0 {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("write at the limit went through (%v) while write-back was blocked", err)
	default:
	}
	a.fd.mu.Unlock()
	ok(t, <-done)
	waitFlusher(v)
	if v.wb.written == 0 {
		t.Fatal("no background write-back")
	}
	ok(t, a.Release())
	ok(t, b.Release())
}

// TestDirtyLimitNoSpace: with writes throttled, ENOSPC is still reported
// by the write that cannot be promised its blocks.
func TestDirtyLimitNoSpace(t *testing.T) {
	v := newTestVolumeSize(t, 2<<20, Options{DirtyLimit: 128 << 10, DirtyBackground: 64 << 10})
	var hs []*Handle
	var err error
	for i := 0; err == nil; i++ {
		var h *Handle
		_, h, err = v.Create(root, RootIno, "f"+strconv.Itoa(i), 0o644, syscall.O_WRONLY)
		ok(t, err)
		hs = append(hs, h)
		_, err = h.WriteAt(pattern(32<<10, byte(i)), 0)
	}
	wantErrno(t, err, syscall.ENOSPC)
	waitFlusher(v)
	for _, h := range hs {
		ok(t, h.Release())
	}
}

// TestDirtyExpire: a file left open and dirty is written back by age.
func TestDirtyExpire(t *testing.T) {
	v := newTestVolume(t, Options{DirtyExpire: 10 * time.Millisecond})
	_, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR)
	ok(t, err)
	data := pattern(5000, 1)
	must[int](t)(h.WriteAt(data, 0))
	// Wait for the event, not for a time: the deadline only ends a hang.
	for deadline := time.Now().Add(time.Minute); v.DirtyBytes() != 0; {
		if time.Now().After(deadline) {
			t.Fatal("dirty data not written back by age")
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitFlusher(v)
	if a := must[Attr](t)(v.GetAttr(h.Ino())); a.Blocks == 0 {
		t.Fatal("written back, yet no blocks")
	}
	ok(t, h.Release())
}

func TestDirtyOptions(t *testing.T) {
	for _, o := range []Options{
		{DirtyLimit: 1000},
		{DirtyLimit: 1 << 20, DirtyBackground: 1 << 20},
		{DirtyBackground: -1},
	} {
		if _, err := o.withDefaults(4096); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", o, err)
		}
	}
	o, err := Options{}.withDefaults(4096)
	ok(t, err)
	if o.DirtyLimit != DefaultDirtyLimit || o.DirtyBackground != DefaultDirtyLimit/2 || o.DirtyExpire != DefaultDirtyExpire {
		t.Fatalf("defaults %d %d %v", o.DirtyLimit, o.DirtyBackground, o.DirtyExpire)
	}
}
