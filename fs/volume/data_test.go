package volume

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"syscall"
	"testing"
)

// writeFile creates name in parent holding data and closes it.
func writeFile(t testing.TB, v *Volume, parent Ino, name string, data []byte) Ino {
	t.Helper()
	a, h, err := v.Create(root, parent, name, 0o644, syscall.O_RDWR)
	ok(t, err)
	if _, err := h.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	ok(t, h.Release())
	return a.Ino
}

// readFile returns the whole content of ino.
func readFile(t testing.TB, v *Volume, ino Ino) []byte {
	t.Helper()
	h := must[*Handle](t)(v.OpenFile(ino, syscall.O_RDONLY))
	defer h.Release()
	a := must[Attr](t)(v.GetAttr(ino))
	buf := make([]byte, a.Size+10)
	n, err := h.ReadAt(buf, 0)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("read of whole file: %v, want io.EOF", err)
	}
	return buf[:n]
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

func TestWriteRead(t *testing.T) {
	for _, size := range []int{0, 1, 100, 128, 129, 4096, 5000, 200 << 10} {
		v := newTestVolume(t, Options{})
		data := pattern(size, 1)
		a, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR)
		ok(t, err)
		must[int](t)(h.WriteAt(data, 0))
		// Dirty data is visible through the handle and to GetAttr.
		buf := make([]byte, size)
		if n, _ := h.ReadAt(buf, 0); n != size || !bytes.Equal(buf, data) {
			t.Fatalf("size %d: dirty read gave %d bytes", size, n)
		}
		if got := must[Attr](t)(v.GetAttr(a.Ino)); got.Size != uint64(size) {
			t.Fatalf("size %d: dirty size %d", size, got.Size)
		}
		// Unwritten data counts in st_blocks at its reserved blocks (du
		// right after a write, as on ext4), except what will be inline.
		want := (uint64(size) + 4095) / 4096 * 8
		if size <= DefaultInlineThreshold {
			want = 0
		}
		if must[Attr](t)(v.GetAttr(a.Ino)).Blocks != want {
			t.Fatalf("size %d: dirty Blocks %d, want %d", size, must[Attr](t)(v.GetAttr(a.Ino)).Blocks, want)
		}
		ok(t, h.Release())
		if got := readFile(t, v, a.Ino); !bytes.Equal(got, data) {
			t.Fatalf("size %d: read back %d bytes, differ", size, len(got))
		}
		n := v.inodes.get(a.Ino)
		x := n.x
		inline := size > 0 && size <= DefaultInlineThreshold
		if !inline && x != nil {
			// An empty file, and one of a single extent, need none.
			t.Fatalf("size %d: the closed file keeps an extension %+v", size, x)
		}
		if x == nil {
			x = &inodeExt{}
		}
		if (x.inline != nil) != inline || n.hasExtents() != (size > DefaultInlineThreshold) {
			t.Fatalf("size %d: inline %d bytes, %d extents", size, len(x.inline), len(n.extents()))
		}
		if x.data != nil {
			t.Fatalf("size %d: closed file keeps its open state", size)
		}
		if want := (uint64(size) + 4095) / 4096 * 8; !inline && must[Attr](t)(v.GetAttr(a.Ino)).Blocks != want {
			t.Fatalf("size %d: Blocks %d, want %d", size, must[Attr](t)(v.GetAttr(a.Ino)).Blocks, want)
		}
	}
}

func TestSparseFile(t *testing.T) {
	v := newTestVolume(t, Options{})
	a, h, err := v.Create(root, RootIno, "sparse", 0o644, syscall.O_RDWR)
	ok(t, err)
	const far = 10 << 20
	must[int](t)(h.WriteAt([]byte("x"), far))
	ok(t, h.Flush())
	attr := must[Attr](t)(v.GetAttr(a.Ino))
	if attr.Size != far+1 || attr.Blocks != 8 {
		t.Fatalf("sparse file attr %+v", attr)
	}
	buf := pattern(8192, 9)
	must[int](t)(h.ReadAt(buf, far-8191))
	if !bytes.Equal(buf[:8191], make([]byte, 8191)) || buf[8191] != 'x' {
		t.Fatal("hole does not read as zeros")
	}
	if off := must[int64](t)(v.Lseek(a.Ino, 0, SeekData)); off != far/4096*4096 {
		t.Fatalf("SEEK_DATA from 0: %d", off)
	}
	if off := must[int64](t)(v.Lseek(a.Ino, 0, SeekHole)); off != 0 {
		t.Fatalf("SEEK_HOLE from 0: %d", off)
	}
	if off := must[int64](t)(v.Lseek(a.Ino, far, SeekHole)); off != far+1 {
		t.Fatalf("SEEK_HOLE from the data: %d", off)
	}
	_, err = v.Lseek(a.Ino, far+1, SeekData)
	wantErrno(t, err, syscall.ENXIO)
	ok(t, h.Release())
}

// TestCopyOnWrite overwrites committed data: the new data goes to new
// blocks and the old ones are freed once the change is durable.
func TestCopyOnWrite(t *testing.T) {
	v := newTestVolume(t, Options{})
	ino := writeFile(t, v, RootIno, "f", pattern(3*64<<10, 1))
	before := v.inodes.get(ino).extents()
	h := must[*Handle](t)(v.OpenFile(ino, syscall.O_RDWR))
	must[int](t)(h.WriteAt([]byte("middle"), 64<<10+5))
	ok(t, h.Release())
	after := v.inodes.get(ino).extents()
	if len(after) < 2 || after[0].Physical != before[0].Physical {
		t.Fatalf("extents before %v, after %v: untouched chunks must stay", before, after)
	}
	for _, e := range after {
		if e.Logical == 16 && e.Physical == before[0].Physical+16 {
			t.Fatalf("rewritten chunk overwrote its blocks in place: %v", after)
		}
	}
	want := pattern(3*64<<10, 1)
	copy(want[64<<10+5:], "middle")
	if !bytes.Equal(readFile(t, v, ino), want) {
		t.Fatal("content after overwrite differs")
	}
	free := v.StatFS().BlocksFree
	ok(t, v.Sync())
	if got := v.StatFS().BlocksFree; got != free {
		t.Fatalf("after commit %d blocks free, %d before: the replaced blocks counted as free already", got, free)
	}
}

// TestTruncate cuts a file inside a block and extends it again: the bytes
// past the cut read as zeros, though the block still holds old data.
func TestTruncate(t *testing.T) {
	v := newTestVolume(t, Options{})
	data := pattern(10000, 3)
	ino := writeFile(t, v, RootIno, "f", data)
	must[Attr](t)(v.SetAttr(root, ino, SetAttrIn{Valid: SetSize, Size: 5000}))
	if got := readFile(t, v, ino); !bytes.Equal(got, data[:5000]) {
		t.Fatal("truncated content differs")
	}
	must[Attr](t)(v.SetAttr(root, ino, SetAttrIn{Valid: SetSize, Size: 9000}))
	want := append(append([]byte{}, data[:5000]...), make([]byte, 4000)...)
	if got := readFile(t, v, ino); !bytes.Equal(got, want) {
		t.Fatal("bytes past a truncation do not read as zeros")
	}
	// Cut to inline size and back: the data moves between blocks and inline.
	must[Attr](t)(v.SetAttr(root, ino, SetAttrIn{Valid: SetSize, Size: 50}))
	if n := v.inodes.get(ino); n.x.inline == nil || n.hasExtents() {
		t.Fatal("small file not stored inline")
	}
	h := must[*Handle](t)(v.OpenFile(ino, syscall.O_WRONLY))
	must[int](t)(h.WriteAt([]byte("tail"), 6000))
	ok(t, h.Release())
	want = make([]byte, 6004)
	copy(want, data[:50])
	copy(want[6000:], "tail")
	if got := readFile(t, v, ino); !bytes.Equal(got, want) {
		t.Fatal("inline file grown into blocks differs")
	}
	// O_TRUNC empties the file.
	ok(t, must[*Handle](t)(v.OpenFile(ino, syscall.O_WRONLY|syscall.O_TRUNC)).Release())
	if a := must[Attr](t)(v.GetAttr(ino)); a.Size != 0 || a.Blocks != 0 {
		t.Fatalf("after O_TRUNC: %+v", a)
	}
}

func TestFallocate(t *testing.T) {
	v := newTestVolume(t, Options{})
	ino := writeFile(t, v, RootIno, "f", []byte("abc"))
	ok(t, v.Fallocate(ino, 0, 8192, 8192))
	a := must[Attr](t)(v.GetAttr(ino))
	if a.Size != 16384 || a.Blocks != 4*8 {
		t.Fatalf("after fallocate: %+v", a)
	}
	want := make([]byte, 16384)
	copy(want, "abc")
	if !bytes.Equal(readFile(t, v, ino), want) {
		t.Fatal("fallocated range does not read as zeros")
	}
	ok(t, v.Fallocate(ino, FallocKeepSize, 0, 1<<20))
	if a := must[Attr](t)(v.GetAttr(ino)); a.Size != 16384 {
		t.Fatalf("KEEP_SIZE changed the size to %d", a.Size)
	}
	wantErrno(t, v.Fallocate(ino, 2, 0, 10), syscall.EOPNOTSUPP)
	wantErrno(t, v.Fallocate(ino, 0, 0, 0), syscall.EINVAL)
	wantErrno(t, v.Fallocate(RootIno, 0, 0, 10), syscall.EISDIR)
}

func TestHandles(t *testing.T) {
	v := newTestVolume(t, Options{})
	a, w, err := v.Create(root, RootIno, "f", 0o644, syscall.O_WRONLY)
	ok(t, err)
	r := must[*Handle](t)(v.OpenFile(a.Ino, syscall.O_RDONLY))
	must[int](t)(w.WriteAt([]byte("shared"), 0))
	buf := make([]byte, 6)
	if n, _ := r.ReadAt(buf, 0); n != 6 || string(buf) != "shared" {
		t.Fatalf("other handle reads %q", buf[:n])
	}
	_, err = r.WriteAt([]byte("x"), 0)
	wantErrno(t, err, syscall.EBADF)
	_, err = w.ReadAt(buf, 0)
	wantErrno(t, err, syscall.EBADF)
	ok(t, w.Release())
	wantErrno(t, w.Release(), syscall.EBADF)
	_, err = w.WriteAt([]byte("x"), 0)
	wantErrno(t, err, syscall.EBADF)
	ok(t, r.Release())

	_, _, err = v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR|syscall.O_EXCL)
	wantErrno(t, err, syscall.EEXIST)
	_, err = v.OpenFile(RootIno, syscall.O_RDONLY)
	wantErrno(t, err, syscall.EISDIR)
	s := must[Attr](t)(v.Symlink(root, RootIno, "s", "f"))
	_, err = v.OpenFile(s.Ino, syscall.O_RDONLY)
	wantErrno(t, err, syscall.ELOOP)
}

// TestUnlinkOpenFile removes a file that is open: it stays usable through
// the handle and is freed with its blocks at the last release.
func TestUnlinkOpenFile(t *testing.T) {
	v := newTestVolume(t, Options{})
	empty := v.StatFS().BlocksFree
	ino := writeFile(t, v, RootIno, "f", pattern(20000, 5))
	h := must[*Handle](t)(v.OpenFile(ino, syscall.O_RDWR))
	ok(t, v.Unlink(root, RootIno, "f"))
	must[int](t)(h.WriteAt([]byte("still here"), 100))
	buf := make([]byte, 10)
	if n, _ := h.ReadAt(buf, 100); string(buf[:n]) != "still here" {
		t.Fatalf("unlinked file reads %q", buf[:n])
	}
	ok(t, h.Release())
	_, err := v.GetAttr(ino)
	wantErrno(t, err, syscall.ENOENT)
	ok(t, v.Sync())
	if free := v.StatFS().BlocksFree; free != empty {
		t.Fatalf("%d blocks free after the only file went, %d before it came", free, empty)
	}
}

// TestReadPlan: committed data in one extent is planned as a device
// range, on a volume without block checksums. On one with them a range
// read later could not be verified: the plan is the bytes, read and
// checked.
func TestReadPlan(t *testing.T) {
	sv := newTestVolume(t, Options{})
	f := writeFile(t, sv, RootIno, "f", pattern(10000, 7))
	hs := must[*Handle](t)(sv.OpenFile(f, syscall.O_RDONLY))
	defer hs.Release()
	buf := make([]byte, 5000)
	if p := must[ReadPlan](t)(hs.ReadPlan(100, buf)); !bytes.Equal(p.Bytes, pattern(10000, 7)[100:5100]) {
		t.Fatalf("plan on a volume with block checksums: %d bytes at device offset %d", len(p.Bytes), p.DevOff)
	} else if &p.Bytes[0] != &buf[0] {
		t.Fatal("the plan's bytes are not in the buffer given")
	}

	v := newTestVolumeSizeMkfs(t, 64<<20, Options{}, MkfsOptions{NoBlockSums: true})
	data := pattern(10000, 7)
	ino := writeFile(t, v, RootIno, "f", data)
	h := must[*Handle](t)(v.OpenFile(ino, syscall.O_RDWR))
	defer h.Release()
	p := must[ReadPlan](t)(h.ReadPlan(100, make([]byte, 5000)))
	if p.Bytes != nil || p.Len != 5000 {
		t.Fatalf("plan of committed data %+v", p)
	}
	got := make([]byte, p.Len)
	must[int](t)(v.dev.ReadAt(got, p.DevOff))
	if !bytes.Equal(got, data[100:5100]) {
		t.Fatal("device range of the plan holds other bytes")
	}
	p.Done()
	must[int](t)(h.WriteAt([]byte("new"), 200))
	p = must[ReadPlan](t)(h.ReadPlan(9000, make([]byte, 5000)))
	if p.Len != 0 || len(p.Bytes) != 1000 || !bytes.Equal(p.Bytes[:3], data[9000:9003]) {
		t.Fatalf("plan over dirty data at the end: len %d, %d bytes", p.Len, len(p.Bytes))
	}
}

// TestDirectoryLocality checks that files of one directory are placed one
// after another from the directory's cursor.
func TestDirectoryLocality(t *testing.T) {
	v := newTestVolume(t, Options{})
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755))
	var prev uint64
	for i := range 10 {
		ino := writeFile(t, v, d.Ino, "f"+string(rune('a'+i)), pattern(4096, byte(i)))
		e := v.inodes.get(ino).extents()
		if len(e) != 1 || i > 0 && e[0].Physical != prev {
			t.Fatalf("file %d placed at %v, want block %d", i, e, prev)
		}
		prev = e[0].Physical + e[0].Len
	}
}

// TestNoSpace fills a small volume: writes fail with ENOSPC, the volume
// stays consistent, and writes succeed again after deletes.
func TestNoSpace(t *testing.T) {
	v := newTestVolumeSize(t, 1<<20, Options{})
	data := pattern(100<<10, 1)
	var files []string
	var err error
	for i := 0; err == nil; i++ {
		name := "f" + strconv.Itoa(i)
		_, h, cerr := v.Create(root, RootIno, name, 0o644, syscall.O_WRONLY)
		ok(t, cerr)
		files = append(files, name)
		_, err = h.WriteAt(data, 0)
		ok(t, h.Release())
	}
	wantErrno(t, err, syscall.ENOSPC)
	if p := v.Check(); len(p) > 0 {
		t.Fatalf("after ENOSPC: %v", p)
	}
	if free := v.StatFS().BlocksFree; free >= 25 {
		t.Fatalf("ENOSPC with %d blocks free", free)
	}
	for _, name := range files[:3] {
		ok(t, v.Unlink(root, RootIno, name))
	}
	// The frees wait for a commit; the write commits and retries.
	ino := writeFile(t, v, RootIno, "again", data)
	if !bytes.Equal(readFile(t, v, ino), data) {
		t.Fatal("file written after ENOSPC differs")
	}
}

func TestModelData(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := newTestVolume(t, Options{DirtyThreshold: 256 << 10})
	a, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR)
	ok(t, err)
	var model []byte
	for step := range 2000 {
		switch op := rng.IntN(10); {
		case op < 5: // write
			off := rng.IntN(600 << 10)
			p := pattern(rng.IntN(20000)+1, byte(step))
			must[int](t)(h.WriteAt(p, int64(off)))
			if end := off + len(p); end > len(model) {
				model = append(model, make([]byte, end-len(model))...)
			}
			copy(model[off:], p)
		case op < 7: // truncate
			size := rng.IntN(700 << 10)
			if rng.IntN(3) == 0 {
				size = rng.IntN(300)
			}
			must[Attr](t)(v.SetAttr(root, a.Ino, SetAttrIn{Valid: SetSize, Size: uint64(size)}))
			if size < len(model) {
				model = model[:size]
			} else {
				model = append(model, make([]byte, size-len(model))...)
			}
		case op < 8:
			ok(t, h.Flush())
		case op < 9: // read a range
			off := rng.IntN(len(model) + 1)
			buf := make([]byte, rng.IntN(70000))
			n, err := h.ReadAt(buf, int64(off))
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			if want := model[off:min(len(model), off+len(buf))]; !bytes.Equal(buf[:n], want) {
				t.Fatalf("step %d: read at %d of %d bytes differs", step, off, len(buf))
			}
		default:
			ok(t, v.Sync())
		}
	}
	ok(t, h.Release())
	if !bytes.Equal(readFile(t, v, a.Ino), model) {
		t.Fatal("final content differs from the model")
	}
}

// TestDeleteFreesAtOnce: statfs counts a delete's blocks as free as soon
// as the delete returns, before its commit (as ext4 does): a write that
// needs them commits first.
func TestDeleteFreesAtOnce(t *testing.T) {
	v := newTestVolume(t, Options{CommitInterval: -1})
	empty := v.StatFS().BlocksFree
	writeFile(t, v, RootIno, "f", pattern(40000, 9))
	ok(t, v.Sync())
	if v.StatFS().BlocksFree >= empty {
		t.Fatal("a 40000-byte file took no blocks")
	}
	ok(t, v.Unlink(root, RootIno, "f"))
	if free := v.StatFS().BlocksFree; free != empty {
		t.Fatalf("%d blocks free right after the delete, %d before the file came", free, empty)
	}
}

// TestNewChunkZeroedPastWrite: a new chunk a write covers from its start
// is not zeroed where the write lands, so a buffer the pool hands back
// with an old file's bytes must still be zero past them: growing the file
// afterwards, in memory and after write-back, reads zeros there.
func TestNewChunkZeroedPastWrite(t *testing.T) {
	v := newTestVolume(t, Options{InlineThreshold: -1})
	sizes := []int{1, 4096, 10000, 65535}
	for i := range 20 { // fill the pool's buffers of each class with non-zero bytes
		for _, size := range sizes {
			writeFile(t, v, RootIno, "old"+strconv.Itoa(i)+"-"+strconv.Itoa(size), pattern(size, 0xff))
		}
	}
	for _, size := range sizes {
		a, h, err := v.Create(root, RootIno, "f"+strconv.Itoa(size), 0o644, syscall.O_RDWR)
		ok(t, err)
		data := pattern(size, 5)
		must[int](t)(h.WriteAt(data, 0))
		must[Attr](t)(v.SetAttr(root, a.Ino, SetAttrIn{Valid: SetSize, Size: 200 << 10}))
		want := append(data, make([]byte, 200<<10-size)...)
		if !bytes.Equal(readFile(t, v, a.Ino), want) {
			t.Fatalf("%d bytes written then grown: the rest does not read as zeros", size)
		}
		// Over committed data too: the write covers the chunk's start,
		// the rest of the chunk is loaded.
		must[int](t)(h.WriteAt(pattern(size/2+1, 6), 0))
		copy(want, pattern(size/2+1, 6))
		ok(t, h.Release())
		if !bytes.Equal(readFile(t, v, a.Ino), want) {
			t.Fatalf("%d bytes: an overwrite from the chunk's start lost the rest of the chunk", size)
		}
	}
}

// TestReadsDoNotAllocate: a read of committed data that reaches the
// device, verified or spliced, allocates nothing in the steady state:
// ReadAt and a plan's bytes go into the caller's buffer, a plan's range
// is pinned without an allocation, and a range that does not cover whole
// blocks is read through a pooled buffer.
func TestReadsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops puts on purpose under -race")
	}
	for _, sums := range []bool{true, false} {
		v := newTestVolumeSizeMkfs(t, 64<<20, Options{CommitInterval: -1}, MkfsOptions{NoBlockSums: !sums})
		for _, size := range []int{4 << 10, 64 << 10, 1 << 20, 5000} {
			ino := writeFile(t, v, RootIno, "f"+strconv.Itoa(size), pattern(size, 3))
			ok(t, v.Sync())
			h := must[*Handle](t)(v.OpenFile(ino, syscall.O_RDONLY))
			buf := make([]byte, size)
			for name, read := range map[string]func(){
				"ReadAt":       func() { must[int](t)(h.ReadAt(buf, 0)) },
				"ReadAt, part": func() { must[int](t)(h.ReadAt(buf[:100], 10)) },
				"ReadPlan": func() {
					p := must[ReadPlan](t)(h.ReadPlan(0, buf))
					p.Done()
				},
			} {
				read() // warm the pools
				if n := testing.AllocsPerRun(20, read); n != 0 {
					t.Errorf("checksums %v, %d-byte file, %s: %v allocations, want 0", sums, size, name, n)
				}
			}
			ok(t, h.Release())
		}
	}
}
