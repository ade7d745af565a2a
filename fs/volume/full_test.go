package volume

import (
	"bytes"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// reservedBlocks returns the blocks promised to dirty data volume-wide.
func reservedBlocks(v *Volume) uint64 {
	v.space.mu.Lock()
	defer v.space.mu.Unlock()
	return v.space.reserved
}

// TestShortWriteAtFull fills a small volume with 1 MiB writes, as dd does:
// the write that meets the end of the space writes what fits and returns
// that count with ENOSPC, the file's size is exactly the bytes reported
// written and they all read back, the next write gets ENOSPC with nothing
// written, and the file and its content survive write-back and a remount.
func TestShortWriteAtFull(t *testing.T) {
	for _, tc := range []struct {
		name      string
		threshold int64 // Options.DirtyThreshold: write-back during the fill, or only at the end
	}{
		{"writeback", 0},
		{"buffered", 64 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := device.NewMem(8 << 20)
			ok(t, Mkfs(dev, MkfsOptions{}))
			opts := Options{CommitInterval: -1, DirtyThreshold: tc.threshold, DirtyLimit: -1}
			v := must[*Volume](t)(Open(dev, opts))
			a, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR)
			ok(t, err)
			const bs = 1 << 20
			var written, short int
			var data []byte
			for i := 0; err == nil; i++ {
				p := pattern(bs, byte(i))
				var n int
				n, err = h.WriteAt(p, int64(written))
				data = append(data, p[:n]...)
				written += n
				if err != nil {
					short = n
				}
			}
			wantErrno(t, err, syscall.ENOSPC)
			if short == 0 || short%v.blockSize != 0 {
				t.Errorf("the write meeting the end wrote %d bytes: want a short write of whole blocks", short)
			}
			if got := must[Attr](t)(v.GetAttr(a.Ino)).Size; got != uint64(written) {
				t.Fatalf("size %d after %d bytes reported written", got, written)
			}
			n, err := h.WriteAt([]byte("more"), int64(written))
			if n != 0 {
				t.Errorf("a write on the full volume wrote %d bytes", n)
			}
			wantErrno(t, err, syscall.ENOSPC)
			if st := v.StatFS(); st.BlocksAvail != 0 {
				t.Errorf("ENOSPC with %d blocks available", st.BlocksAvail)
			}
			if !bytes.Equal(readFile(t, v, a.Ino), data) {
				t.Fatal("the file does not read back as the bytes reported written")
			}
			ok(t, h.Release())
			if r := reservedBlocks(v); r != 0 {
				t.Errorf("%d blocks still reserved after the last write-back", r)
			}
			checkOK(t, v, dev, "when full")
			ok(t, v.Close())

			v = must[*Volume](t)(Open(dev.Reopen(), opts))
			t.Cleanup(func() { closeAndCheck(t, v, dev, opts) })
			if got := must[Attr](t)(v.GetAttr(a.Ino)).Size; got != uint64(written) {
				t.Fatalf("size %d after remount, %d bytes written", got, written)
			}
			if !bytes.Equal(readFile(t, v, a.Ino), data) {
				t.Fatal("the file's content changed across the remount")
			}
		})
	}
}

// TestShortWriteInsideFile: a write on a full volume that overwrites
// existing data (copy-on-write needs fresh blocks) and extends the file
// writes what fits; the size moves only as far as the bytes written.
func TestShortWriteInsideFile(t *testing.T) {
	v := newTestVolumeSize(t, 4<<20, Options{InlineThreshold: -1, DirtyLimit: -1})
	a, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR)
	ok(t, err)
	defer h.Release()
	old := pattern(1<<20, 1)
	must[int](t)(h.WriteAt(old, 0))
	ok(t, h.Flush())
	p := pattern(8<<20, 2) // more than the volume holds
	n, err := h.WriteAt(p, 512<<10)
	wantErrno(t, err, syscall.ENOSPC)
	if n == 0 || n%v.blockSize != 0 {
		t.Fatalf("wrote %d bytes: want a short write of whole blocks", n)
	}
	want := append(old[:512<<10:512<<10], p[:n]...)
	if len(want) < len(old) {
		want = append(want, old[len(want):]...)
	}
	if size := must[Attr](t)(v.GetAttr(a.Ino)).Size; size != uint64(len(want)) {
		t.Fatalf("size %d, want %d (%d bytes written at 512 KiB over 1 MiB)", size, len(want), n)
	}
	if !bytes.Equal(readFile(t, v, a.Ino), want) {
		t.Fatal("content differs from what the short write reported")
	}
	ok(t, h.Flush())
	if !bytes.Equal(readFile(t, v, a.Ino), want) {
		t.Fatal("content differs after write-back")
	}
}

// TestWriteBackTakesOnlyReserved: a dirty chunk that ended at a
// block-aligned end of file, and a write past it leaves short, is placed
// as the blocks it holds, not padded with zeros to the end of the chunk:
// write-back takes only blocks reserved at write time, so it cannot fail
// for space the write already promised.
func TestWriteBackTakesOnlyReserved(t *testing.T) {
	v := newTestVolume(t, Options{InlineThreshold: -1})
	a, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR)
	ok(t, err)
	defer h.Release()
	bs := v.blockSize
	must[int](t)(h.WriteAt(pattern(2*bs, 1), 0))
	must[int](t)(h.WriteAt(pattern(bs, 2), 1<<20))
	before := v.StatFS().BlocksFree
	held := reservedBlocks(v)
	if held != 3 {
		t.Fatalf("%d blocks reserved for 3 blocks of data", held)
	}
	ok(t, h.Flush())
	if got := before - v.StatFS().BlocksFree; got != 0 {
		t.Errorf("write-back of 3 reserved blocks took %d blocks more", got)
	}
	if blocks := must[Attr](t)(v.GetAttr(a.Ino)).Blocks; blocks != 3*uint64(bs)/512 {
		t.Errorf("st_blocks %d after write-back, want %d", blocks, 3*bs/512)
	}
	want := make([]byte, 1<<20+bs)
	copy(want, pattern(2*bs, 1))
	copy(want[1<<20:], pattern(bs, 2))
	if !bytes.Equal(readFile(t, v, a.Ino), want) {
		t.Fatal("content differs")
	}
}

// TestModelFull runs random writes, truncates and write-backs on a file
// while another file's growth and deletion keep the volume near full:
// every write, short or not, must leave the file as a model that applies
// just the bytes reported written, and nothing may stay reserved.
func TestModelFull(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	v := newTestVolumeSize(t, 4<<20, Options{DirtyThreshold: 256 << 10, DirtyLimit: -1})
	a, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR)
	ok(t, err)
	_, filler, err := v.Create(root, RootIno, "filler", 0o644, syscall.O_RDWR)
	ok(t, err)
	var model []byte
	var filled int64
	shorts, full := 0, 0
	for step := range 1500 {
		switch op := rng.IntN(20); {
		case op < 10: // write, maybe past the end of the space
			off := rng.IntN(3 << 20)
			if rng.IntN(4) == 0 {
				off = len(model) + rng.IntN(3)*rng.IntN(9000)
			}
			p := pattern(rng.IntN(300000)+1, byte(step))
			n, err := h.WriteAt(p, int64(off))
			switch {
			case err == nil && n != len(p):
				t.Fatalf("step %d: wrote %d of %d bytes without an error", step, n, len(p))
			case err != nil:
				wantErrno(t, err, syscall.ENOSPC)
				if n > 0 {
					shorts++
				} else {
					full++
				}
			}
			if n > 0 {
				if end := off + n; end > len(model) {
					model = append(model, make([]byte, end-len(model))...)
				}
				copy(model[off:], p[:n])
			}
		case op < 12: // truncate
			size := rng.IntN(3 << 20)
			if rng.IntN(3) == 0 {
				size = rng.IntN(300)
			}
			_, err := v.SetAttr(root, a.Ino, SetAttrIn{Valid: SetSize, Size: uint64(size)})
			if err != nil {
				// Growing a file whose end is inside a block rewrites
				// that block: that can meet a full volume.
				wantErrno(t, err, syscall.ENOSPC)
				continue
			}
			if size < len(model) {
				model = model[:size]
			} else {
				model = append(model, make([]byte, size-len(model))...)
			}
		case op < 14:
			ok(t, h.Flush())
		case op < 16: // the filler takes space, or gives it back
			if rng.IntN(2) == 0 {
				n, _ := filler.WriteAt(pattern(rng.IntN(1<<20)+1, 3), filled)
				filled += int64(n)
			} else {
				must[Attr](t)(v.SetAttr(root, must[Attr](t)(v.Lookup(root, RootIno, "filler")).Ino, SetAttrIn{Valid: SetSize, Size: 0}))
				filled = 0
			}
		case op < 18: // read the whole file
			if got := readFile(t, v, a.Ino); !bytes.Equal(got, model) {
				t.Fatalf("step %d: content differs from the model (%d bytes, want %d)", step, len(got), len(model))
			}
		default:
			ok(t, v.Sync())
		}
	}
	t.Logf("%d short writes, %d writes refused whole", shorts, full)
	if shorts == 0 {
		t.Error("no write met the end of the space")
	}
	ok(t, h.Release())
	ok(t, filler.Release())
	if !bytes.Equal(readFile(t, v, a.Ino), model) {
		t.Fatal("final content differs from the model")
	}
	if r := reservedBlocks(v); r != 0 {
		t.Errorf("%d blocks still reserved with no dirty data", r)
	}
}

// TestFallocateTooBig: a fallocate whose holes need more blocks than are
// free is refused with ENOSPC up front, in both modes, and leaves the
// file's size, blocks and content and the volume's free space as they
// were; one that fits still works.
func TestFallocateTooBig(t *testing.T) {
	v := newTestVolumeSize(t, 8<<20, Options{InlineThreshold: -1})
	data := pattern(5000, 4)
	ino := writeFile(t, v, RootIno, "f", data)
	_, h, err := v.Create(root, RootIno, "sparse", 0o644, syscall.O_RDWR)
	ok(t, err)
	defer h.Release()
	sparse := h.Ino()
	must[int](t)(h.WriteAt([]byte("end"), 20<<20)) // holes larger than the volume
	ok(t, h.Flush())
	// A refused reservation checkpoints (the headroom counts the log) and
	// retries: checkpoint first, so that the free space compared is the
	// one the checkpoint leaves.
	v.mu.Lock()
	ok(t, v.checkpoint(false))
	v.mu.Unlock()
	free := v.StatFS().BlocksFree
	attrs := func() [2]Attr {
		return [2]Attr{must[Attr](t)(v.GetAttr(ino)), must[Attr](t)(v.GetAttr(sparse))}
	}
	before := attrs()
	for _, tc := range []struct {
		name      string
		ino       Ino
		mode      uint32
		off, size int64
	}{
		{"extend", ino, 0, 0, 64 << 20},
		{"extend-past-hole", ino, 0, 1 << 20, 64 << 20},
		{"keep-size", sparse, FallocKeepSize, 0, 64 << 20},
		{"inside", sparse, 0, 0, 20 << 20},
	} {
		wantErrno(t, v.Fallocate(tc.ino, tc.mode, tc.off, tc.size), syscall.ENOSPC)
		if got := attrs(); got != before {
			t.Fatalf("%s: a refused fallocate changed the files:\n got %+v\nwant %+v", tc.name, got, before)
		}
		if got := v.StatFS().BlocksFree; got != free {
			t.Fatalf("%s: %d blocks free after a refused fallocate, %d before", tc.name, got, free)
		}
		if r := reservedBlocks(v); r != 0 {
			t.Fatalf("%s: %d blocks left reserved", tc.name, r)
		}
	}
	if !bytes.Equal(readFile(t, v, ino), data) {
		t.Fatal("a refused fallocate changed the content")
	}
	// The count is exact: one block more than is available is refused,
	// and all that is available (the file's own blocks, rewritten
	// copy-on-write, are among them) is taken.
	avail := int64(v.StatFS().BlocksAvail) * int64(v.blockSize)
	wantErrno(t, v.Fallocate(ino, 0, 0, avail+int64(v.blockSize)), syscall.ENOSPC)
	ok(t, v.Fallocate(ino, 0, 0, avail))
	if a := must[Attr](t)(v.GetAttr(ino)); a.Size != uint64(avail) || a.Blocks != uint64(avail)/512 {
		t.Fatalf("after a fallocate that fits: size %d, %d sectors, want %d bytes", a.Size, a.Blocks, avail)
	}
	want := make([]byte, avail)
	copy(want, data)
	if !bytes.Equal(readFile(t, v, ino), want) {
		t.Fatal("content after a fallocate that fits")
	}
	if r := reservedBlocks(v); r != 0 {
		t.Fatalf("%d blocks left reserved", r)
	}
}

// TestFallocateFailsWhole: a fallocate that fails part way (here the
// device fails a write while it writes its zeros back) sizes the file
// back to what it was and gives back the blocks it took.
func TestFallocateFailsWhole(t *testing.T) {
	mem := device.NewMem(32 << 20)
	ok(t, Mkfs(mem, MkfsOptions{}))
	dev := device.NewFaulty(mem)
	opts := Options{CommitInterval: -1, InlineThreshold: -1, DirtyThreshold: 256 << 10}
	v := must[*Volume](t)(Open(dev, opts))
	t.Cleanup(func() { closeAndCheck(t, v, mem, opts) })
	data := pattern(5000, 4)
	ino := writeFile(t, v, RootIno, "f", data)
	ok(t, v.Sync())
	free := v.StatFS().BlocksFree
	before := must[Attr](t)(v.GetAttr(ino))
	dev.FailNth(device.OpWrite, dev.Count(device.OpWrite)+20, syscall.EIO)
	wantErrno(t, v.Fallocate(ino, 0, 0, 8<<20), syscall.EIO)
	if got := must[Attr](t)(v.GetAttr(ino)); got.Size != before.Size || got.Blocks != before.Blocks {
		t.Fatalf("a failed fallocate left size %d, %d sectors; before: %d, %d", got.Size, got.Blocks, before.Size, before.Blocks)
	}
	ok(t, v.Sync())
	if got := v.StatFS().BlocksFree; got != free {
		t.Fatalf("%d blocks free after a failed fallocate, %d before", got, free)
	}
	if r := reservedBlocks(v); r != 0 {
		t.Fatalf("%d blocks left reserved", r)
	}
	if !bytes.Equal(readFile(t, v, ino), data) {
		t.Fatal("a failed fallocate changed the content")
	}
}

// TestGrowOnFullVolume: growing a file on a full volume needs no block
// where nothing is stale past its end: an inline file that stays inline,
// a file whose last block is a hole. (A file whose last block holds data
// rewrites it, copy-on-write, with zeros past the old end: that needs
// space, and on a full volume gets ENOSPC with the file unchanged.)
func TestGrowOnFullVolume(t *testing.T) {
	v := newTestVolumeSize(t, 4<<20, Options{DirtyLimit: -1})
	small := writeFile(t, v, RootIno, "small", pattern(100, 1))
	holey := writeFile(t, v, RootIno, "holey", pattern(4096, 2))
	must[Attr](t)(v.SetAttr(root, holey, SetAttrIn{Valid: SetSize, Size: 1<<20 + 100}))
	tail := writeFile(t, v, RootIno, "tail", pattern(10000, 3))
	_, h, err := v.Create(root, RootIno, "filler", 0o644, syscall.O_WRONLY)
	ok(t, err)
	for off := int64(0); err == nil; {
		var n int
		n, err = h.WriteAt(pattern(1<<20, 4), off)
		off += int64(n)
	}
	wantErrno(t, err, syscall.ENOSPC)
	ok(t, h.Release())
	if st := v.StatFS(); st.BlocksAvail != 0 {
		t.Fatalf("%d blocks available after the fill", st.BlocksAvail)
	}

	must[Attr](t)(v.SetAttr(root, small, SetAttrIn{Valid: SetSize, Size: 120}))
	if got, want := readFile(t, v, small), append(pattern(100, 1), make([]byte, 20)...); !bytes.Equal(got, want) {
		t.Fatal("inline file grown on a full volume: content differs")
	}
	must[Attr](t)(v.SetAttr(root, holey, SetAttrIn{Valid: SetSize, Size: 2 << 20}))
	want := make([]byte, 2<<20)
	copy(want, pattern(4096, 2))
	if !bytes.Equal(readFile(t, v, holey), want) {
		t.Fatal("file ending in a hole grown on a full volume: content differs")
	}
	if _, err := v.SetAttr(root, tail, SetAttrIn{Valid: SetSize, Size: 20000}); err != nil {
		wantErrno(t, err, syscall.ENOSPC)
		if !bytes.Equal(readFile(t, v, tail), pattern(10000, 3)) {
			t.Fatal("a refused truncate changed the file")
		}
	}
}

// TestFallocateKeepSizeFails: a KEEP_SIZE fallocate that fails part way
// leaves the holes it filled filled (with zeros) and the size alone, and
// what it left dirty is written back by the next commit, its reservation
// given back.
func TestFallocateKeepSizeFails(t *testing.T) {
	mem := device.NewMem(32 << 20)
	ok(t, Mkfs(mem, MkfsOptions{}))
	dev := device.NewFaulty(mem)
	opts := Options{CommitInterval: -1, InlineThreshold: -1, DirtyThreshold: 256 << 10}
	v := must[*Volume](t)(Open(dev, opts))
	t.Cleanup(func() { closeAndCheck(t, v, mem, opts) })
	ino := writeFile(t, v, RootIno, "f", []byte("x"))
	must[Attr](t)(v.SetAttr(root, ino, SetAttrIn{Valid: SetSize, Size: 8 << 20}))
	dev.FailNth(device.OpWrite, dev.Count(device.OpWrite)+20, syscall.EIO)
	wantErrno(t, v.Fallocate(ino, FallocKeepSize, 0, 8<<20), syscall.EIO)
	ok(t, v.Sync())
	if r := reservedBlocks(v); r != 0 {
		t.Fatalf("%d blocks still reserved after the commit", r)
	}
	want := make([]byte, 8<<20)
	want[0] = 'x'
	if a := must[Attr](t)(v.GetAttr(ino)); a.Size != 8<<20 {
		t.Fatalf("size %d after a failed KEEP_SIZE fallocate", a.Size)
	}
	if !bytes.Equal(readFile(t, v, ino), want) {
		t.Fatal("content after a failed KEEP_SIZE fallocate")
	}
}

// TestFailedWriteBackKeepsReservation: a write-back that fails (here a
// device write) gives its blocks back but keeps them promised to the data
// it leaves dirty, so other writers cannot take them: the retry succeeds
// on a volume filled meanwhile.
func TestFailedWriteBackKeepsReservation(t *testing.T) {
	mem := device.NewMem(8 << 20)
	ok(t, Mkfs(mem, MkfsOptions{}))
	dev := device.NewFaulty(mem)
	opts := Options{CommitInterval: -1, InlineThreshold: -1, DirtyLimit: -1}
	v := must[*Volume](t)(Open(dev, opts))
	t.Cleanup(func() { closeAndCheck(t, v, mem, opts) })
	a, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR)
	ok(t, err)
	data := pattern(256<<10, 8)
	must[int](t)(h.WriteAt(data, 0))
	dev.FailNth(device.OpWrite, dev.Count(device.OpWrite)+1, syscall.EIO)
	wantErrno(t, h.Flush(), syscall.EIO)
	if r := reservedBlocks(v); r != 64 {
		t.Fatalf("%d blocks reserved after the failed write-back, want the data's 64", r)
	}
	_, err = fillUntilFull(t, v, "filler", 1<<20)
	wantErrno(t, err, syscall.ENOSPC)
	ok(t, h.Flush())
	ok(t, h.Release())
	if !bytes.Equal(readFile(t, v, a.Ino), data) {
		t.Fatal("the retried data differs")
	}
}
