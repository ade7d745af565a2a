package volume

import (
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestCreateAndLookup(t *testing.T) {
	v := newTestVolume(t, Options{})
	ctx := Context{UID: 1000, GID: 100}
	f := must[Attr](t)(v.Mknod(ctx, RootIno, "f", 0o640, 0))
	if f.Mode != syscall.S_IFREG|0o640 || f.Nlink != 1 || f.UID != 1000 || f.GID != 100 || f.Size != 0 {
		t.Fatalf("new file attr %+v", f)
	}
	d := must[Attr](t)(v.Mkdir(ctx, RootIno, "d", 0o755))
	if d.Mode != syscall.S_IFDIR|0o755 || d.Nlink != 2 {
		t.Fatalf("new dir attr %+v", d)
	}
	if r := must[Attr](t)(v.GetAttr(RootIno)); r.Nlink != 3 {
		t.Fatalf("root nlink %d, want 3", r.Nlink)
	}
	if got := must[Attr](t)(v.Lookup(ctx, RootIno, "f")); got != f {
		t.Fatalf("lookup %+v, want %+v", got, f)
	}
	if got := must[Attr](t)(v.Lookup(ctx, d.Ino, "..")); got.Ino != RootIno {
		t.Fatalf(`lookup ".." gave %d`, got.Ino)
	}
	if p, err := v.Parent(d.Ino); err != nil || p != RootIno {
		t.Fatalf("Parent of a top directory: %d %v", p, err)
	}
	if p, err := v.Parent(RootIno); err != nil || p != RootIno {
		t.Fatalf("Parent of the root: %d %v", p, err)
	}
	_, perr := v.Parent(f.Ino)
	wantErrno(t, perr, syscall.ENOTDIR)

	for _, typ := range []uint32{syscall.S_IFIFO, syscall.S_IFSOCK, syscall.S_IFCHR, syscall.S_IFBLK} {
		a := must[Attr](t)(v.Mknod(ctx, d.Ino, "n"+string(rune('0'+typ>>12)), typ|0o600, 0x0801))
		if a.Mode&syscall.S_IFMT != typ || (typ == syscall.S_IFCHR || typ == syscall.S_IFBLK) != (a.Rdev == 0x0801) {
			t.Fatalf("mknod %o gave %+v", typ, a)
		}
	}

	_, err := v.Lookup(ctx, RootIno, "missing")
	wantErrno(t, err, syscall.ENOENT)
	_, err = v.Lookup(ctx, f.Ino, "x")
	wantErrno(t, err, syscall.ENOTDIR)
	_, err = v.Mknod(ctx, RootIno, "f", 0o644, 0)
	wantErrno(t, err, syscall.EEXIST)
	_, err = v.Mkdir(ctx, RootIno, "d", 0o755)
	wantErrno(t, err, syscall.EEXIST)
	_, err = v.Mknod(ctx, RootIno, strings.Repeat("x", 256), 0o644, 0)
	wantErrno(t, err, syscall.ENAMETOOLONG)
	_ = must[Attr](t)(v.Mknod(ctx, RootIno, strings.Repeat("x", 255), 0o644, 0))
	_, err = v.Mknod(ctx, RootIno, "a/b", 0o644, 0)
	wantErrno(t, err, syscall.EINVAL)
	_, err = v.Mknod(ctx, RootIno, "dir", syscall.S_IFDIR|0o644, 0)
	wantErrno(t, err, syscall.EINVAL)
	_, err = v.Mkdir(ctx, 999, "x", 0o755)
	wantErrno(t, err, syscall.ENOENT)
	_, err = v.GetAttr(999)
	wantErrno(t, err, syscall.ENOENT)
}

func TestSetgidDirectory(t *testing.T) {
	v := newTestVolume(t, Options{})
	d := must[Attr](t)(v.Mkdir(Context{UID: 1, GID: 50}, RootIno, "shared", 0o2775))
	f := must[Attr](t)(v.Mknod(Context{UID: 2, GID: 60}, d.Ino, "f", 0o644, 0))
	sub := must[Attr](t)(v.Mkdir(Context{UID: 2, GID: 60}, d.Ino, "sub", 0o755))
	if f.GID != 50 || sub.GID != 50 || sub.Mode&syscall.S_ISGID == 0 || f.Mode&syscall.S_ISGID != 0 {
		t.Fatalf("setgid inheritance: file %+v, dir %+v", f, sub)
	}
}

func TestUnlinkAndRmdir(t *testing.T) {
	v := newTestVolume(t, Options{})
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755))
	f := must[Attr](t)(v.Mknod(root, d.Ino, "f", 0o644, 0))

	wantErrno(t, v.Unlink(root, RootIno, "d"), syscall.EISDIR)
	wantErrno(t, v.Rmdir(root, d.Ino, "f"), syscall.ENOTDIR)
	wantErrno(t, v.Rmdir(root, RootIno, "d"), syscall.ENOTEMPTY)
	wantErrno(t, v.Unlink(root, RootIno, "nope"), syscall.ENOENT)
	wantErrno(t, v.Rmdir(root, RootIno, "."), syscall.EINVAL)
	wantErrno(t, v.Rmdir(root, RootIno, ".."), syscall.ENOTEMPTY)
	used := v.StatFS().FilesFree

	ok(t, v.Unlink(root, d.Ino, "f"))
	_, err := v.GetAttr(f.Ino)
	wantErrno(t, err, syscall.ENOENT)
	ok(t, v.Rmdir(root, RootIno, "d"))
	if r := must[Attr](t)(v.GetAttr(RootIno)); r.Nlink != 2 {
		t.Fatalf("root nlink %d after rmdir, want 2", r.Nlink)
	}
	if got := v.StatFS().FilesFree; got != used+2 {
		t.Fatalf("FilesFree %d, want %d", got, used+2)
	}
	if got := names(t, v, RootIno); len(got) != 0 {
		t.Fatalf("root lists %q", got)
	}
	// Freed inode numbers are reused with a new generation.
	g := must[Attr](t)(v.Mknod(root, RootIno, "g", 0o644, 0))
	if g.Ino == f.Ino && g.Gen == f.Gen {
		t.Fatalf("(ino, gen) %d/%d reused", g.Ino, g.Gen)
	}
}

func TestHardLinks(t *testing.T) {
	v := newTestVolume(t, Options{})
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755))
	f := must[Attr](t)(v.Mknod(root, RootIno, "f", 0o644, 0))
	l := must[Attr](t)(v.Link(root, f.Ino, d.Ino, "l"))
	if l.Ino != f.Ino || l.Nlink != 2 {
		t.Fatalf("link attr %+v", l)
	}
	_, err := v.Link(root, d.Ino, RootIno, "dl")
	wantErrno(t, err, syscall.EPERM)
	_, err = v.Link(root, f.Ino, RootIno, "f")
	wantErrno(t, err, syscall.EEXIST)
	ok(t, v.Unlink(root, RootIno, "f"))
	if a := must[Attr](t)(v.GetAttr(f.Ino)); a.Nlink != 1 {
		t.Fatalf("nlink %d after unlinking one of two names", a.Nlink)
	}
}

func TestMaxLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 65000 links")
	}
	v := newTestVolume(t, Options{})
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755))
	f := must[Attr](t)(v.Mknod(root, d.Ino, "f", 0o644, 0))
	for i := 1; i < MaxLinks; i++ {
		must[Attr](t)(v.Link(root, f.Ino, d.Ino, "l"+strconv.Itoa(i)))
	}
	_, err := v.Link(root, f.Ino, d.Ino, "one-too-many")
	wantErrno(t, err, syscall.EMLINK)
}

func TestSymlink(t *testing.T) {
	v := newTestVolume(t, Options{})
	s := must[Attr](t)(v.Symlink(root, RootIno, "s", "../target"))
	if s.Mode != syscall.S_IFLNK|0o777 || s.Size != 9 {
		t.Fatalf("symlink attr %+v", s)
	}
	if got := must[string](t)(v.Readlink(s.Ino)); got != "../target" {
		t.Fatalf("readlink %q", got)
	}
	_, err := v.Symlink(root, RootIno, "e", "")
	wantErrno(t, err, syscall.ENOENT)
	_, err = v.Symlink(root, RootIno, "long", strings.Repeat("a", MaxSymlinkLen+1))
	wantErrno(t, err, syscall.ENAMETOOLONG)
	_, err = v.Readlink(RootIno)
	wantErrno(t, err, syscall.EINVAL)
}

func TestStickyDirectory(t *testing.T) {
	v := newTestVolume(t, Options{})
	tmp := must[Attr](t)(v.Mkdir(root, RootIno, "tmp", 0o1777))
	alice, bob := Context{UID: 1001}, Context{UID: 1002}
	must[Attr](t)(v.Mknod(alice, tmp.Ino, "a", 0o644, 0))
	wantErrno(t, v.Unlink(bob, tmp.Ino, "a"), syscall.EPERM)
	wantErrno(t, v.Rename(bob, tmp.Ino, "a", tmp.Ino, "b", 0), syscall.EPERM)
	ok(t, v.Unlink(alice, tmp.Ino, "a"))
}

func TestSetAttr(t *testing.T) {
	v := newTestVolume(t, Options{})
	f := must[Attr](t)(v.Mknod(root, RootIno, "f", 0o644, 0))
	a := must[Attr](t)(v.SetAttr(root, f.Ino, SetAttrIn{
		Valid: SetMode | SetUID | SetGID | SetAtime | SetMtime,
		Mode:  syscall.S_IFDIR | 0o4711, UID: 7, GID: 8, Atime: 11, Mtime: 22,
	}))
	if a.Mode != syscall.S_IFREG|0o4711 || a.UID != 7 || a.GID != 8 || a.Atime != 11 || a.Mtime != 22 || a.Ctime <= f.Ctime-1 {
		t.Fatalf("setattr gave %+v", a)
	}
	a = must[Attr](t)(v.SetAttr(root, f.Ino, SetAttrIn{Valid: SetSize | SetCtime, Size: 1 << 20, Ctime: 33}))
	if a.Size != 1<<20 || a.Ctime != 33 || a.Mtime == 22 {
		t.Fatalf("truncate up gave %+v", a)
	}
	_, err := v.SetAttr(root, RootIno, SetAttrIn{Valid: SetSize})
	wantErrno(t, err, syscall.EISDIR)
	_, err = v.SetAttr(root, f.Ino, SetAttrIn{Valid: SetSize, Size: MaxFileSize + 1})
	wantErrno(t, err, syscall.EFBIG)
	s := must[Attr](t)(v.Symlink(root, RootIno, "s", "x"))
	_, err = v.SetAttr(root, s.Ino, SetAttrIn{Valid: SetSize})
	wantErrno(t, err, syscall.EINVAL)
}

func TestStatFS(t *testing.T) {
	v := newTestVolume(t, Options{})
	st := v.StatFS()
	ck := blocksIn(v.ckptExtents())
	if st.BlockSize != 4096 || st.Blocks != 64<<20/4096-v.dataStart || st.BlocksFree != st.Blocks-ck || ck == 0 || st.NameMax != 255 {
		t.Fatalf("statfs %+v", st)
	}
	if st.Files != 64<<20/bytesPerInode || st.FilesFree != st.Files-1 {
		t.Fatalf("statfs inodes %+v", st)
	}
}

func TestLookupCountsKeepInodes(t *testing.T) {
	v := newTestVolume(t, Options{TrackLookups: true})
	f := must[Attr](t)(v.Mknod(root, RootIno, "f", 0o644, 0)) // one reference
	must[Attr](t)(v.Lookup(root, RootIno, "f"))               // two
	ok(t, v.Unlink(root, RootIno, "f"))
	if a := must[Attr](t)(v.GetAttr(f.Ino)); a.Nlink != 0 {
		t.Fatalf("unlinked but referenced inode: %+v", a)
	}
	v.Forget(f.Ino, 1)
	must[Attr](t)(v.GetAttr(f.Ino))
	v.Forget(f.Ino, 1)
	_, err := v.GetAttr(f.Ino)
	wantErrno(t, err, syscall.ENOENT)

	// A removed directory that is still referenced refuses new entries.
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755))
	ok(t, v.Rmdir(root, RootIno, "d"))
	_, err = v.Mknod(root, d.Ino, "x", 0o644, 0)
	wantErrno(t, err, syscall.ENOENT)
	v.Forget(d.Ino, 1)
}

func TestCheckReportsEveryProblem(t *testing.T) {
	v := newTestVolume(t, Options{})
	a := must[Attr](t)(v.Mknod(root, RootIno, "a", 0o644, 0))
	b := must[Attr](t)(v.Mkdir(root, RootIno, "b", 0o755))
	na, nb := v.inodes.get(a.Ino), v.inodes.get(b.Ino)
	na.nlink = 5
	nb.dirOf().parent = 42
	problems := v.Check()
	if len(problems) != 2 {
		t.Fatalf("Check found %v, want the link count and the parent", problems)
	}
	na.nlink, nb.dirOf().parent = 1, RootIno
	if p := v.Check(); len(p) != 0 {
		t.Fatalf("Check after repair: %v", p)
	}
}

func TestListingOrder(t *testing.T) {
	v := newTestVolume(t, Options{})
	for _, n := range []string{"c", "a", "b"} {
		must[Attr](t)(v.Mknod(root, RootIno, n, 0o644, 0))
	}
	// Listings are in creation (cookie) order, not name order.
	if got := names(t, v, RootIno); !slices.Equal(got, []string{"c", "a", "b"}) {
		t.Fatalf("listing %q", got)
	}
}
