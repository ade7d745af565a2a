package fuse

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

// These tests drive the adapter's RawFileSystem methods directly, on a
// volume in memory, without a kernel: what a request turns into and what
// its reply carries. tests/ covers the same through real mounts.

type testFS struct {
	*fileSystem
	vol  *volume.Volume
	reg  *accounting.Registry
	errs *logCount
}

// logCount counts error-level log entries.
type logCount struct {
	mu sync.Mutex
	n  int
}

func (c *logCount) Levels() []logrus.Level { return []logrus.Level{logrus.ErrorLevel} }
func (c *logCount) Fire(*logrus.Entry) error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return nil
}
func (c *logCount) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func newTestFS(t testing.TB, configure ...func(*Options)) *testFS {
	t.Helper()
	return newTestFSOn(t, device.NewMem(64<<20), volume.MkfsOptions{}, volume.Options{}, configure...)
}

// newTestFSOn is newTestFS on dev, made with mo and opened with vo (lookups
// tracked, accounting of its own).
func newTestFSOn(t testing.TB, dev device.Device, mo volume.MkfsOptions, vo volume.Options, configure ...func(*Options)) *testFS {
	t.Helper()
	if err := volume.Mkfs(dev, mo); err != nil {
		t.Fatal(err)
	}
	reg := accounting.NewRegistry()
	vo.TrackLookups, vo.Accounting = true, reg
	vol, err := volume.Open(dev, vo)
	if err != nil {
		t.Fatal(err)
	}
	errs := &logCount{}
	log := logrus.New()
	log.SetOutput(io.Discard)
	log.AddHook(errs)
	opts := Options{Accounting: reg, Logger: log}
	for _, c := range configure {
		c(&opts)
	}
	o, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	fs := &testFS{fileSystem: newFileSystem(vol, dev, o), vol: vol, reg: reg, errs: errs}
	t.Cleanup(func() {
		fs.OnUnmount()
		if n := vol.PinnedReads(); n != 0 {
			t.Errorf("%d READ replies not done", n)
		}
		for _, p := range vol.Check() {
			t.Errorf("check: %s", p)
		}
		if err := vol.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return fs
}

// entryOutSize is the attribute block before each READDIRPLUS entry.
const entryOutSize = int(unsafe.Sizeof(fuse.EntryOut{}))

func header(node uint64) fuse.InHeader {
	return fuse.InHeader{NodeId: node, Caller: fuse.Caller{Owner: fuse.Owner{Uid: 0, Gid: 0}}}
}

// mkfile creates a regular file through MKNOD and returns its entry.
// openFlags opens node with flags and returns the reply's open flags; the
// file stays in the table (unmount releases it).
func (fs *testFS) openFlags(t testing.TB, node uint64, flags uint32) uint32 {
	t.Helper()
	var o fuse.OpenOut
	if st := fs.Open(nil, &fuse.OpenIn{InHeader: header(node), Flags: flags}, &o); st != fuse.OK {
		t.Fatal(st)
	}
	return o.OpenFlags
}

func (fs *testFS) mkfile(t testing.TB, parent uint64, name string) fuse.EntryOut {
	t.Helper()
	var out fuse.EntryOut
	in := fuse.MknodIn{InHeader: header(parent), Mode: syscall.S_IFREG | 0o644}
	if st := fs.Mknod(nil, &in, name, &out); st != fuse.OK {
		t.Fatalf("mknod %s: %v", name, st)
	}
	return out
}

func TestStatus(t *testing.T) {
	fs := newTestFS(t)
	for _, c := range []struct {
		err    error
		want   fuse.Status
		logged bool
	}{
		{nil, fuse.OK, false},
		{syscall.ENOENT, fuse.ENOENT, false},
		{volume.ErrNotEmpty, fuse.Status(syscall.ENOTEMPTY), false},
		{fmt.Errorf("deep: %w", &iofs.PathError{Op: "rename", Path: "x", Err: volume.ErrExist}), fuse.Status(syscall.EEXIST), false},
		{fmt.Errorf("device: %w", syscall.EIO), fuse.EIO, true},
		{volume.ErrCorrupt, fuse.EIO, true},
		{errors.New("no errno at all"), fuse.EIO, true},
	} {
		before := fs.errs.count()
		if got := fs.status(opLookup, 1, c.err); got != c.want {
			t.Errorf("status(%v) = %v, want %v", c.err, got, c.want)
		}
		if logged := fs.errs.count() > before; logged != c.logged {
			t.Errorf("status(%v): logged %v, want %v", c.err, logged, c.logged)
		}
	}
}

func TestLookupReplies(t *testing.T) {
	fs := newTestFS(t)
	f := fs.mkfile(t, 1, "f")
	var out fuse.EntryOut
	h := header(1)
	if st := fs.Lookup(nil, &h, "f", &out); st != fuse.OK {
		t.Fatal(st)
	}
	if out.NodeId != f.NodeId || out.NodeId < 2 || out.Generation == 0 {
		t.Errorf("entry: node %d gen %d, want node %d and a generation", out.NodeId, out.Generation, f.NodeId)
	}
	if out.EntryTimeout() != time.Hour || out.AttrTimeout() != time.Hour {
		t.Errorf("timeouts %v %v, want the 1h defaults", out.EntryTimeout(), out.AttrTimeout())
	}
	if out.Mode != syscall.S_IFREG|0o644 || out.Nlink != 1 || out.Ino != out.NodeId {
		t.Errorf("attr: %+v", out.Attr)
	}
	// A missing name is a negative entry the kernel may cache, not an error.
	out = fuse.EntryOut{}
	if st := fs.Lookup(nil, &h, "missing", &out); st != fuse.OK || out.NodeId != 0 || out.EntryTimeout() != time.Hour {
		t.Errorf("negative lookup: %v node %d timeout %v", st, out.NodeId, out.EntryTimeout())
	}
	fs.vol.Forget(volume.Ino(f.NodeId), 2)

	noNeg := newTestFS(t, func(o *Options) { o.NegativeTimeout = -1 })
	if st := noNeg.Lookup(nil, &h, "missing", &out); st != fuse.ENOENT {
		t.Errorf("lookup without negative caching: %v", st)
	}
}

// TestSetAttrReplyTimeout: go-fuse leaves SETATTR's attribute lifetime at
// zero; the adapter sets it, so a stat after chmod needs no GETATTR.
func TestSetAttrReplyTimeout(t *testing.T) {
	fs := newTestFS(t)
	f := fs.mkfile(t, 1, "f")
	in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: header(f.NodeId), Valid: fuse.FATTR_MODE, Mode: 0o600}}
	var out fuse.AttrOut
	if st := fs.SetAttr(nil, &in, &out); st != fuse.OK {
		t.Fatal(st)
	}
	if out.Timeout() != time.Hour || out.Mode != syscall.S_IFREG|0o600 {
		t.Errorf("setattr reply: timeout %v mode %o", out.Timeout(), out.Mode)
	}
}

func TestSetAttrIn(t *testing.T) {
	in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{
		Valid: fuse.FATTR_MODE | fuse.FATTR_UID | fuse.FATTR_GID | fuse.FATTR_SIZE | fuse.FATTR_ATIME |
			fuse.FATTR_ATIME_NOW | fuse.FATTR_MTIME | fuse.FATTR_FH | fuse.FATTR_LOCKOWNER,
		Mode: syscall.S_IFREG | 0o4755, Owner: fuse.Owner{Uid: 7, Gid: 8}, Size: 99,
		Mtime: 12, Mtimensec: 34,
	}}
	got := setAttrIn(&in)
	want := volume.SetAttrIn{
		Valid: volume.SetMode | volume.SetUID | volume.SetGID | volume.SetSize | volume.SetAtimeNow | volume.SetMtime,
		Mode:  0o4755, UID: 7, GID: 8, Size: 99, Mtime: 12_000_000_034,
	}
	if got != want {
		t.Errorf("setAttrIn:\n got %+v\nwant %+v", got, want)
	}
}

func TestTimes(t *testing.T) {
	for _, ns := range []int64{0, 1, 999_999_999, 1_000_000_000, 1_700_000_000_123_456_789, -1, -1_000_000_000, -1_500_000_000} {
		sec, nsec := splitTime(ns)
		if nsec >= 1e9 {
			t.Errorf("splitTime(%d): nsec %d", ns, nsec)
		}
		if back := joinTime(sec, nsec); back != ns {
			t.Errorf("joinTime(splitTime(%d)) = %d", ns, back)
		}
	}
}

func TestPermitted(t *testing.T) {
	file := volume.Attr{Mode: syscall.S_IFREG | 0o640, UID: 10, GID: 20}
	for _, c := range []struct {
		uid, gid, mask uint32
		want           bool
	}{
		{10, 99, 6, true},  // owner rw
		{10, 99, 1, false}, // owner x
		{11, 20, 4, true},  // group r
		{11, 20, 2, false}, // group w
		{11, 21, 4, false}, // other
		{0, 0, 6, true},    // root rw
		{0, 0, 1, false},   // root x without any x bit
	} {
		if got := permitted(&file, c.uid, c.gid, c.mask); got != c.want {
			t.Errorf("permitted(uid %d gid %d mask %o) = %v", c.uid, c.gid, c.mask, got)
		}
	}
}

func TestHandleTable(t *testing.T) {
	var tab handleTable[volume.Handle]
	a, b := new(volume.Handle), new(volume.Handle)
	fa, fb := tab.add(a), tab.add(b)
	if fa == 0 || fb == 0 || fa == fb || tab.get(fa) != a || tab.get(fb) != b {
		t.Fatalf("add: %d %d", fa, fb)
	}
	if tab.get(0) != nil || tab.get(99) != nil || tab.remove(99) != nil {
		t.Error("unknown handles resolve")
	}
	if tab.remove(fa) != a || tab.get(fa) != nil || tab.remove(fa) != nil {
		t.Error("remove")
	}
	if fc := tab.add(a); fc != fa {
		t.Errorf("freed slot not reused: %d, want %d", fc, fa)
	}
	n := 0
	for range tab.drain() {
		n++
	}
	if n != 2 || tab.get(fa) != nil {
		t.Errorf("drain yielded %d", n)
	}
}

// listing reads a directory through READDIR or READDIRPLUS in requests of
// size bytes, as the kernel does, and returns the names and node IDs.
func (fs *testFS) listing(t testing.TB, dir uint64, size int, plus bool) (names []string, nodes []uint64) {
	t.Helper()
	var off uint64
	for {
		buf := make([]byte, size)
		out := fuse.NewDirEntryList(buf, off)
		in := fuse.ReadIn{InHeader: header(dir), Offset: off, Size: uint32(size)}
		var st fuse.Status
		if plus {
			st = fs.ReadDirPlus(nil, &in, out)
		} else {
			st = fs.ReadDir(nil, &in, out)
		}
		if st != fuse.OK {
			t.Fatal(st)
		}
		b := out.Bytes()
		if len(b) == 0 {
			return names, nodes
		}
		for len(b) > 0 {
			var node uint64
			if plus {
				node = (*fuse.EntryOut)(unsafe.Pointer(&b[0])).NodeId
				b = b[entryOutSize:]
			}
			var name string
			name, off, b = parseDirent(b)
			names = append(names, name)
			nodes = append(nodes, node)
		}
	}
}

// parseDirent decodes one entry of the FUSE wire format (ino, off,
// namelen, type, name padded to 8 bytes) and returns the rest.
func parseDirent(b []byte) (name string, off uint64, rest []byte) {
	off = binary.NativeEndian.Uint64(b[8:])
	n := int(binary.NativeEndian.Uint32(b[16:]))
	name = string(b[24 : 24+n])
	return name, off, b[(24+n+7)&^7:]
}

func TestDotDot(t *testing.T) {
	fs := newTestFS(t)
	var sub fuse.EntryOut
	in := fuse.MkdirIn{InHeader: header(1), Mode: 0o755}
	if st := fs.Mkdir(nil, &in, "sub", &sub); st != fuse.OK {
		t.Fatal(st)
	}
	for dir, parent := range map[uint64]uint64{1: 1, sub.NodeId: 1} {
		buf := make([]byte, 4096)
		out := fuse.NewDirEntryList(buf, 0)
		r := fuse.ReadIn{InHeader: header(dir), Size: 4096}
		if st := fs.ReadDir(nil, &r, out); st != fuse.OK {
			t.Fatal(st)
		}
		b := out.Bytes()
		_, _, b = parseDirent(b)
		if name, ino := string(b[24:26]), binary.NativeEndian.Uint64(b); name != ".." || ino != parent {
			t.Errorf("directory %d: second entry %q ino %d, want .. ino %d", dir, name, ino, parent)
		}
	}
	fs.Forget(sub.NodeId, 1)
}

// TestReadWrite goes through a file's life by handle: CREATE, WRITE,
// READ (from memory, as on a device without a descriptor), FLUSH,
// RELEASE.
func TestReadWrite(t *testing.T) {
	fs := newTestFS(t, func(o *Options) { o.FlushOnClose = true })
	var out fuse.CreateOut
	in := fuse.CreateIn{InHeader: header(1), Flags: syscall.O_RDWR, Mode: 0o644}
	if st := fs.Create(nil, &in, "f", &out); st != fuse.OK {
		t.Fatal(st)
	}
	if out.OpenFlags&fuse.FOPEN_KEEP_CACHE == 0 || out.OpenFlags&fuse.FOPEN_NOFLUSH != 0 {
		t.Errorf("open flags of a read-write create under FlushOnClose: %#x", out.OpenFlags)
	}
	w := fuse.WriteIn{InHeader: header(out.NodeId), Fh: out.Fh, Offset: 3}
	if n, st := fs.Write(nil, &w, []byte("hello")); st != fuse.OK || n != 5 {
		t.Fatalf("write: %d %v", n, st)
	}
	r := fuse.ReadIn{InHeader: header(out.NodeId), Fh: out.Fh, Size: 100}
	res, st := fs.Read(nil, &r, make([]byte, 100))
	if st != fuse.OK {
		t.Fatal(st)
	}
	got, _ := res.Bytes(make([]byte, 100))
	if string(got) != "\x00\x00\x00hello" {
		t.Errorf("read %q", got)
	}
	if st := fs.Flush(nil, &fuse.FlushIn{InHeader: header(out.NodeId), Fh: out.Fh}); st != fuse.OK {
		t.Errorf("flush: %v", st)
	}
	fs.Release(nil, &fuse.ReleaseIn{InHeader: header(out.NodeId), Fh: out.Fh})
	if _, st := fs.Read(nil, &r, make([]byte, 100)); st != fuse.Status(syscall.EBADF) {
		t.Errorf("read after release: %v, want EBADF", st)
	}
	if f := fs.openFlags(t, out.NodeId, syscall.O_RDONLY); f&fuse.FOPEN_NOFLUSH == 0 {
		t.Errorf("read-only open without FOPEN_NOFLUSH: %#x", f)
	}
	fs.Forget(out.NodeId, 1)
	// The open file is still in the table: unmount releases it.
}

func TestReadDirResumes(t *testing.T) {
	fs := newTestFS(t)
	const n = 300
	for i := range n {
		fs.mkfile(t, 1, fmt.Sprintf("file-%03d", i))
	}
	for _, plus := range []bool{false, true} {
		names, nodes := fs.listing(t, 1, 512, plus)
		if len(names) != n+2 || names[0] != "." || names[1] != ".." {
			t.Fatalf("plus=%v: %d names starting %q", plus, len(names), names[:min(3, len(names))])
		}
		for i := range n {
			if want := fmt.Sprintf("file-%03d", i); names[i+2] != want {
				t.Fatalf("plus=%v: entry %d is %q, want %q", plus, i+2, names[i+2], want)
			}
		}
		if plus {
			if nodes[0] != 0 || nodes[1] != 0 {
				t.Errorf("READDIRPLUS gave . and .. node IDs %d %d; the kernel takes no reference for them", nodes[0], nodes[1])
			}
			for i, node := range nodes[2:] {
				if node == 0 {
					t.Errorf("entry %d without attributes", i)
				}
				fs.Forget(node, 1) // the kernel's reference
			}
		}
	}
}

// TestReadDirPlusReferences: each entry a READDIRPLUS reply carries is one
// kernel reference, and an entry that did not fit is none.
func TestReadDirPlusReferences(t *testing.T) {
	fs := newTestFS(t)
	var inos []uint64
	for i := range 40 {
		e := fs.mkfile(t, 1, fmt.Sprintf("f%02d", i))
		fs.Forget(e.NodeId, 1) // drop MKNOD's reference
		inos = append(inos, e.NodeId)
	}
	// One small request: a few entries fit, the rest wait.
	buf := make([]byte, 1024)
	out := fuse.NewDirEntryList(buf, 0)
	in := fuse.ReadIn{InHeader: header(1), Size: 1024}
	if st := fs.ReadDirPlus(nil, &in, out); st != fuse.OK {
		t.Fatal(st)
	}
	var listed int
	for b := out.Bytes(); len(b) > 0; listed++ {
		_, _, b = parseDirent(b[entryOutSize:])
	}
	listed -= 2 // "." and ".."
	if listed < 1 || listed >= len(inos) {
		t.Fatalf("%d entries in 1 KiB", listed)
	}
	// Unlink everything: listed inodes live on (nlink 0) until forgotten,
	// the others go at once.
	for i := range inos {
		h := header(1)
		if st := fs.Unlink(nil, &h, fmt.Sprintf("f%02d", i)); st != fuse.OK {
			t.Fatal(st)
		}
	}
	for i, ino := range inos {
		_, err := fs.vol.GetAttr(volume.Ino(ino))
		if alive := err == nil; alive != (i < listed) {
			t.Errorf("inode %d (entry %d of %d listed): alive %v", ino, i, listed, alive)
		}
	}
	for _, ino := range inos[:listed] {
		fs.Forget(ino, 1)
		if _, err := fs.vol.GetAttr(volume.Ino(ino)); err == nil {
			t.Errorf("inode %d alive after its last FORGET", ino)
		}
	}
}

// readDirBatch is one READDIR on handle fh from off, in a request of size
// bytes; it returns the names and the offset to continue from (off when
// the listing is at its end).
func (fs *testFS) readDirBatch(t testing.TB, fh, off uint64, size int) ([]string, uint64) {
	t.Helper()
	out := fuse.NewDirEntryList(make([]byte, size), off)
	in := fuse.ReadIn{InHeader: header(1), Fh: fh, Offset: off, Size: uint32(size)}
	if st := fs.ReadDir(nil, &in, out); st != fuse.OK {
		t.Fatal(st)
	}
	var names []string
	for b := out.Bytes(); len(b) > 0; {
		var name string
		name, off, b = parseDirent(b)
		names = append(names, name)
	}
	return names, off
}

// TestListingEndsWhereItStarted: an open directory lists the entries it
// had when its listing started, each once, whatever is added meanwhile;
// a name removed and added again behind the reader is not listed again,
// and one removed and added again ahead of it is a new entry, left out
// too. A listing restarted from offset 0 (rewinddir) shows everything.
func TestListingEndsWhereItStarted(t *testing.T) {
	fs := newTestFS(t)
	name := func(i int) string { return fmt.Sprintf("f%02d", i) }
	churn := func(n string) {
		h := header(1)
		if st := fs.Unlink(nil, &h, n); st != fuse.OK {
			t.Fatal(st)
		}
		fs.Forget(fs.mkfile(t, 1, n).NodeId, 1)
	}
	for i := range 40 {
		fs.Forget(fs.mkfile(t, 1, name(i)).NodeId, 1)
	}
	var o fuse.OpenOut
	if st := fs.OpenDir(nil, &fuse.OpenIn{InHeader: header(1)}, &o); st != fuse.OK || o.Fh == 0 {
		t.Fatalf("OPENDIR: %v, handle %d", st, o.Fh)
	}
	seen := map[string]int{}
	first, off := fs.readDirBatch(t, o.Fh, 0, 256)
	if len(first) < 4 || len(first) > 20 {
		t.Fatalf("first batch of 256 bytes: %d entries", len(first))
	}
	for _, n := range first {
		seen[n]++
	}
	churn(first[2]) // listed already
	churn(name(39)) // not listed yet
	fs.Forget(fs.mkfile(t, 1, "new").NodeId, 1)
	for {
		names, next := fs.readDirBatch(t, o.Fh, off, 256)
		if len(names) == 0 {
			break
		}
		for _, n := range names {
			seen[n]++
		}
		off = next
	}
	for n, c := range seen {
		if c != 1 {
			t.Errorf("%s listed %d times", n, c)
		}
	}
	if seen[name(39)] != 0 || seen["new"] != 0 || len(seen) != 2+39 {
		t.Errorf("listing after the changes: %d names, %s %d times, new %d times; want 41, 0, 0", len(seen), name(39), seen[name(39)], seen["new"])
	}
	// rewinddir: the kernel asks from offset 0 again on the same handle.
	all := map[string]bool{}
	for off := uint64(0); ; {
		names, next := fs.readDirBatch(t, o.Fh, off, 256)
		if len(names) == 0 {
			break
		}
		for _, n := range names {
			all[n] = true
		}
		off = next
	}
	if len(all) != 2+41 || !all[name(39)] || !all["new"] {
		t.Errorf("listing after rewind: %d names, want 43 with %s and new", len(all), name(39))
	}
	fs.ReleaseDir(&fuse.ReleaseIn{InHeader: header(1), Fh: o.Fh})
	if fs.dirs.get(o.Fh) != nil {
		t.Error("RELEASEDIR kept the listing")
	}
}

// TestRenameFlagsOnlyFromRename2: a plain RENAME has no flags field; what
// go-fuse shows there is the first name's bytes.
func TestRenameFlagsOnlyFromRename2(t *testing.T) {
	fs := newTestFS(t)
	fs.mkfile(t, 1, "a")
	fs.mkfile(t, 1, "b")
	in := fuse.RenameIn{InHeader: header(1), Newdir: 1, Flags: 0x61 /* "a" */}
	in.Opcode = 12 // FUSE_RENAME
	if st := fs.Rename(nil, &in, "a", "b"); st != fuse.OK {
		t.Errorf("RENAME with stray flag bytes: %v", st)
	}
	fs.mkfile(t, 1, "c")
	in.Opcode, in.Flags = opcodeRename2, 1 // RENAME_NOREPLACE
	if st := fs.Rename(nil, &in, "b", "c"); st != fuse.Status(syscall.EEXIST) {
		t.Errorf("RENAME2 NOREPLACE onto an existing name: %v", st)
	}
}

func TestXattrProtocol(t *testing.T) {
	fs := newTestFS(t)
	f := fs.mkfile(t, 1, "f")
	set := fuse.SetXAttrIn{InHeader: header(f.NodeId)}
	if st := fs.SetXAttr(nil, &set, "user.k", []byte("value")); st != fuse.OK {
		t.Fatal(st)
	}
	h := header(f.NodeId)
	if n, st := fs.GetXAttr(nil, &h, "user.k", nil); st != fuse.OK || n != 5 {
		t.Errorf("size query: %d %v", n, st)
	}
	if n, st := fs.GetXAttr(nil, &h, "user.k", make([]byte, 3)); st != fuse.ERANGE || n != 5 {
		t.Errorf("short buffer: %d %v", n, st)
	}
	buf := make([]byte, 10)
	if n, st := fs.GetXAttr(nil, &h, "user.k", buf); st != fuse.OK || string(buf[:n]) != "value" {
		t.Errorf("get: %q %v", buf[:n], st)
	}
	if n, st := fs.ListXAttr(nil, &h, nil); st != fuse.OK || n != 7 {
		t.Errorf("list size: %d %v", n, st)
	}
	if n, st := fs.ListXAttr(nil, &h, buf); st != fuse.OK || string(buf[:n]) != "user.k\x00" {
		t.Errorf("list: %q %v", buf[:n], st)
	}
	if st := fs.SetXAttr(nil, &set, "security.selinux", []byte("x")); st != fuse.Status(syscall.EOPNOTSUPP) {
		t.Errorf("set security label without SecurityLabels: %v", st)
	}
	if _, st := fs.GetXAttr(nil, &h, "system.posix_acl_access", nil); st != fuse.Status(syscall.EOPNOTSUPP) {
		t.Errorf("get ACL without SecurityLabels: %v", st)
	}
	if st := fs.RemoveXAttr(nil, &h, "security.selinux"); st != fuse.Status(syscall.EOPNOTSUPP) {
		t.Errorf("remove security label without SecurityLabels: %v", st)
	}
}

// TestACLsNeverStored: with SecurityLabels, security.* reaches the volume,
// but system.posix_acl_* is refused all the same: the kernel would keep an
// ACL without enforcing it, so one set to keep a user out would not.
func TestACLsNeverStored(t *testing.T) {
	fs := newTestFS(t, func(o *Options) { o.SecurityLabels = true })
	f := fs.mkfile(t, 1, "f")
	set := fuse.SetXAttrIn{InHeader: header(f.NodeId), Size: 1}
	if st := fs.SetXAttr(nil, &set, "security.selinux", []byte("x")); st != fuse.OK {
		t.Errorf("set security label with SecurityLabels: %v", st)
	}
	for _, name := range []string{"system.posix_acl_access", "system.posix_acl_default"} {
		if st := fs.SetXAttr(nil, &set, name, []byte("x")); st != fuse.Status(syscall.EOPNOTSUPP) {
			t.Errorf("set %s with SecurityLabels: %v, want EOPNOTSUPP", name, st)
		}
		h := header(f.NodeId)
		if _, st := fs.GetXAttr(nil, &h, name, nil); st != fuse.Status(syscall.EOPNOTSUPP) {
			t.Errorf("get %s with SecurityLabels: %v, want EOPNOTSUPP", name, st)
		}
	}
}

// TestCounters: every request is counted by opcode, errors apart, and
// nothing stays in flight. An answer that what was asked for is absent
// (a name, an attribute, a label on a mount without labels) is counted
// apart from the errors: the kernel asks security.capability before the
// first write to each file, and that is no failure.
func TestCounters(t *testing.T) {
	fs := newTestFS(t)
	f := fs.mkfile(t, 1, "f")
	h := header(1)
	var out fuse.EntryOut
	fs.Lookup(nil, &h, "f", &out)
	fs.Lookup(nil, &h, "missing", &out)
	fs.Rmdir(nil, &h, "f") // ENOTDIR
	fh := header(f.NodeId)
	fs.GetXAttr(nil, &fh, "user.missing", nil)        // ENODATA
	fs.GetXAttr(nil, &fh, "security.capability", nil) // EOPNOTSUPP: no labels
	fs.GetXAttr(nil, &fh, "user.missing", nil)
	fs.Forget(f.NodeId, 2)
	l, _ := fs.reg.Snapshot().Layer(Layer)
	for name, want := range map[string]uint64{
		"op-LOOKUP": 2, "err-LOOKUP": 0, "absent-LOOKUP": 1, "op-MKNOD": 1,
		"op-RMDIR": 1, "err-RMDIR": 1, "absent-RMDIR": 0, "op-FORGET": 1,
		"op-GETXATTR": 3, "err-GETXATTR": 0, "absent-GETXATTR": 3,
	} {
		if c, _ := l.Counter(name); c.Value != want {
			t.Errorf("%s = %d, want %d", name, c.Value, want)
		}
	}
	if r, _ := l.Type("request"); r.Live != 0 || r.Total != 8 {
		t.Errorf("requests: %d in flight, %d in all; want 0 and 8", r.Live, r.Total)
	}
}

// TestHotPathAllocations pins what the adapter adds to the cheapest
// requests: nothing beyond what the volume call itself allocates.
func TestHotPathAllocations(t *testing.T) {
	fs := newTestFS(t)
	f := fs.mkfile(t, 1, "f")
	get := fuse.GetAttrIn{InHeader: header(f.NodeId)}
	var aout fuse.AttrOut
	if n := testing.AllocsPerRun(100, func() { fs.GetAttr(nil, &get, &aout) }); n != 0 {
		t.Errorf("GETATTR: %v allocations, want 0", n)
	}
	h := header(1)
	var eout fuse.EntryOut
	n := testing.AllocsPerRun(100, func() { fs.Lookup(nil, &h, "f", &eout) })
	if n != 0 {
		t.Errorf("LOOKUP: %v allocations, want 0", n)
	}
	fs.Forget(f.NodeId, 102)
}

func TestOptions(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.EntryTimeout != time.Hour || o.AttrTimeout != time.Hour || o.NegativeTimeout != time.Hour ||
		o.MaxWrite != 1<<20 || o.MaxBackground != 64 || o.MaxInflightRequestBytes != 64<<20 ||
		o.FsName != "smallfs" || o.Logger == nil || o.Accounting != accounting.Default {
		t.Errorf("defaults: %+v", o)
	}
	o, _ = Options{EntryTimeout: -1, AttrTimeout: 5 * time.Second}.withDefaults()
	if o.EntryTimeout != 0 || o.AttrTimeout != 5*time.Second {
		t.Errorf("timeouts: %v %v", o.EntryTimeout, o.AttrTimeout)
	}
	_, err = Options{MaxWrite: 10, MaxBackground: 1 << 20, MaxInflightRequestBytes: -1, ReadDirPlus: 7, Permissions: 9}.withDefaults()
	if !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("bad options: %v", err)
	}
	for _, f := range []string{"MaxWrite", "MaxBackground", "MaxInflightRequestBytes", "ReadDirPlus", "Permissions"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error does not name %s: %v", f, err)
		}
	}
	mo := o.mountOptions(true)
	if mo.AllowOther || mo.ExtraCapabilities&fuse.CAP_READDIRPLUS_AUTO == 0 {
		t.Errorf("mount options: %+v", mo)
	}
	ro := Options{ReadOnly: true, ReadDirPlus: ReadDirPlusNever}
	mo = ro.mountOptions(true)
	if mo.DirectMountFlags&syscall.MS_RDONLY == 0 || !mo.DisableReadDirPlus {
		t.Errorf("read-only mount options: %+v", mo)
	}
}

// TestKernelPermissions: the kernel checks mode bits wherever a caller
// other than root can reach the mount, and wherever it is asked to.
func TestKernelPermissions(t *testing.T) {
	param, err := os.ReadFile(sysAdminAccessParam)
	sysAdmin := err == nil && strings.TrimSpace(string(param)) != "N"
	for _, c := range []struct {
		opts   Options
		uid    int
		kernel bool
	}{
		{Options{}, 0, sysAdmin},
		{Options{ReadOnly: true}, 0, sysAdmin},
		{Options{}, 1000, true},
		{Options{AllowOther: true}, 0, true},
		{Options{Permissions: PermissionsKernel}, 0, true},
	} {
		if got := c.opts.kernelPermissions(c.uid); got != c.kernel {
			t.Errorf("%+v owned by uid %d: kernel checks %v, want %v", c.opts, c.uid, got, c.kernel)
		}
	}
	o := Options{AllowOther: true}
	for _, direct := range []bool{true, false} {
		if mo := o.mountOptions(direct); !slices.Contains(mo.Options, "default_permissions") {
			t.Errorf("allow_other (direct %v): options %q lack default_permissions", direct, mo.Options)
		}
	}
}

// TestMountFlags: generic flags reach mount(2) as bits and fusermount3 as
// names; nosuid and nodev unless asked otherwise; bad bits are refused.
func TestMountFlags(t *testing.T) {
	for _, c := range []struct {
		opts  Options
		bits  uintptr
		names []string
	}{
		{Options{}, syscall.MS_NOSUID | syscall.MS_NODEV, []string{"nosuid", "nodev"}},
		{Options{MountFlags: syscall.MS_NOEXEC | syscall.MS_NOATIME | syscall.MS_SYNCHRONOUS},
			syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC | syscall.MS_NOATIME | syscall.MS_SYNCHRONOUS,
			[]string{"nosuid", "nodev", "noexec", "sync", "noatime"}},
		{Options{Suid: true, Dev: true, MountFlags: syscall.MS_RDONLY | syscall.MS_DIRSYNC},
			syscall.MS_RDONLY | syscall.MS_DIRSYNC, []string{"ro", "dirsync", "suid", "dev"}},
		{Options{MountFlags: syscall.MS_STRICTATIME | msLazytime},
			syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_STRICTATIME | msLazytime,
			[]string{"nosuid", "nodev", "strictatime", "lazytime"}},
		// No flags at all: MS_MGC_VAL alone keeps go-fuse's defaults off.
		{Options{Suid: true, Dev: true}, syscall.MS_MGC_VAL, []string{"suid", "dev"}},
	} {
		o, err := c.opts.withDefaults()
		if err != nil {
			t.Fatalf("%+v: %v", c.opts, err)
		}
		if got := o.mountOptions(true); got.DirectMountFlags != c.bits || !got.DirectMountStrict {
			t.Errorf("flags %#x: mount(2) gets %#x, want %#x", c.opts.MountFlags, got.DirectMountFlags, c.bits)
		}
		var names []string
		for _, n := range o.mountOptions(false).Options {
			if n != "default_permissions" {
				names = append(names, n)
			}
		}
		if !slices.Equal(names, c.names) {
			t.Errorf("flags %#x: fusermount3 gets %q, want %q", c.opts.MountFlags, names, c.names)
		}
		if o.ReadOnly != (c.bits&syscall.MS_RDONLY != 0) {
			t.Errorf("flags %#x: ReadOnly %v", c.opts.MountFlags, o.ReadOnly)
		}
	}
	_, err := Options{MountFlags: syscall.MS_BIND | syscall.MS_NOSUID, Suid: true}.withDefaults()
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "0x1000") || !strings.Contains(err.Error(), "Suid") {
		t.Errorf("MS_BIND and Suid with MS_NOSUID: %v", err)
	}
}

// TestKillPrivFlags: the kernel's privilege-clearing flags reach the
// volume. A flagged WRITE, a flagged SETATTR and a chown clear set-user-ID
// and (with group execute) set-group-ID; an unflagged write keeps them, and
// so does a chown of a directory.
func TestKillPrivFlags(t *testing.T) {
	fs := newTestFS(t)
	mode := func(node uint64) uint32 {
		a, err := fs.vol.GetAttr(volume.Ino(node))
		if err != nil {
			t.Fatal(err)
		}
		return a.Mode & 0o7777
	}
	setMode := func(node uint64, m uint32) {
		in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: header(node), Valid: fuse.FATTR_MODE, Mode: m}}
		if st := fs.SetAttr(nil, &in, &fuse.AttrOut{}); st != fuse.OK {
			t.Fatalf("chmod: %v", st)
		}
	}
	var c fuse.CreateOut
	if st := fs.Create(nil, &fuse.CreateIn{InHeader: header(1), Flags: syscall.O_RDWR, Mode: 0o644}, "f", &c); st != fuse.OK {
		t.Fatal(st)
	}
	f := c.NodeId
	for _, flags := range []uint32{0, fuse.WRITE_KILL_SUIDGID} {
		setMode(f, 0o6755)
		w := fuse.WriteIn{InHeader: header(f), Fh: c.Fh, WriteFlags: flags}
		if _, st := fs.Write(nil, &w, []byte("x")); st != fuse.OK {
			t.Fatalf("write: %v", st)
		}
		want := map[uint32]uint32{0: 0o6755, fuse.WRITE_KILL_SUIDGID: 0o0755}[flags]
		if got := mode(f); got != want {
			t.Errorf("write with flags %#x: mode %o, want %o", flags, got, want)
		}
	}
	var dir fuse.EntryOut
	if st := fs.Mkdir(nil, &fuse.MkdirIn{InHeader: header(1), Mode: 0o755}, "d", &dir); st != fuse.OK {
		t.Fatal(st)
	}
	d := dir.NodeId
	for _, tc := range []struct {
		name  string
		node  uint64
		valid uint32
		want  uint32
	}{
		{"truncate", f, fuse.FATTR_SIZE | fuse.FATTR_KILL_SUIDGID, 0o0755},
		{"chown", f, fuse.FATTR_UID, 0o0755},
		{"chgrp", f, fuse.FATTR_GID, 0o0755},
		{"chown dir", d, fuse.FATTR_UID | fuse.FATTR_GID, 0o6755},
	} {
		setMode(tc.node, 0o6755)
		in := fuse.SetAttrIn{SetAttrInCommon: fuse.SetAttrInCommon{InHeader: header(tc.node), Valid: tc.valid, Owner: fuse.Owner{Uid: 5, Gid: 5}}}
		var out fuse.AttrOut
		if st := fs.SetAttr(nil, &in, &out); st != fuse.OK {
			t.Fatalf("%s: %v", tc.name, st)
		}
		if got := mode(tc.node); got != tc.want || out.Mode&0o7777 != tc.want {
			t.Errorf("%s: mode %o (reply %o), want %o", tc.name, got, out.Mode&0o7777, tc.want)
		}
	}
	fs.Release(nil, &fuse.ReleaseIn{InHeader: header(f), Fh: c.Fh})
}

// TestZeroCopyRead: a read of committed data on a device with a file
// descriptor is answered as a splice from the device, not as bytes, where
// reads need no verifying (a volume without block checksums).
func TestZeroCopyRead(t *testing.T) {
	dev, err := device.Open(filepath.Join(t.TempDir(), "image"), device.Options{Create: true, Size: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if err := volume.Mkfs(dev, volume.MkfsOptions{NoBlockSums: true}); err != nil {
		t.Fatal(err)
	}
	vol, err := volume.Open(dev, volume.Options{TrackLookups: true})
	if err != nil {
		t.Fatal(err)
	}
	o, _ := Options{Accounting: accounting.NewRegistry()}.withDefaults()
	fs := newFileSystem(vol, dev, o)
	var out fuse.CreateOut
	if st := fs.Create(nil, &fuse.CreateIn{InHeader: header(1), Flags: syscall.O_RDWR, Mode: 0o644}, "f", &out); st != fuse.OK {
		t.Fatal(st)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	if _, st := fs.Write(nil, &fuse.WriteIn{InHeader: header(out.NodeId), Fh: out.Fh}, data); st != fuse.OK {
		t.Fatal(st)
	}
	if st := fs.Fsync(nil, &fuse.FsyncIn{InHeader: header(out.NodeId), Fh: out.Fh}); st != fuse.OK {
		t.Fatal(st)
	}
	res, st := fs.Read(nil, &fuse.ReadIn{InHeader: header(out.NodeId), Fh: out.Fh, Offset: 4096, Size: 8192}, make([]byte, 8192))
	if st != fuse.OK {
		t.Fatal(st)
	}
	splice, ok := res.(interface{ Seekable() (uintptr, int64, int) })
	if !ok {
		t.Fatalf("read of a committed extent answered with %T, want a device splice", res)
	}
	if fd, _, n := splice.Seekable(); fd != dev.Fd() || n != 8192 {
		t.Errorf("splice from fd %d for %d bytes, want fd %d for 8192", fd, n, dev.Fd())
	}
	if got, _ := res.Bytes(make([]byte, 8192)); !bytes.Equal(got, data[4096:4096+8192]) {
		t.Errorf("spliced bytes differ from what was written")
	}
	if n := vol.PinnedReads(); n != 1 {
		t.Errorf("%d reads pinned before the reply's Done, want 1", n)
	}
	res.Done()
	if n := vol.PinnedReads(); n != 0 {
		t.Errorf("%d reads pinned after the reply's Done, want 0", n)
	}
	fs.Release(nil, &fuse.ReleaseIn{InHeader: header(out.NodeId), Fh: out.Fh})
	fs.Forget(out.NodeId, 1)
	if err := vol.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestNoFlushByDefault: without FlushOnClose no open asks for a FLUSH at
// close; the data is written back at RELEASE.
func TestNoFlushByDefault(t *testing.T) {
	fs := newTestFS(t)
	var out fuse.CreateOut
	in := fuse.CreateIn{InHeader: header(1), Flags: syscall.O_WRONLY, Mode: 0o644}
	if st := fs.Create(nil, &in, "f", &out); st != fuse.OK {
		t.Fatal(st)
	}
	if out.OpenFlags&fuse.FOPEN_NOFLUSH == 0 || out.OpenFlags&fuse.FOPEN_KEEP_CACHE == 0 {
		t.Errorf("open flags of a write-only create: %#x, want NOFLUSH and KEEP_CACHE", out.OpenFlags)
	}
	fs.write(t, out.NodeId, out.Fh, []byte("hello"))
	fs.Release(nil, &fuse.ReleaseIn{InHeader: header(out.NodeId), Fh: out.Fh})
	if d := fs.dirty(); d != 0 {
		t.Errorf("%d bytes still dirty after RELEASE, want them written back", d)
	}
	if f := fs.openFlags(t, out.NodeId, syscall.O_RDWR); f&fuse.FOPEN_NOFLUSH == 0 {
		t.Errorf("read-write open: %#x, want NOFLUSH", f)
	}
	fs.Forget(out.NodeId, 1)
}

// TestListXattrTrusted: trusted.* names are listed to root only, as ext4
// and XFS list them only to a caller with CAP_SYS_ADMIN (the kernel
// refuses everyone else a get or set of one, but leaves the listing to
// the filesystem). A label stored by a mount with SecurityLabels is not
// listed by one without, where a get of it answers EOPNOTSUPP.
func TestListXattrTrusted(t *testing.T) {
	vol := newTestFS(t, func(o *Options) { o.SecurityLabels = true })
	f := vol.mkfile(t, 1, "f")
	set := fuse.SetXAttrIn{InHeader: header(f.NodeId), Size: 1}
	for _, name := range []string{"user.a", "trusted.overlay.opaque", "security.selinux"} {
		if st := vol.SetXAttr(nil, &set, name, []byte("y")); st != fuse.OK {
			t.Fatalf("set %s: %v", name, st)
		}
	}
	list := func(fs *testFS, uid uint32) string {
		h := header(f.NodeId)
		h.Uid, h.Gid = uid, uid
		n, st := fs.ListXAttr(nil, &h, nil)
		if st != fuse.OK {
			t.Fatalf("list size as %d: %v", uid, st)
		}
		buf := make([]byte, n)
		if m, st := fs.ListXAttr(nil, &h, buf); st != fuse.OK || m != n {
			t.Fatalf("list as %d: %d bytes, %v; the size query said %d", uid, m, st, n)
		}
		if n > 0 {
			if m, st := fs.ListXAttr(nil, &h, buf[:n-1]); st != fuse.ERANGE || m != n {
				t.Errorf("list as %d into a buffer one byte short: %d, %v", uid, m, st)
			}
		}
		return string(buf)
	}
	if got, want := list(vol, 0), "user.a\x00trusted.overlay.opaque\x00security.selinux\x00"; got != want {
		t.Errorf("list as root: %q, want %q", got, want)
	}
	if got, want := list(vol, 65534), "user.a\x00security.selinux\x00"; got != want {
		t.Errorf("list as uid 65534: %q, want %q", got, want)
	}
	vol.opts.SecurityLabels = false
	if got, want := list(vol, 0), "user.a\x00trusted.overlay.opaque\x00"; got != want {
		t.Errorf("list as root without SecurityLabels: %q, want %q", got, want)
	}
}
