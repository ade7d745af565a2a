package fuse

import (
	"bytes"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
	"github.com/smallfs/smallfs/internal/cputime"
)

// newSpliceFS is newTestFS on an image file made without block checksums:
// reads of committed extents are answered as device ranges to splice.
func newSpliceFS(t testing.TB) *testFS {
	t.Helper()
	dev, err := device.Open(filepath.Join(t.TempDir(), "image"), device.Options{Create: true, Size: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() }) // after the volume's close: cleanups run last first
	return newTestFSOn(t, dev, volume.MkfsOptions{NoBlockSums: true}, volume.Options{CommitInterval: -1})
}

// TestSplicedReadKeepsItsBlocks forces the interleaving of a spliced
// READ: the reply's device range is read (Bytes, as a splice that falls
// back or the rings do) only after the file was rewritten and fsynced,
// its directory replaced by one with the same home region, and another
// file written back there. The reply must carry the file's bytes, never
// the other file's.
func TestSplicedReadKeepsItsBlocks(t *testing.T) {
	fs := newSpliceFS(t)
	const size = 16 << 10
	old, other := bytes.Repeat([]byte("old!"), size/4), bytes.Repeat([]byte("OTHR"), size/4)
	var d fuse.EntryOut
	if st := fs.Mkdir(nil, &fuse.MkdirIn{InHeader: header(1), Mode: 0o755}, "d", &d); st != fuse.OK {
		t.Fatal(st)
	}
	a := fs.createIn(t, d.NodeId, "a", old)

	res, st := fs.Read(nil, &fuse.ReadIn{InHeader: header(a.NodeId), Fh: a.Fh, Size: size}, make([]byte, size))
	if st != fuse.OK {
		t.Fatal(st)
	}
	if _, ok := res.(interface{ Seekable() (uintptr, int64, int) }); !ok {
		t.Fatalf("read of a committed extent answered with %T, want a device range", res)
	}
	// The reply waits (a goroutine descheduled before its splice) while
	// the file is rewritten and the frees of its old blocks settle.
	fs.write(t, a.NodeId, a.Fh, bytes.Repeat([]byte("new!"), size/4))
	fs.fsync(t, a.NodeId, a.Fh)
	if st := fs.Rename(nil, &fuse.RenameIn{InHeader: header(d.NodeId), Newdir: 1}, "a", "a"); st != fuse.OK {
		t.Fatal(st)
	}
	h := header(1)
	if st := fs.Rmdir(nil, &h, "d"); st != fuse.OK {
		t.Fatal(st)
	}
	fs.Forget(d.NodeId, 1)
	fs.fsync(t, a.NodeId, a.Fh)
	var e fuse.EntryOut
	if st := fs.Mkdir(nil, &fuse.MkdirIn{InHeader: header(1), Mode: 0o755}, "e", &e); st != fuse.OK {
		t.Fatal(st)
	}
	if e.NodeId != d.NodeId {
		t.Fatalf("directory e got node %d, want d's %d (same home region)", e.NodeId, d.NodeId)
	}
	b := fs.createIn(t, e.NodeId, "b", other)

	got, st := res.Bytes(make([]byte, size))
	res.Done()
	if st != fuse.OK {
		t.Fatal(st)
	}
	if bytes.Equal(got, other) {
		t.Fatal("the READ reply carries another file's bytes: its blocks were reused before the reply was written")
	}
	if !bytes.Equal(got, old) {
		t.Fatal("the READ reply does not carry the file's bytes")
	}
	fs.Release(nil, &fuse.ReleaseIn{InHeader: header(a.NodeId), Fh: a.Fh})
	fs.Release(nil, &fuse.ReleaseIn{InHeader: header(b.NodeId), Fh: b.Fh})
	fs.Forget(a.NodeId, 1)
	fs.Forget(b.NodeId, 1)
	fs.Forget(e.NodeId, 1)
}

// createIn creates name in dir through CREATE, writes data and fsyncs it;
// the file stays open.
func (fs *testFS) createIn(t testing.TB, dir uint64, name string, data []byte) fuse.CreateOut {
	t.Helper()
	var out fuse.CreateOut
	if st := fs.Create(nil, &fuse.CreateIn{InHeader: header(dir), Flags: syscall.O_RDWR, Mode: 0o644}, name, &out); st != fuse.OK {
		t.Fatalf("create %s: %v", name, st)
	}
	fs.write(t, out.NodeId, out.Fh, data)
	fs.fsync(t, out.NodeId, out.Fh)
	return out
}

func (fs *testFS) fsync(t testing.TB, node, fh uint64) {
	t.Helper()
	if st := fs.Fsync(nil, &fuse.FsyncIn{InHeader: header(node), Fh: fh}); st != fuse.OK {
		t.Fatalf("fsync %d: %v", node, st)
	}
}

// TestReadAllocations: a READ answered from a device range allocates
// nothing in the steady state (the replies are pooled), and its Done
// gives the pin back.
func TestReadAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops puts on purpose under -race")
	}
	fs := newSpliceFS(t)
	f := fs.createIn(t, 1, "f", bytes.Repeat([]byte("data"), 4096))
	in := fuse.ReadIn{InHeader: header(f.NodeId), Fh: f.Fh, Size: 4096}
	buf := make([]byte, 4096)
	read := func() {
		res, st := fs.Read(nil, &in, buf)
		if st != fuse.OK || res.Size() != 4096 {
			t.Fatalf("read: %v, %d bytes", st, res.Size())
		}
		res.Done()
	}
	read() // warm the pool
	if n := testing.AllocsPerRun(100, read); n != 0 {
		t.Errorf("READ of a device range: %v allocations, want 0", n)
	}
	if n := fs.vol.PinnedReads(); n != 0 {
		t.Errorf("%d reads pinned after every reply was done", n)
	}
	fs.Release(nil, &fuse.ReleaseIn{InHeader: header(f.NodeId), Fh: f.Fh})
	fs.Forget(f.NodeId, 1)
}

// BenchmarkRead times a READ of 4 KiB of a committed file answered as a
// device range, on all CPUs at once: the request and the reply's Done
// (reply=none: what the adapter adds to a splice, which is the kernel's
// work), and with the range read into the reply buffer as the rings do
// (reply=pread).
func BenchmarkRead(b *testing.B) {
	for _, pread := range []bool{false, true} {
		b.Run(map[bool]string{false: "reply=none", true: "reply=pread"}[pread], func(b *testing.B) {
			fs := newSpliceFS(b)
			f := fs.createIn(b, 1, "f", bytes.Repeat([]byte("data"), 16<<10))
			b.Cleanup(func() {
				fs.Release(nil, &fuse.ReleaseIn{InHeader: header(f.NodeId), Fh: f.Fh})
				fs.Forget(f.NodeId, 1)
			})
			defer cputime.PerOp(b)()
			b.RunParallel(func(pb *testing.PB) {
				in := fuse.ReadIn{InHeader: header(f.NodeId), Fh: f.Fh, Size: 4096}
				buf := make([]byte, 4096)
				for pb.Next() {
					res, st := fs.Read(nil, &in, buf)
					if st != fuse.OK {
						b.Error(st)
						return
					}
					if pread {
						if _, st := res.Bytes(buf); st != fuse.OK {
							b.Error(st)
						}
					}
					res.Done()
					in.Offset = (in.Offset + 4096) % (64 << 10)
				}
			})
		})
	}
}

// TestVerifiedReadIntoReplyBuffer: on a volume with data checksums a READ
// is read and checked into the request's own buffer, allocates nothing in
// the steady state, and its reply gives go-fuse the bytes on both write
// paths: as slices (/dev/fuse's writev) and through Readv, which copies
// into another payload and leaves the bytes alone when the payload is
// the buffer they are in.
func TestVerifiedReadIntoReplyBuffer(t *testing.T) {
	dev, err := device.Open(filepath.Join(t.TempDir(), "image"), device.Options{Create: true, Size: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	fs := newTestFSOn(t, dev, volume.MkfsOptions{}, volume.Options{CommitInterval: -1})
	if !fs.vol.VerifiesReads() {
		t.Fatal("the volume does not verify reads")
	}
	data := bytes.Repeat([]byte("sum!"), 16<<10)
	f := fs.createIn(t, 1, "f", data)
	in := fuse.ReadIn{InHeader: header(f.NodeId), Fh: f.Fh, Offset: 4096, Size: 32 << 10}
	buf := make([]byte, in.Size)
	res, st := fs.Read(nil, &in, buf)
	if st != fuse.OK || res.Size() != len(buf) {
		t.Fatalf("read: %v, %d bytes", st, res.Size())
	}
	sl, ok := res.(interface {
		Slices() ([][]byte, fuse.Status)
	})
	if !ok {
		t.Fatalf("reply %T has no Slices: /dev/fuse would try to splice it", res)
	}
	if s, _ := sl.Slices(); len(s) != 1 || &s[0][0] != &buf[0] || !bytes.Equal(s[0], data[4096:4096+len(buf)]) {
		t.Fatal("the reply's bytes are not the file's, read into the request's buffer")
	}
	rv := res.(interface {
		Readv([][]byte) (int, fuse.Status)
	})
	other := [][]byte{make([]byte, 100), make([]byte, len(buf))}
	if n, st := rv.Readv(other); st != fuse.OK || n != len(buf) || !bytes.Equal(append(other[0], other[1][:n-100]...), data[4096:4096+n]) {
		t.Fatalf("Readv into another payload: %d bytes, %v", n, st)
	}
	buf[0] = 'X'
	if n, st := rv.Readv([][]byte{buf}); st != fuse.OK || n != len(buf) || buf[0] != 'X' {
		t.Fatalf("Readv into its own buffer: %d bytes, %v, first byte %q", n, st, buf[0])
	}
	res.Done()
	if !raceEnabled {
		read := func() {
			res, st := fs.Read(nil, &in, buf)
			if st != fuse.OK || res.Size() != len(buf) {
				t.Fatalf("read: %v, %d bytes", st, res.Size())
			}
			res.Done()
		}
		read()
		if n := testing.AllocsPerRun(100, read); n != 0 {
			t.Errorf("verified READ: %v allocations, want 0", n)
		}
	}
	past := fuse.ReadIn{InHeader: header(f.NodeId), Fh: f.Fh, Offset: uint64(len(data)), Size: 4096}
	if res, st := fs.Read(nil, &past, buf); st != fuse.OK || res.Size() != 0 {
		t.Fatalf("read at the end: %v, %d bytes", st, res.Size())
	}
	fs.Release(nil, &fuse.ReleaseIn{InHeader: header(f.NodeId), Fh: f.Fh})
	fs.Forget(f.NodeId, 1)
}
