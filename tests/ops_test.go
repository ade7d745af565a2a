package tests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	sfuse "github.com/smallfs/smallfs/fs/fuse"
)

// Every operation of the FUSE surface, through system calls.

func TestLookupForget(t *testing.T) {
	m := newMount(t)
	const n = 200
	must(t, os.Mkdir(m.path("d"), 0o755))
	for i := range n {
		writeFile(t, m.path("d", fmt.Sprint(i)), []byte{byte(i)})
	}
	for i := range n {
		lstat(t, m.path("d", fmt.Sprint(i)))
	}
	// An open file whose last name goes away stays readable until closed.
	f, err := os.Open(m.path("d", "0"))
	must(t, err)
	must(t, os.Remove(m.path("d", "0")))
	var st syscall.Stat_t
	must(t, syscall.Fstat(int(f.Fd()), &st))
	if st.Nlink != 0 {
		t.Errorf("nlink of an open unlinked file: %d, want 0", st.Nlink)
	}
	b, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(b, []byte{0}) {
		t.Errorf("read open unlinked file: %q %v", b, err)
	}
	f.Close()

	// Make the kernel drop its dentries and inodes: it sends FORGET for
	// every inode it looked up, and must then look them up again.
	forgets := m.requests("FORGET")
	must(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("2"), 0))
	// The kernel queues FORGETs; give the daemon time to read them.
	for deadline := time.Now().Add(30 * time.Second); m.requests("FORGET")-forgets < n/2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := m.requests("FORGET") - forgets; got < n/2 {
		t.Errorf("%d FORGETs after dropping the kernel's caches, want at least %d", got, n/2)
	}
	lookups := m.requests("LOOKUP")
	for i := 1; i < n; i++ {
		wantContent(t, m.path("d", fmt.Sprint(i)), []byte{byte(i)})
	}
	if m.requests("LOOKUP") == lookups {
		t.Errorf("no LOOKUP after the kernel forgot every inode")
	}
	if _, err := os.Lstat(m.path("d", "0")); !os.IsNotExist(err) {
		t.Errorf("lstat of a removed name: %v", err)
	}
}

func TestAttributes(t *testing.T) {
	m := newMount(t)
	p := m.path("f")
	writeFile(t, p, []byte("hello world"))

	must(t, syscall.Chmod(p, 0o4751)) // os.Chmod would drop the setuid bit
	if st := lstat(t, p); st.Mode != syscall.S_IFREG|0o4751 {
		t.Errorf("mode after chmod: %o", st.Mode)
	}
	must(t, os.Chown(p, 1234, 5678))
	if st := lstat(t, p); st.Uid != 1234 || st.Gid != 5678 {
		t.Errorf("owner after chown: %d:%d", st.Uid, st.Gid)
	}
	must(t, os.Truncate(p, 5))
	wantContent(t, p, []byte("hello"))
	must(t, os.Truncate(p, 8))
	wantContent(t, p, []byte("hello\x00\x00\x00"))

	at, mt := time.Unix(1_000_000_000, 123), time.Unix(1_500_000_000, 456)
	must(t, os.Chtimes(p, at, mt))
	st := lstat(t, p)
	if got := time.Unix(st.Atim.Unix()); !got.Equal(at) {
		t.Errorf("atime %v, want %v", got, at)
	}
	if got := time.Unix(st.Mtim.Unix()); !got.Equal(mt) {
		t.Errorf("mtime %v, want %v", got, mt)
	}
	before := time.Now().Add(-time.Second)
	must(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}, 0))
	if st := lstat(t, p); time.Unix(st.Mtim.Unix()).Before(before) {
		t.Errorf("mtime after utimes(now): %v", time.Unix(st.Mtim.Unix()))
	}
	// Times before 1970 survive the kernel's split into seconds and
	// nanoseconds.
	old := time.Unix(-86400, 5)
	must(t, os.Chtimes(p, old, old))
	if st := lstat(t, p); !time.Unix(st.Mtim.Unix()).Equal(old) {
		t.Errorf("mtime %v, want %v", time.Unix(st.Mtim.Unix()), old)
	}

	// SETATTR replies carry the attribute lifetime, so a stat right after
	// a chmod needs no GETATTR.
	getattrs := m.requests("GETATTR")
	for i := range 10 {
		must(t, os.Chmod(p, os.FileMode(0o600+i)))
		lstat(t, p)
	}
	if got := m.requests("GETATTR") - getattrs; got != 0 {
		t.Errorf("%d GETATTRs for 10 chmod+stat pairs, want 0", got)
	}
}

func TestMknod(t *testing.T) {
	m := newMount(t)
	for _, c := range []struct {
		name string
		mode uint32
		dev  int
	}{
		{"fifo", syscall.S_IFIFO | 0o600, 0},
		{"sock", syscall.S_IFSOCK | 0o600, 0},
		{"chr", syscall.S_IFCHR | 0o600, int(unix.Mkdev(1, 3))},
		{"reg", syscall.S_IFREG | 0o600, 0},
	} {
		must(t, syscall.Mknod(m.path(c.name), c.mode, c.dev))
		st := lstat(t, m.path(c.name))
		if st.Mode != c.mode || st.Rdev != uint64(c.dev) {
			t.Errorf("%s: mode %o rdev %d, want %o %d", c.name, st.Mode, st.Rdev, c.mode, c.dev)
		}
	}
	wantErrno(t, "mknod over an existing name", syscall.Mknod(m.path("reg"), syscall.S_IFREG|0o600, 0), syscall.EEXIST)
}

func TestDirectories(t *testing.T) {
	m := newMount(t)
	must(t, os.MkdirAll(m.path("a", "b", "c"), 0o750))
	if st := lstat(t, m.path("a", "b")); st.Mode != syscall.S_IFDIR|0o750 || st.Nlink != 3 {
		t.Errorf("a/b: mode %o nlink %d, want dir 750 with 3 links", st.Mode, st.Nlink)
	}
	writeFile(t, m.path("a", "b", "c", "f"), nil)
	wantErrno(t, "rmdir non-empty", syscall.Rmdir(m.path("a", "b")), syscall.ENOTEMPTY)
	wantErrno(t, "rmdir a file", syscall.Rmdir(m.path("a", "b", "c", "f")), syscall.ENOTDIR)
	wantErrno(t, "unlink a directory", syscall.Unlink(m.path("a", "b")), syscall.EISDIR)
	wantErrno(t, "mkdir existing", syscall.Mkdir(m.path("a"), 0o755), syscall.EEXIST)
	wantErrno(t, "mkdir in a missing dir", syscall.Mkdir(m.path("x", "y"), 0o755), syscall.ENOENT)
	wantErrno(t, "256-byte name", syscall.Mkdir(m.path(strings.Repeat("n", 256)), 0o755), syscall.ENAMETOOLONG)
	must(t, syscall.Mkdir(m.path(strings.Repeat("n", 255)), 0o755))
	must(t, os.Remove(m.path("a", "b", "c", "f")))
	must(t, syscall.Rmdir(m.path("a", "b", "c")))
	if st := lstat(t, m.path("a", "b")); st.Nlink != 2 {
		t.Errorf("a/b nlink after rmdir of its child: %d", st.Nlink)
	}

	// READDIR, READDIRPLUS, and FSYNCDIR through an open directory.
	for i := range 50 {
		writeFile(t, m.path("a", fmt.Sprintf("f%02d", i)), nil)
	}
	es, err := os.ReadDir(m.path("a"))
	must(t, err)
	if len(es) != 51 {
		t.Fatalf("%d entries in a, want 51", len(es))
	}
	for _, e := range es {
		info, err := e.Info()
		must(t, err)
		if e.Name() != "b" && !info.Mode().IsRegular() {
			t.Errorf("%s: mode %v", e.Name(), info.Mode())
		}
	}
	d, err := os.Open(m.path("a"))
	must(t, err)
	must(t, d.Sync())
	must(t, d.Close())
	if m.requests("OPENDIR") == 0 || m.requests("READDIR")+m.requests("READDIRPLUS") == 0 ||
		m.requests("RELEASEDIR") == 0 || m.requests("FSYNCDIR") == 0 {
		t.Errorf("directory requests missing: OPENDIR %d READDIR %d READDIRPLUS %d RELEASEDIR %d FSYNCDIR %d",
			m.requests("OPENDIR"), m.requests("READDIR"), m.requests("READDIRPLUS"),
			m.requests("RELEASEDIR"), m.requests("FSYNCDIR"))
	}

	// "." and ".." lead every listing.
	fd, err := syscall.Open(m.path("a"), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	must(t, err)
	defer syscall.Close(fd)
	buf := make([]byte, 4096)
	n, err := syscall.ReadDirent(fd, buf)
	must(t, err)
	var first []string
	for off := 0; off < n && len(first) < 2; {
		var de fuse.DirEntry
		off += de.Parse(buf[off:])
		first = append(first, de.Name)
	}
	if !slices.Equal(first, []string{".", ".."}) {
		t.Errorf("listing starts with %q, want . and ..", first)
	}
}

func TestLinksAndSymlinks(t *testing.T) {
	m := newMount(t)
	writeFile(t, m.path("f"), []byte("data"))
	must(t, os.Link(m.path("f"), m.path("g")))
	if st := lstat(t, m.path("g")); st.Nlink != 2 {
		t.Errorf("nlink after link: %d", st.Nlink)
	}
	must(t, os.Mkdir(m.path("d"), 0o755))
	wantErrno(t, "hard link to a directory", os.Link(m.path("d"), m.path("d2")), syscall.EPERM)
	wantErrno(t, "link over an existing name", os.Link(m.path("f"), m.path("g")), syscall.EEXIST)

	must(t, os.Symlink("f", m.path("s")))
	must(t, os.Symlink("/no/such/target", m.path("dangling")))
	long := strings.Repeat("x/", 2000)
	must(t, os.Symlink(long, m.path("long")))
	for name, want := range map[string]string{"s": "f", "dangling": "/no/such/target", "long": long} {
		got, err := os.Readlink(m.path(name))
		if err != nil || got != want {
			t.Errorf("readlink %s: %.40q %v, want %.40q", name, got, err, want)
		}
	}
	if st := lstat(t, m.path("s")); st.Mode&syscall.S_IFMT != syscall.S_IFLNK || st.Size != 1 {
		t.Errorf("symlink: mode %o size %d", st.Mode, st.Size)
	}
	wantContent(t, m.path("s"), []byte("data"))
	wantErrno(t, "readlink of a file", func() error { _, err := os.Readlink(m.path("f")); return err }(), syscall.EINVAL)
	// O_NOFOLLOW on a symlink fails with ELOOP.
	_, err := syscall.Open(m.path("s"), syscall.O_RDONLY|syscall.O_NOFOLLOW, 0)
	wantErrno(t, "open O_NOFOLLOW of a symlink", err, syscall.ELOOP)
}

func TestRenameFlags(t *testing.T) {
	m := newMount(t)
	writeFile(t, m.path("a"), []byte("A"))
	writeFile(t, m.path("b"), []byte("B"))
	must(t, os.MkdirAll(m.path("d", "sub"), 0o755))
	writeFile(t, m.path("d", "sub", "x"), []byte("X"))

	err := unix.Renameat2(unix.AT_FDCWD, m.path("a"), unix.AT_FDCWD, m.path("b"), unix.RENAME_NOREPLACE)
	wantErrno(t, "RENAME_NOREPLACE onto an existing name", err, syscall.EEXIST)
	must(t, unix.Renameat2(unix.AT_FDCWD, m.path("a"), unix.AT_FDCWD, m.path("c"), unix.RENAME_NOREPLACE))
	wantContent(t, m.path("c"), []byte("A"))

	// Exchange a file and a directory across directories.
	must(t, unix.Renameat2(unix.AT_FDCWD, m.path("c"), unix.AT_FDCWD, m.path("d", "sub"), unix.RENAME_EXCHANGE))
	wantContent(t, m.path("d", "sub"), []byte("A"))
	wantContent(t, m.path("c", "x"), []byte("X"))
	err = unix.Renameat2(unix.AT_FDCWD, m.path("b"), unix.AT_FDCWD, m.path("missing"), unix.RENAME_EXCHANGE)
	wantErrno(t, "RENAME_EXCHANGE with a missing name", err, syscall.ENOENT)

	// A directory cannot move below itself.
	must(t, os.Mkdir(m.path("c", "inner"), 0o755))
	wantErrno(t, "rename a dir into itself", os.Rename(m.path("c"), m.path("c", "inner", "c")), syscall.EINVAL)
}

func TestFileIO(t *testing.T) {
	m := newMount(t)
	p := m.path("f")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	must(t, err)
	data := pattern(1, 300_000)
	if n, err := f.Write(data); err != nil || n != len(data) {
		t.Fatalf("write: %d %v", n, err)
	}
	must(t, f.Sync())
	must(t, syscall.Fdatasync(int(f.Fd())))
	if _, err := f.WriteAt([]byte("patch"), 1000); err != nil {
		t.Fatal(err)
	}
	copy(data[1000:], "patch")
	got := make([]byte, 10)
	if n, err := f.ReadAt(got, 998); err != nil || n != 10 || !bytes.Equal(got, data[998:1008]) {
		t.Errorf("pread: %q %v", got[:n], err)
	}
	if n, err := f.ReadAt(got, int64(len(data))-4); n != 4 || !errors.Is(err, io.EOF) {
		t.Errorf("pread across EOF: %d %v", n, err)
	}
	must(t, f.Close())
	wantContent(t, p, data)

	_, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	wantErrno(t, "O_EXCL on an existing file", err, syscall.EEXIST)
	f, err = os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	must(t, err)
	must(t, f.Close())
	if st := lstat(t, p); st.Size != 0 {
		t.Errorf("size after O_TRUNC: %d", st.Size)
	}
	_, err = os.Open(m.path("missing"))
	wantErrno(t, "open a missing file", err, syscall.ENOENT)

	// Every request of a file's life went through the adapter.
	// (No FLUSH: close(2) costs none unless flush_on_close; TestRoundTrips.)
	for _, op := range []string{"CREATE", "OPEN", "READ", "WRITE", "RELEASE", "FSYNC"} {
		if m.requests(op) == 0 {
			t.Errorf("no %s request served", op)
		}
	}
}

func TestFallocateLseek(t *testing.T) {
	m := newMount(t)
	f, err := os.Create(m.path("f"))
	must(t, err)
	defer f.Close()
	fd := int(f.Fd())
	must(t, unix.Fallocate(fd, 0, 0, 1<<20))
	if st := lstat(t, m.path("f")); st.Size != 1<<20 {
		t.Errorf("size after fallocate: %d", st.Size)
	}
	must(t, unix.Fallocate(fd, unix.FALLOC_FL_KEEP_SIZE, 1<<20, 1<<20))
	if st := lstat(t, m.path("f")); st.Size != 1<<20 {
		t.Errorf("size after fallocate KEEP_SIZE: %d", st.Size)
	}
	zero := make([]byte, 4096)
	got := make([]byte, 4096)
	if _, err := f.ReadAt(got, 5000); err != nil || !bytes.Equal(got, zero) {
		t.Errorf("allocated range does not read as zeros: %v", err)
	}

	// A sparse file: data at 0 and at 8 MiB, a hole between.
	g, err := os.Create(m.path("sparse"))
	must(t, err)
	defer g.Close()
	_, err = g.WriteAt(pattern(2, 4096), 0)
	must(t, err)
	_, err = g.WriteAt(pattern(3, 4096), 8<<20)
	must(t, err)
	must(t, g.Sync())
	gfd := int(g.Fd())
	if off, err := unix.Seek(gfd, 0, unix.SEEK_DATA); err != nil || off != 0 {
		t.Errorf("SEEK_DATA 0: %d %v", off, err)
	}
	if off, err := unix.Seek(gfd, 0, unix.SEEK_HOLE); err != nil || off < 4096 || off > 8<<20 {
		t.Errorf("SEEK_HOLE 0: %d %v", off, err)
	}
	if off, err := unix.Seek(gfd, 4<<20, unix.SEEK_DATA); err != nil || off > 8<<20 || off < 4096 {
		t.Errorf("SEEK_DATA in the hole: %d %v", off, err)
	}
	if off, err := unix.Seek(gfd, 8<<20+4096, unix.SEEK_DATA); err == nil {
		t.Errorf("SEEK_DATA at EOF: %d, want ENXIO", off)
	}
	if m.requests("LSEEK") == 0 || m.requests("FALLOCATE") == 0 {
		t.Errorf("LSEEK %d FALLOCATE %d requests", m.requests("LSEEK"), m.requests("FALLOCATE"))
	}
}

// TestPunchHoleZeroRange: fallocate(2) PUNCH_HOLE|KEEP_SIZE through the
// mount: the range reads as zeros at once (the kernel drops its cached
// pages), the size stays, st_blocks and statfs give the whole blocks
// back, SEEK_HOLE and SEEK_DATA find the hole, and all of it survives a
// remount. PUNCH_HOLE without KEEP_SIZE is EOPNOTSUPP. ZERO_RANGE zeroes
// and grows the file, where the kernel passes it to FUSE servers (older
// kernels answer EOPNOTSUPP themselves: that part is skipped there).
func TestPunchHoleZeroRange(t *testing.T) {
	m := newMount(t, func(c *config) {
		// No periodic commit (and so no checkpoint), so nothing changes
		// the free space between the statfs calls this test compares.
		c.volume.CommitInterval = -1
	})
	const size = 1<<20 + 1000
	want := pattern(11, size)
	writeFile(t, m.path("f"), want)
	f, err := os.OpenFile(m.path("f"), os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	fd := int(f.Fd())
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil { // the kernel caches the pages
		t.Fatal(err)
	}
	var st0, st unix.Stat_t
	var fs0, fs unix.Statfs_t
	must(t, unix.Fstat(fd, &st0))
	must(t, unix.Statfs(m.Dir, &fs0))

	const off, n = 100000, 300000 // blocks 25-96 inside, 24 and 97 at the edges
	must(t, unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n))
	clear(want[off : off+n])
	if _, err := f.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, want) {
		t.Fatalf("read after the punch: %v, or the content differs", err)
	}
	must(t, unix.Fstat(fd, &st))
	must(t, unix.Statfs(m.Dir, &fs))
	if st.Size != size || st.Blocks != st0.Blocks-72*8 {
		t.Errorf("after the punch: size %d, %d sectors; want %d, %d", st.Size, st.Blocks, size, st0.Blocks-72*8)
	}
	if fs.Bfree != fs0.Bfree+72 {
		t.Errorf("statfs: %d blocks free after the punch, %d before: want 72 more", fs.Bfree, fs0.Bfree)
	}
	if h, err := unix.Seek(fd, 0, unix.SEEK_HOLE); err != nil || h != 25*4096 {
		t.Errorf("SEEK_HOLE from 0: %d %v, want %d", h, err, 25*4096)
	}
	if d, err := unix.Seek(fd, 25*4096, unix.SEEK_DATA); err != nil || d != 97*4096 {
		t.Errorf("SEEK_DATA from the hole: %d %v, want %d", d, err, 97*4096)
	}
	wantErrno(t, "PUNCH_HOLE without KEEP_SIZE", unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE, 0, 4096), syscall.EOPNOTSUPP)
	wantErrno(t, "COLLAPSE_RANGE", unix.Fallocate(fd, unix.FALLOC_FL_COLLAPSE_RANGE, 0, 4096), syscall.EOPNOTSUPP)

	// ZERO_RANGE: inside the file over data, and past its end.
	// A kernel that does not pass it answers EOPNOTSUPP without a
	// request.
	served := m.requests("FALLOCATE")
	switch err := unix.Fallocate(fd, unix.FALLOC_FL_ZERO_RANGE, 600000, 5000); {
	case errors.Is(err, syscall.EOPNOTSUPP) && m.requests("FALLOCATE") == served:
		t.Log("this kernel does not pass FALLOC_FL_ZERO_RANGE to FUSE servers: not checked through the mount")
	case err != nil:
		t.Fatalf("ZERO_RANGE: %v", err)
	default:
		clear(want[600000:605000])
		must(t, unix.Fallocate(fd, unix.FALLOC_FL_ZERO_RANGE, size-10, 20000))
		clear(want[size-10:])
		want = append(want, make([]byte, 20000-10)...)
		buf = make([]byte, len(want))
		if _, err := f.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, want) {
			t.Fatalf("read after ZERO_RANGE: %v, or the content differs", err)
		}
		must(t, unix.Fstat(fd, &st))
		if st.Size != int64(len(want)) {
			t.Errorf("size %d after ZERO_RANGE past the end, want %d", st.Size, len(want))
		}
	}
	must(t, f.Close())
	m.remount()
	wantContent(t, m.path("f"), want)
	if st := lstat(t, m.path("f")); st.Blocks >= st0.Blocks {
		t.Errorf("%d sectors after the remount, %d before the punch", st.Blocks, st0.Blocks)
	}
}

func TestXattrs(t *testing.T) {
	m := newMount(t)
	p := m.path("f")
	writeFile(t, p, nil)
	must(t, os.Mkdir(m.path("d"), 0o755))
	for _, target := range []string{p, m.path("d")} {
		must(t, unix.Setxattr(target, "user.a", []byte("1"), 0))
		must(t, unix.Setxattr(target, "user.b", []byte("two"), 0))
		wantErrno(t, "XATTR_CREATE on an existing attribute", unix.Setxattr(target, "user.a", []byte("x"), unix.XATTR_CREATE), syscall.EEXIST)
		wantErrno(t, "XATTR_REPLACE on a missing attribute", unix.Setxattr(target, "user.c", []byte("x"), unix.XATTR_REPLACE), syscall.ENODATA)
		must(t, unix.Setxattr(target, "user.a", []byte("one"), unix.XATTR_REPLACE))

		buf := make([]byte, 64)
		n, err := unix.Getxattr(target, "user.a", buf)
		if err != nil || string(buf[:n]) != "one" {
			t.Errorf("getxattr: %q %v", buf[:n], err)
		}
		if n, err := unix.Getxattr(target, "user.b", nil); err != nil || n != 3 {
			t.Errorf("getxattr size: %d %v", n, err)
		}
		_, err = unix.Getxattr(target, "user.b", make([]byte, 2))
		wantErrno(t, "getxattr into a short buffer", err, syscall.ERANGE)
		n, err = unix.Listxattr(target, buf)
		must(t, err)
		list := strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00")
		slices.Sort(list)
		if !slices.Equal(list, []string{"user.a", "user.b"}) {
			t.Errorf("listxattr: %q", list)
		}
		_, err = unix.Listxattr(target, make([]byte, 3))
		wantErrno(t, "listxattr into a short buffer", err, syscall.ERANGE)
		must(t, unix.Removexattr(target, "user.a"))
		_, err = unix.Getxattr(target, "user.a", buf)
		wantErrno(t, "getxattr after removexattr", err, syscall.ENODATA)
		wantErrno(t, "removexattr of a missing attribute", unix.Removexattr(target, "user.a"), syscall.ENODATA)
	}
	big := pattern(4, 64<<10) // XATTR_SIZE_MAX
	must(t, unix.Setxattr(p, "user.big", big, 0))
	wantErrno(t, "setxattr of a namespace prefix alone", unix.Setxattr(p, "user.", []byte("x"), 0), syscall.EINVAL)
	got := make([]byte, len(big))
	if n, err := unix.Getxattr(p, "user.big", got); err != nil || !bytes.Equal(got[:n], big) {
		t.Errorf("large xattr: %d %v", n, err)
	}

	// Security labels and ACLs are not supported unless asked for: every
	// call naming one says so (ls then stops asking, see
	// TestListingLabelQueries).
	for _, name := range []string{"security.capability", "security.selinux", "system.posix_acl_access"} {
		_, err := unix.Getxattr(p, name, nil)
		wantErrno(t, "getxattr "+name, err, syscall.EOPNOTSUPP)
		wantErrno(t, "removexattr "+name, unix.Removexattr(p, name), syscall.EOPNOTSUPP)
	}
	// (The kernel checks the format of capability and ACL values itself.)
	wantErrno(t, "setxattr security.selinux", unix.Setxattr(p, "security.selinux", []byte("x"), 0), syscall.EOPNOTSUPP)
}

func TestXattrsWithSecurityLabels(t *testing.T) {
	m := newMount(t, func(c *config) { c.mount.SecurityLabels = true })
	p := m.path("f")
	writeFile(t, p, nil)
	must(t, unix.Setxattr(p, "security.test", []byte("label"), 0))
	buf := make([]byte, 16)
	if n, err := unix.Getxattr(p, "security.test", buf); err != nil || string(buf[:n]) != "label" {
		t.Errorf("getxattr security.test: %q %v", buf[:n], err)
	}
}

// TestAccess: a mount only root can reach has no default_permissions, so
// the kernel asks the adapter for access(2).
func TestAccess(t *testing.T) {
	m := newMount(t)
	writeFile(t, m.path("f"), nil)
	must(t, os.Chmod(m.path("f"), 0o644))
	must(t, unix.Access(m.path("f"), unix.R_OK|unix.W_OK))
	wantErrno(t, "access X_OK by root on a 0644 file", unix.Access(m.path("f"), unix.X_OK), syscall.EACCES)
	must(t, os.Chmod(m.path("f"), 0o744))
	must(t, unix.Access(m.path("f"), unix.X_OK))
	if m.requests("ACCESS") == 0 {
		t.Errorf("no ACCESS request reached the adapter")
	}
}

func TestStatfs(t *testing.T) {
	m := newMount(t)
	var before, after unix.Statfs_t
	must(t, unix.Statfs(m.Dir, &before))
	if before.Bsize == 0 || before.Blocks == 0 || before.Files == 0 || before.Namelen != 255 {
		t.Fatalf("statfs: %+v", before)
	}
	if before.Bfree > before.Blocks || before.Bavail > before.Bfree || before.Ffree > before.Files {
		t.Errorf("statfs figures out of order: %+v", before)
	}
	const files, size = 20, 256 << 10
	for i := range files {
		writeFile(t, m.path(fmt.Sprint(i)), pattern(i, size))
	}
	must(t, unix.Statfs(m.Dir, &after))
	if used := before.Ffree - after.Ffree; used != files {
		t.Errorf("statfs: %d inodes used by %d files", used, files)
	}
	wantBlocks := uint64(files * size / before.Bsize)
	if used := before.Bfree - after.Bfree; used < wantBlocks || used > wantBlocks+wantBlocks/8+64 {
		t.Errorf("statfs: %d blocks used by %d files of %d bytes (block %d): want about %d", used, files, size, before.Bsize, wantBlocks)
	}
	var sum uint64
	for i := range files {
		sum += uint64(lstat(t, m.path(fmt.Sprint(i))).Blocks)
	}
	if want := uint64(files * size / 512); sum < want {
		t.Errorf("st_blocks sum %d, want at least %d", sum, want)
	}
}

func TestReadOnlyMount(t *testing.T) {
	m := newMount(t)
	writeFile(t, m.path("f"), []byte("kept"))
	must(t, os.Mkdir(m.path("d"), 0o755))
	m.cfg.mount.ReadOnly = true
	m.remount()
	wantContent(t, m.path("f"), []byte("kept"))
	wantErrno(t, "create on a read-only mount", os.WriteFile(m.path("g"), nil, 0o644), syscall.EROFS)
	_, err := os.OpenFile(m.path("f"), os.O_WRONLY, 0)
	wantErrno(t, "open for writing on a read-only mount", err, syscall.EROFS)
	wantErrno(t, "mkdir on a read-only mount", os.Mkdir(m.path("e"), 0o755), syscall.EROFS)
	wantErrno(t, "chmod on a read-only mount", os.Chmod(m.path("f"), 0o600), syscall.EROFS)
	wantErrno(t, "rename on a read-only mount", os.Rename(m.path("f"), m.path("g")), syscall.EROFS)
	wantErrno(t, "setxattr on a read-only mount", unix.Setxattr(m.path("f"), "user.x", nil, 0), syscall.EROFS)

	// A remount,rw behind the daemon's back (mount -i skips smallfs's
	// helper, which refuses it) lifts the kernel's check: the daemon's
	// own must hold, or the changes would reach a volume opened read-only.
	must(t, syscall.Mount("", m.Dir, "", syscall.MS_REMOUNT|syscall.MS_NOSUID|syscall.MS_NODEV, ""))
	if perMount, _ := mountOptions(t, m.Dir); !slices.Contains(perMount, "rw") {
		t.Fatalf("remount,rw did not take: %q", perMount)
	}
	wantContent(t, m.path("f"), []byte("kept"))
	wantErrno(t, "create after remount,rw", os.WriteFile(m.path("g"), nil, 0o644), syscall.EROFS)
	_, err = os.OpenFile(m.path("f"), os.O_WRONLY, 0)
	wantErrno(t, "open for writing after remount,rw", err, syscall.EROFS)
	_, err = os.OpenFile(m.path("f"), os.O_RDONLY|os.O_TRUNC, 0)
	wantErrno(t, "O_TRUNC after remount,rw", err, syscall.EROFS)
	wantErrno(t, "mkdir after remount,rw", os.Mkdir(m.path("e"), 0o755), syscall.EROFS)
	wantErrno(t, "symlink after remount,rw", os.Symlink("f", m.path("l")), syscall.EROFS)
	wantErrno(t, "link after remount,rw", os.Link(m.path("f"), m.path("h")), syscall.EROFS)
	wantErrno(t, "mknod after remount,rw", syscall.Mknod(m.path("p"), syscall.S_IFIFO|0o644, 0), syscall.EROFS)
	wantErrno(t, "chmod after remount,rw", os.Chmod(m.path("f"), 0o600), syscall.EROFS)
	wantErrno(t, "truncate after remount,rw", os.Truncate(m.path("f"), 0), syscall.EROFS)
	wantErrno(t, "rename after remount,rw", os.Rename(m.path("f"), m.path("g")), syscall.EROFS)
	wantErrno(t, "unlink after remount,rw", os.Remove(m.path("f")), syscall.EROFS)
	wantErrno(t, "rmdir after remount,rw", os.Remove(m.path("d")), syscall.EROFS)
	wantErrno(t, "setxattr after remount,rw", unix.Setxattr(m.path("f"), "user.x", nil, 0), syscall.EROFS)
	wantErrno(t, "removexattr after remount,rw", unix.Removexattr(m.path("f"), "user.x"), syscall.EROFS)
	fd, err := unix.Open(m.Dir, unix.O_TMPFILE|unix.O_RDWR, 0o600)
	if err == nil {
		unix.Close(fd)
	}
	wantErrno(t, "O_TMPFILE after remount,rw", err, syscall.EROFS)
	wantContent(t, m.path("f"), []byte("kept"))
}

func TestBadOptions(t *testing.T) {
	_, err := sfuse.Mount(t.TempDir(), nil, nil, sfuse.Options{MaxWrite: 100, MaxBackground: -1, ReadDirPlus: 9})
	if err == nil {
		t.Fatal("mount with bad options succeeded")
	}
	for _, field := range []string{"MaxWrite", "MaxBackground", "ReadDirPlus"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error does not name %s: %v", field, err)
		}
	}
}
