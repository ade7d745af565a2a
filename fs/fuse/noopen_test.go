package fuse

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// create makes regular file name in the root, as the kernel does in
// no-open mode (MKNOD), and returns its entry.
func (fs *testFS) create(t testing.TB, name string) fuse.EntryOut {
	t.Helper()
	return fs.mkfile(t, 1, name)
}

func (fs *testFS) write(t testing.TB, node, fh uint64, data []byte) {
	t.Helper()
	w := fuse.WriteIn{InHeader: header(node), Fh: fh}
	if n, st := fs.Write(nil, &w, data); st != fuse.OK || int(n) != len(data) {
		t.Fatalf("write to %d: %d %v", node, n, st)
	}
}

func (fs *testFS) read(t testing.TB, node uint64, size int) string {
	t.Helper()
	buf := make([]byte, size)
	res, st := fs.Read(nil, &fuse.ReadIn{InHeader: header(node), Size: uint32(size)}, buf)
	if st != fuse.OK {
		t.Fatalf("read %d: %v", node, st)
	}
	b, _ := res.Bytes(buf)
	return string(b)
}

// dirty is the data the volume holds not yet written back, in bytes.
func (fs *testFS) dirty() int64 { return fs.vol.DirtyBytes() }

// TestNoOpen: CREATE, OPEN and FLUSH answer ENOSYS without counting as
// errors; MKNOD of a regular file keeps it open as the inode's file, which
// reads and writes by inode share and FORGET writes back and closes; a
// stray RELEASE of handle 0 closes nothing.
func TestNoOpen(t *testing.T) {
	fs := newTestFS(t, func(o *Options) { o.NoOpen = true })
	var co fuse.CreateOut
	if st := fs.Create(nil, &fuse.CreateIn{InHeader: header(1), Flags: syscall.O_RDWR, Mode: 0o644}, "g", &co); st != fuse.ENOSYS {
		t.Errorf("CREATE: %v, want ENOSYS", st)
	}
	c := fs.create(t, "f")
	if listed, _ := fs.inodes.counts(); listed != 1 {
		t.Errorf("MKNOD of a regular file left %d inode files, want 1", listed)
	}
	var o fuse.OpenOut
	if st := fs.Open(nil, &fuse.OpenIn{InHeader: header(c.NodeId)}, &o); st != fuse.ENOSYS {
		t.Errorf("OPEN: %v, want ENOSYS", st)
	}
	if st := fs.Flush(nil, &fuse.FlushIn{InHeader: header(c.NodeId)}); st != fuse.ENOSYS {
		t.Errorf("FLUSH: %v, want ENOSYS", st)
	}
	data := strings.Repeat("x", 4096)
	fs.write(t, c.NodeId, 0, []byte(data))
	if got := fs.read(t, c.NodeId, 8192); got != data {
		t.Errorf("read %d bytes, want the 4096 written", len(got))
	}
	if listed, queued := fs.inodes.counts(); listed != 1 || queued != 1 {
		t.Errorf("open inode files: %d listed, %d queued; want 1, 1", listed, queued)
	}
	if d := fs.dirty(); d != 4096 {
		t.Errorf("%d bytes dirty before any write-back, want 4096", d)
	}
	fs.Release(nil, &fuse.ReleaseIn{InHeader: header(c.NodeId)})
	fs.Forget(c.NodeId, 1)
	if listed, _ := fs.inodes.counts(); listed != 0 {
		t.Errorf("%d inode files listed after FORGET", listed)
	}
	l, _ := fs.reg.Snapshot().Layer(Layer)
	for name, want := range map[string]uint64{
		"op-CREATE": 1, "op-OPEN": 1, "op-FLUSH": 1, "op-RELEASE": 1,
		"err-CREATE": 0, "err-OPEN": 0, "err-FLUSH": 0, "err-RELEASE": 0,
	} {
		if c, _ := l.Counter(name); c.Value != want {
			t.Errorf("%s = %d, want %d", name, c.Value, want)
		}
	}
}

// TestNoOpenReadsKeepNoState: reading an inode nobody wrote opens a
// volume handle for the one request.
func TestNoOpenReadsKeepNoState(t *testing.T) {
	fs := newTestFS(t, func(o *Options) { o.NoOpen = true })
	c := fs.create(t, "f")
	fs.write(t, c.NodeId, 0, []byte("hello"))
	fs.Forget(c.NodeId, 1) // written back and closed
	if got := fs.read(t, c.NodeId, 100); got != "hello" {
		t.Errorf("read %q", got)
	}
	if listed, _ := fs.inodes.counts(); listed != 0 {
		t.Errorf("a read left %d inode files open", listed)
	}
}

// TestNoOpenLimits: past NoOpenFiles files the oldest files are written
// back and closed, the newest kept.
func TestNoOpenLimits(t *testing.T) {
	const keep = 2
	fs := newTestFS(t, func(o *Options) { o.NoOpen, o.NoOpenFiles = true, keep })
	var nodes []uint64
	for i := range 5 {
		n := fs.create(t, fmt.Sprint("f", i)).NodeId
		fs.write(t, n, 0, make([]byte, 4096))
		nodes = append(nodes, n)
	}
	if listed, queued := fs.inodes.counts(); listed != keep || queued != keep {
		t.Errorf("%d listed, %d queued, want %d", listed, queued, keep)
	}
	// The newest are the ones still dirty: FORGET writes each back.
	for i, n := range nodes[len(nodes)-keep:] {
		if d, want := fs.dirty(), int64(keep-i)*4096; d != want {
			t.Errorf("%d bytes dirty, want %d", d, want)
		}
		fs.Forget(n, 1)
	}
	if d := fs.dirty(); d != 0 {
		t.Errorf("%d bytes dirty after FORGET of the newest, want 0", d)
	}
}

func TestNoOpenOptions(t *testing.T) {
	o, err := Options{NoOpen: true}.withDefaults()
	if err != nil || o.NoOpenFiles != 4096 {
		t.Errorf("defaults: %d files, %v", o.NoOpenFiles, err)
	}
	if o.mountOptions(true).ExtraCapabilities&fuse.CAP_ATOMIC_O_TRUNC != 0 {
		t.Error("no-open mode negotiates ATOMIC_O_TRUNC: the kernel would truncate only its cache")
	}
	if o, _ := (Options{}).withDefaults(); o.mountOptions(true).ExtraCapabilities&fuse.CAP_ATOMIC_O_TRUNC == 0 {
		t.Error("ATOMIC_O_TRUNC off by default")
	}
	_, err = Options{NoOpen: true, DropCache: true, FlushOnClose: true, NoOpenFiles: -1}.withDefaults()
	if !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("bad options: %v", err)
	}
	for _, f := range []string{"DropCache", "FlushOnClose", "NoOpenFiles"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
}
