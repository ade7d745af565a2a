package volume

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// zeroModel returns want with [off, off+n) zeroed, grown to cover it
// unless keep.
func zeroModel(want []byte, off, n int, keep bool) []byte {
	out := bytes.Clone(want)
	if end := off + n; !keep && end > len(out) {
		out = append(out, make([]byte, end-len(out))...)
	}
	if off < len(out) {
		clear(out[off:min(off+n, len(out))])
	}
	return out
}

// mappedBlocks counts the file blocks of ino that hold data, as SEEK_DATA
// and SEEK_HOLE see them.
func mappedBlocks(t *testing.T, v *Volume, ino Ino) uint64 {
	t.Helper()
	size := int64(must[Attr](t)(v.GetAttr(ino)).Size)
	var blocks uint64
	for at := int64(0); at < size; {
		d, err := v.Lseek(ino, at, SeekData)
		if err != nil {
			wantErrno(t, err, syscall.ENXIO)
			break
		}
		h := must[int64](t)(v.Lseek(ino, d, SeekHole))
		blocks += uint64((h - d + int64(v.blockSize) - 1) / int64(v.blockSize))
		at = h
	}
	return blocks
}

// TestPunchHole punches ranges of a file of committed data: aligned,
// with unaligned edges, inside one block, past the end, over the last
// partial block. The range reads as zeros, the size stays, the whole
// blocks inside give their space back at once (st_blocks, statfs), the
// edges keep one block each, SEEK_HOLE finds the hole, and all of it
// survives a close and reopen.
func TestPunchHole(t *testing.T) {
	const bs = 4096
	const size = 300<<10 + 1000 // ends inside block 75
	for _, tc := range []struct {
		name      string
		off, n    int
		freed     int // whole blocks given back
		holeAt    int64
		holeBytes int64 // of the hole SEEK_HOLE finds at holeAt (0: none)
	}{
		{"aligned", 8 * bs, 16 * bs, 16, 8 * bs, 16 * bs},
		{"unaligned", 8*bs + 100, 16*bs - 50, 15, 9 * bs, 15 * bs},
		{"one-block", 8*bs + 100, 200, 0, 0, 0},
		{"across-chunks", 10*bs + 1, 40 * bs, 39, 11 * bs, 39 * bs},
		{"past-end", 70*bs + 10, 1 << 20, 5, 71 * bs, size - 71*bs},
		{"last-block", 75 * bs, 4000, 1, 75 * bs, size - 75*bs},
		{"start-past-end", size + 10, 100, 0, 0, 0},
		{"whole", 0, size, 76, 0, size},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := device.NewMem(64 << 20)
			ok(t, Mkfs(dev, MkfsOptions{}))
			opts := Options{CommitInterval: -1}
			v := must[*Volume](t)(Open(dev, opts))
			data := pattern(size, 3)
			ino := writeFile(t, v, RootIno, "f", data)
			ok(t, v.Sync())
			before := must[Attr](t)(v.GetAttr(ino))
			free := v.StatFS().BlocksFree
			ok(t, v.Fallocate(ino, FallocPunchHole|FallocKeepSize, int64(tc.off), int64(tc.n)))
			want := zeroModel(data, tc.off, tc.n, true)
			check := func(v *Volume, when string) {
				t.Helper()
				a := must[Attr](t)(v.GetAttr(ino))
				if a.Size != size {
					t.Fatalf("%s: size %d, want %d", when, a.Size, size)
				}
				if want := before.Blocks - uint64(tc.freed)*bs/512; a.Blocks != want {
					t.Fatalf("%s: %d sectors, want %d (%d blocks freed)", when, a.Blocks, want, tc.freed)
				}
				if !bytes.Equal(readFile(t, v, ino), want) {
					t.Fatalf("%s: content differs from the model", when)
				}
				if tc.holeBytes > 0 {
					if h := must[int64](t)(v.Lseek(ino, 0, SeekHole)); h != tc.holeAt {
						t.Fatalf("%s: SEEK_HOLE from 0 at %d, want %d", when, h, tc.holeAt)
					}
					if end := tc.holeAt + tc.holeBytes; end < size {
						if d := must[int64](t)(v.Lseek(ino, tc.holeAt, SeekData)); d != end {
							t.Fatalf("%s: SEEK_DATA from the hole at %d, want %d", when, d, end)
						}
					}
				} else if h := must[int64](t)(v.Lseek(ino, 0, SeekHole)); h != size {
					t.Fatalf("%s: SEEK_HOLE finds a hole at %d in a file without one", when, h)
				}
			}
			check(v, "after the punch")
			if got := v.StatFS().BlocksFree; got != free+uint64(tc.freed) {
				t.Fatalf("%d blocks free after the punch, %d before: want %d more", got, free, tc.freed)
			}
			if r := reservedBlocks(v); r != 0 {
				t.Fatalf("%d blocks left reserved", r)
			}
			ok(t, v.Sync())
			closeAndCheck(t, v, dev, opts)
			v = must[*Volume](t)(Open(dev.Reopen(), opts))
			defer v.Close()
			check(v, "after a reopen")
		})
	}
}

// TestPunchDirty: dirty data inside the range is dropped with its
// reservation, never written; dirty data at the edges is written with the
// range zeroed; and a punch whose write-back fails leaves the dirty data
// as it was, for the next commit.
func TestPunchDirty(t *testing.T) {
	mem := device.NewMem(32 << 20)
	ok(t, Mkfs(mem, MkfsOptions{}))
	dev := device.NewFaulty(mem)
	opts := Options{CommitInterval: -1, DirtyThreshold: 64 << 20, DirtyLimit: -1}
	v := must[*Volume](t)(Open(dev, opts))
	t.Cleanup(func() { closeAndCheck(t, v, mem, opts) })
	a, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR)
	ok(t, err)
	defer h.Release()
	data := pattern(1<<20, 5)
	must[int](t)(h.WriteAt(data, 0))
	if r := reservedBlocks(v); r != 256 {
		t.Fatalf("%d blocks reserved for 1 MiB of dirty data", r)
	}

	// The write-back the punch starts with fails: nothing changes.
	dev.FailNth(device.OpWrite, dev.Count(device.OpWrite)+1, syscall.EIO)
	wantErrno(t, v.Fallocate(a.Ino, FallocPunchHole|FallocKeepSize, 64<<10, 512<<10), syscall.EIO)
	if r := reservedBlocks(v); r != 256 {
		t.Fatalf("%d blocks reserved after a failed punch, want the data's 256", r)
	}
	if !bytes.Equal(readFile(t, v, a.Ino), data) {
		t.Fatal("a failed punch changed the dirty data")
	}

	// Blocks 16-164 go. Chunks 1-9 lie inside: set aside, never
	// written. Chunks 0 and 10 hold the edges (blocks 15 and 165):
	// written, then rewritten at the edge blocks.
	writes := dev.Count(device.OpWrite)
	ok(t, v.Fallocate(a.Ino, FallocPunchHole|FallocKeepSize, 60<<10+100, 600<<10))
	want := zeroModel(data, 60<<10+100, 600<<10, true)
	if !bytes.Equal(readFile(t, v, a.Ino), want) {
		t.Fatal("content after punching dirty data")
	}
	if r := reservedBlocks(v); r != 0 {
		t.Fatalf("%d blocks left reserved after the punch", r)
	}
	if got, want := must[Attr](t)(v.GetAttr(a.Ino)).Blocks, uint64(256-149)*8; got != want {
		t.Fatalf("%d sectors after the punch, want %d", got, want)
	}
	// Chunks 0, 10-15 (7 chunks, one write each, at most), the two
	// edge blocks, and the log: fewer than the 16 chunks' writes.
	if w := dev.Count(device.OpWrite) - writes; w > 7+2+4 {
		t.Fatalf("%d device writes for a punch of dirty data: the chunks inside were written", w)
	}
	ok(t, v.Sync())
	if !bytes.Equal(readFile(t, v, a.Ino), want) {
		t.Fatal("content after the commit")
	}
}

// TestPunchInline: an inline file's bytes are zeroed in the metadata; it
// stays inline, with no block.
func TestPunchInline(t *testing.T) {
	v := newTestVolume(t, Options{})
	data := pattern(100, 9)
	ino := writeFile(t, v, RootIno, "f", data)
	ok(t, v.Fallocate(ino, FallocPunchHole|FallocKeepSize, 10, 20))
	ok(t, v.Fallocate(ino, FallocPunchHole|FallocKeepSize, 90, 1000))
	want := zeroModel(zeroModel(data, 10, 20, true), 90, 1000, true)
	a := must[Attr](t)(v.GetAttr(ino))
	if a.Size != 100 || a.Blocks != 0 {
		t.Fatalf("inline file after the punch: size %d, %d sectors", a.Size, a.Blocks)
	}
	if !bytes.Equal(readFile(t, v, ino), want) {
		t.Fatal("inline content after the punch")
	}
	ok(t, v.Fallocate(ino, FallocZeroRange, 50, 20))
	ok(t, v.Fallocate(ino, FallocZeroRange, 110, 10))
	want = zeroModel(zeroModel(want, 50, 20, false), 110, 10, false)
	if a := must[Attr](t)(v.GetAttr(ino)); a.Size != 120 || a.Blocks != 0 {
		t.Fatalf("inline file after zero range: size %d, %d sectors", a.Size, a.Blocks)
	}
	if !bytes.Equal(readFile(t, v, ino), want) {
		t.Fatal("inline content after zero range")
	}
}

// TestFallocateModes: the modes Linux defines and smallfs does not
// support, and bad ranges, are refused with the errno Linux gives.
func TestFallocateModes(t *testing.T) {
	v := newTestVolume(t, Options{})
	data := pattern(10000, 1)
	ino := writeFile(t, v, RootIno, "f", data)
	for _, tc := range []struct {
		mode   uint32
		off, n int64
		errno  syscall.Errno
		what   string
	}{
		{FallocPunchHole, 0, 4096, syscall.EOPNOTSUPP, "punch without KEEP_SIZE"},
		{FallocPunchHole | FallocZeroRange | FallocKeepSize, 0, 4096, syscall.EOPNOTSUPP, "punch and zero range"},
		{0x08, 0, 4096, syscall.EOPNOTSUPP, "collapse range"},
		{0x20, 0, 4096, syscall.EOPNOTSUPP, "insert range"},
		{0x40, 0, 4096, syscall.EOPNOTSUPP, "unshare range"},
		{0x04 | FallocPunchHole | FallocKeepSize, 0, 4096, syscall.EOPNOTSUPP, "no-hide-stale"},
		{FallocPunchHole | FallocKeepSize, 0, 0, syscall.EINVAL, "punch of nothing"},
		{FallocZeroRange, 0, 0, syscall.EINVAL, "zero range of nothing"},
		{FallocZeroRange, -1, 10, syscall.EINVAL, "negative offset"},
		{FallocZeroRange, MaxFileSize - 10, 100, syscall.EFBIG, "past the largest file"},
	} {
		wantErrnoWhat(t, v.Fallocate(ino, tc.mode, tc.off, tc.n), tc.errno, tc.what)
	}
	wantErrno(t, v.Fallocate(RootIno, FallocPunchHole|FallocKeepSize, 0, 10), syscall.EISDIR)
	if !bytes.Equal(readFile(t, v, ino), data) {
		t.Fatal("a refused fallocate changed the file")
	}
}

func wantErrnoWhat(t *testing.T, err error, errno syscall.Errno, what string) {
	t.Helper()
	t.Run(what, func(t *testing.T) { wantErrno(t, err, errno) })
}

// TestZeroRange: the range reads as zeros and every block of it is
// allocated (written with zeros, as mode 0 fills holes, a chunk at a
// time: the blocks of a chunk from its start to the range's end): a hole
// inside is filled, data inside is replaced (the old blocks freed), and
// without KEEP_SIZE the file grows to cover the range; with it, nothing
// past the end is allocated.
func TestZeroRange(t *testing.T) {
	const bs = 4096
	const size = 200 * bs
	for _, tc := range []struct {
		name   string
		mode   uint32
		off, n int
		blocks int // the file's blocks afterwards
	}{
		{"inside", FallocZeroRange, 10*bs + 5, 20 * bs, 48},
		{"over-hole", FallocZeroRange, 64 * bs, 32 * bs, 48 + 32},
		{"into-hole", FallocZeroRange, 30*bs + 1, 20 * bs, 48 + 24}, // chunk 3 (blocks 48-63) is written whole
		{"extend", FallocZeroRange, size - 100, 10 * bs, 48 + 10},
		{"keep-size", FallocZeroRange | FallocKeepSize, size - 100, 10 * bs, 48},
		{"past-end-keep", FallocZeroRange | FallocKeepSize, size + bs, bs, 48},
		{"past-end", FallocZeroRange, size + bs, bs, 48 + 2}, // the last chunk grows from its start
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newTestVolume(t, Options{})
			// Data in blocks 0-39 and 192-199 (chunk 12, the end), a
			// hole between.
			data := pattern(size, 4)
			clear(data[40*bs : 192*bs])
			_, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR)
			ok(t, err)
			ino := h.Ino()
			must[int](t)(h.WriteAt(data[:40*bs], 0))
			must[int](t)(h.WriteAt(data[192*bs:], 192*bs))
			ok(t, h.Release())
			if got := must[Attr](t)(v.GetAttr(ino)).Blocks; got != 48*8 {
				t.Fatalf("%d sectors before", got)
			}
			ok(t, v.Fallocate(ino, tc.mode, int64(tc.off), int64(tc.n)))
			want := zeroModel(data, tc.off, tc.n, tc.mode&FallocKeepSize != 0)
			a := must[Attr](t)(v.GetAttr(ino))
			if a.Size != uint64(len(want)) || a.Blocks != uint64(tc.blocks)*8 {
				t.Fatalf("size %d, %d sectors; want %d, %d", a.Size, a.Blocks, len(want), tc.blocks*8)
			}
			if !bytes.Equal(readFile(t, v, ino), want) {
				t.Fatal("content differs from the model")
			}
			if got := mappedBlocks(t, v, ino); got != uint64(tc.blocks) {
				t.Fatalf("SEEK_DATA/SEEK_HOLE see %d blocks of data, want %d", got, tc.blocks)
			}
			if r := reservedBlocks(v); r != 0 {
				t.Fatalf("%d blocks left reserved", r)
			}
		})
	}
}

// TestPunchFullVolume: on a full volume a punch whose range holds whole
// blocks works: they go first, and the edges are rewritten in their
// space. One inside a single block has no space to rewrite it in and
// fails with ENOSPC, changing nothing. Zero range over whole chunks
// works too: what it writes takes the space its punch freed. Without
// block sums: the edges fit in the space of the whole blocks only while
// the punch's own records leave the checkpoint headroom where it was.
func TestPunchFullVolume(t *testing.T) {
	for _, sums := range []bool{true, false} {
		t.Run(fmt.Sprintf("data-sums=%v", sums), func(t *testing.T) {
			dev := device.NewMem(8 << 20)
			ok(t, Mkfs(dev, MkfsOptions{NoDataSums: !sums, NoBlockSums: true}))
			opts := Options{CommitInterval: -1, DirtyLimit: -1}
			v := must[*Volume](t)(Open(dev, opts))
			t.Cleanup(func() { closeAndCheck(t, v, dev, opts) })
			data := pattern(1<<20, 6)
			ino := writeFile(t, v, RootIno, "f", data)
			_, err := fillUntilFull(t, v, "filler", 1<<20)
			wantErrno(t, err, syscall.ENOSPC)
			if st := v.StatFS(); st.BlocksAvail != 0 {
				t.Fatalf("%d blocks available after the fill", st.BlocksAvail)
			}
			wantErrno(t, v.Fallocate(ino, FallocPunchHole|FallocKeepSize, 5000, 100), syscall.ENOSPC)
			if !bytes.Equal(readFile(t, v, ino), data) {
				t.Fatal("a refused punch changed the file")
			}
			ok(t, v.Fallocate(ino, FallocPunchHole|FallocKeepSize, 5000, 20000))
			want := zeroModel(data, 5000, 20000, true)
			if !bytes.Equal(readFile(t, v, ino), want) {
				t.Fatal("content after the punch on a full volume")
			}
			if got := must[Attr](t)(v.GetAttr(ino)).Blocks; got != (256-4)*8 {
				t.Fatalf("%d sectors after the punch, want %d", got, (256-4)*8)
			}
			ok(t, v.Fallocate(ino, FallocZeroRange|FallocKeepSize, 512<<10, 256<<10))
			want = zeroModel(want, 512<<10, 256<<10, true)
			if !bytes.Equal(readFile(t, v, ino), want) {
				t.Fatal("content after zero range on a full volume")
			}
			if r := reservedBlocks(v); r != 0 {
				t.Fatalf("%d blocks left reserved", r)
			}
		})
	}
}

// TestPunchCrash: punches and a zero range committed in steps, the device
// crashed at every flush point in every mode: after recovery the file is
// in one of the states it went through, whole, and Check passes; once the
// last step is synced, it is in the last.
func TestPunchCrash(t *testing.T) {
	t.Parallel()
	const bs = 4096
	c := device.NewCrash(16<<20, 5)
	ok(t, Mkfs(c, MkfsOptions{}))
	v := must[*Volume](t)(Open(c, Options{CommitInterval: -1}))
	data := pattern(400<<10, 8)
	ino := writeFile(t, v, RootIno, "f", data)
	ok(t, v.Sync())
	c.KeepHistory()
	states := [][]byte{data}
	step := func(mode uint32, off, n int) {
		t.Helper()
		ok(t, v.Fallocate(ino, mode, int64(off), int64(n)))
		ok(t, v.Fsync(ino, false))
		states = append(states, zeroModel(states[len(states)-1], off, n, mode&FallocKeepSize != 0))
	}
	step(FallocPunchHole|FallocKeepSize, 3*bs+7, 30*bs)
	// Dirty data, partly inside the next punch.
	h := must[*Handle](t)(v.OpenFile(ino, syscall.O_RDWR))
	more := pattern(100<<10, 9)
	must[int](t)(h.WriteAt(more, 50*bs))
	last := states[len(states)-1]
	states = append(states, append(last[:50*bs:50*bs], append(more, last[50*bs+len(more):]...)...))
	step(FallocPunchHole|FallocKeepSize, 40*bs, 30*bs+100)
	ok(t, h.Release())
	// Whole blocks, growing the file: its punch's state is the last one
	// cut to the old size.
	step(FallocZeroRange, 90*bs, 20*bs)
	states = append(states[:len(states)-1], states[len(states)-1][:400<<10], states[len(states)-1])
	ok(t, v.Close())

	seen := map[int]bool{}
	for p := 0; p <= c.FlushPoints(); p++ {
		for _, mode := range device.CrashModes {
			img := must[*device.Mem](t)(c.CrashAt(p, mode))
			when := fmt.Sprintf("crash at flush %d (%v)", p, mode)
			r, err := Open(img, Options{CommitInterval: -1})
			if err != nil {
				t.Fatalf("%s: open: %v", when, err)
			}
			if !checkOK(t, r, img, when) {
				t.FailNow()
			}
			got := readFile(t, r, ino)
			k := -1
			for i, s := range states {
				if bytes.Equal(got, s) {
					k = i
				}
			}
			if k < 0 {
				t.Fatalf("%s: the file (%d bytes) is in none of the states it went through", when, len(got))
			}
			seen[k] = true
			ok(t, r.Close())
		}
	}
	if !seen[len(states)-1] {
		t.Fatal("no crash image holds the last state, synced before Close")
	}
	t.Logf("states seen: %v of %d", seen, len(states))
}
