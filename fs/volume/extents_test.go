package volume

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/alloc"
	"github.com/smallfs/smallfs/fs/device"
)

// TestExtentLimit: on free space shredded into single blocks, a file whose
// map would pass the per-file extent limit (one log transaction) fails
// write-back with ENOSPC and changes nothing; a smaller one still works.
func TestExtentLimit(t *testing.T) {
	dev := device.NewMem(16 << 20)
	ok(t, Mkfs(dev, MkfsOptions{LogSize: 16 << 10}))                                   // one transaction: 4 KiB of records
	opts := Options{CommitInterval: -1, InlineThreshold: -1, DirtyThreshold: 64 << 20} // write-back at Release
	v := must[*Volume](t)(Open(dev, opts))
	t.Cleanup(func() { closeAndCheck(t, v, dev, opts) })
	// One-block extents next to each other take 3 bytes, and the
	// checksum record of each about 11 more.
	perExtent := 3
	if v.sums != nil {
		perExtent += 11
	}
	limit := v.txnRoom / perExtent
	files, err := fillUntilFull(t, v, "f", 4096)
	wantErrno(t, err, syscall.ENOSPC)
	for i := 0; i < len(files); i += 2 {
		ok(t, v.Unlink(root, RootIno, files[i]))
	}
	ok(t, v.Sync())
	// Take the free extents longer than a block (the checkpoint headroom
	// lies there) out of the allocator for the test, so that only the
	// one-block holes are left.
	var pinned []alloc.Extent
	for v.AllocStats().LargestFree > 1 {
		var none uint64
		pinned = append(pinned, must[alloc.Extent](t)(v.space.alloc(0, v.AllocStats().LargestFree, &none)))
	}
	unpin := func() {
		for _, e := range pinned {
			ok(t, v.space.release(e))
		}
		pinned = nil
	}
	defer unpin()
	if holes := v.AllocStats().Histogram[0]; holes <= uint64(limit+limit/4) {
		t.Fatalf("%d one-block holes, need more than the limit %d", holes, limit)
	}

	big := pattern((limit+limit/4)*4096, 3) // some holes may lie side by side
	a, h := must2(t)(v.Create(root, RootIno, "big", 0o644, syscall.O_RDWR))
	must[int](t)(h.WriteAt(big, 0))
	err = h.Release()
	wantErrno(t, err, syscall.ENOSPC)
	if got := must[Attr](t)(v.GetAttr(a.Ino)); got.Size != 0 || got.Blocks != 0 {
		t.Fatalf("failed write-back left size %d, %d blocks", got.Size, got.Blocks)
	}
	// The data went with the last close: no fsync may say it is durable
	// (a database closes, reopens and fsyncs), until the file is emptied.
	wantErrno(t, v.Fsync(a.Ino, false), syscall.EIO)
	h = must[*Handle](t)(v.OpenFile(a.Ino, syscall.O_RDWR))
	wantErrno(t, h.Fsync(false), syscall.EIO)
	ok(t, h.Release())
	must[*Handle](t)(v.OpenFile(a.Ino, syscall.O_RDWR|syscall.O_TRUNC)).Release()
	ok(t, v.Fsync(a.Ino, false))
	unpin()
	checkOK(t, v, dev, "after the refused write-back")

	small := pattern((limit/4)*4096, 4)
	ino := writeFile(t, v, RootIno, "small", small)
	if !bytes.Equal(readFile(t, v, ino), small) {
		t.Fatal("file below the limit differs")
	}
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "too fragmented") {
		t.Fatalf("error %v does not wrap ErrNoSpace", err)
	}
	t.Logf("limit %d extents; refused: %v", limit, err)
}

func must2(t testing.TB) func(Attr, *Handle, error) (Attr, *Handle) {
	return func(a Attr, h *Handle, err error) (Attr, *Handle) {
		t.Helper()
		ok(t, err)
		return a, h
	}
}
