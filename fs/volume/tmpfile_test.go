package volume

import (
	"bytes"
	"slices"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

func TestTmpfile(t *testing.T) {
	v := newTestVolume(t, Options{})
	dir := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o2755)).Ino
	a, h, err := v.Tmpfile(Context{UID: 5, GID: 6}, dir, 0o600, syscall.O_RDWR)
	ok(t, err)
	if a.Nlink != 0 || a.Mode != syscall.S_IFREG|0o600 || a.UID != 5 || a.GID != 0 {
		t.Fatalf("tmpfile attributes %+v: want nlink 0, mode 0100600, uid 5, gid of the setgid directory", a)
	}
	if len(names(t, v, dir)) != 0 {
		t.Fatal("tmpfile shows in its directory")
	}
	data := pattern(9000, 1)
	must[int](t)(h.WriteAt(data, 0))
	b := must[Attr](t)(v.Link(root, a.Ino, dir, "named"))
	if b.Nlink != 1 {
		t.Fatalf("linked tmpfile nlink %d", b.Nlink)
	}
	ok(t, h.Release())
	if got := readFile(t, v, a.Ino); !bytes.Equal(got, data) {
		t.Fatal("linked tmpfile content differs")
	}
	// Named once, it is an ordinary file: unlinked while open, it cannot
	// be linked again.
	h = must[*Handle](t)(v.OpenFile(a.Ino, syscall.O_RDONLY))
	ok(t, v.Unlink(root, dir, "named"))
	_, err = v.Link(root, a.Ino, dir, "again")
	wantErrno(t, err, syscall.ENOENT)
	ok(t, h.Release())
}

func TestTmpfileNotLinked(t *testing.T) {
	v := newTestVolume(t, Options{})
	free := v.StatFS().BlocksFree
	a, h, err := v.Tmpfile(root, RootIno, 0o644, syscall.O_WRONLY|syscall.O_EXCL)
	ok(t, err)
	must[int](t)(h.WriteAt(pattern(100<<10, 2), 0))
	ok(t, h.Fsync(false)) // blocks allocated and committed
	_, err = v.Link(root, a.Ino, RootIno, "x")
	wantErrno(t, err, syscall.ENOENT) // O_EXCL: never linkable
	ok(t, h.Release())
	if _, err := v.GetAttr(a.Ino); err == nil {
		t.Fatal("released tmpfile still exists")
	}
	ok(t, v.Sync()) // the frees wait for a commit
	if got := v.StatFS().BlocksFree; got != free {
		t.Fatalf("%d blocks free after the tmpfile went, %d before", got, free)
	}
	_, _, err = v.Tmpfile(root, RootIno, 0o644, syscall.O_RDONLY)
	wantErrno(t, err, syscall.EINVAL)
	f := must[Attr](t)(v.Mknod(root, RootIno, "f", 0o644, 0))
	_, _, err = v.Tmpfile(root, f.Ino, 0o644, syscall.O_RDWR)
	wantErrno(t, err, syscall.ENOTDIR)
}

func TestTmpfileLookups(t *testing.T) {
	v := newTestVolume(t, Options{TrackLookups: true})
	a, h, err := v.Tmpfile(root, RootIno, 0o644, syscall.O_RDWR)
	ok(t, err)
	ok(t, h.Release())
	if _, err := v.GetAttr(a.Ino); err != nil {
		t.Fatalf("tmpfile the kernel still references: %v", err)
	}
	v.Forget(a.Ino, 1)
	if _, err := v.GetAttr(a.Ino); err == nil {
		t.Fatal("forgotten tmpfile still exists")
	}
}

// TestTmpfileCrash: a crash frees a tmpfile, even one with durable data;
// one linked before the crash survives.
func TestTmpfileCrash(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	tmp, h, err := v.Tmpfile(root, RootIno, 0o644, syscall.O_RDWR)
	ok(t, err)
	must[int](t)(h.WriteAt(pattern(50000, 3), 0))
	ok(t, h.Fsync(false))
	kept, k, err := v.Tmpfile(root, RootIno, 0o644, syscall.O_RDWR)
	ok(t, err)
	data := pattern(7000, 4)
	must[int](t)(k.WriteAt(data, 0))
	must[Attr](t)(v.Link(root, kept.Ino, RootIno, "kept"))
	ok(t, k.Fsync(false))
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	r, err := Open(img, Options{CommitInterval: -1})
	ok(t, err)
	checkOK(t, r, img, "after the crash")
	if rec := r.Recovery(); !slices.Equal(rec.Orphans, []Ino{tmp.Ino}) {
		t.Fatalf("orphans %v, want the tmpfile %d", rec.Orphans, tmp.Ino)
	}
	if got := readFile(t, r, must[Attr](t)(r.Lookup(root, RootIno, "kept")).Ino); !bytes.Equal(got, data) {
		t.Fatal("linked tmpfile differs after the crash")
	}
	ok(t, r.Close())
	ok(t, h.Release())
	ok(t, k.Release())
	ok(t, v.Close())
}
