package volume

import (
	"slices"
	"syscall"
	"testing"
)

func TestRename(t *testing.T) {
	v := newTestVolume(t, Options{})
	a := must[Attr](t)(v.Mkdir(root, RootIno, "a", 0o755))
	b := must[Attr](t)(v.Mkdir(root, RootIno, "b", 0o755))
	f := must[Attr](t)(v.Mknod(root, a.Ino, "f", 0o644, 0))
	g := must[Attr](t)(v.Mknod(root, b.Ino, "g", 0o644, 0))

	// Plain move across directories.
	ok(t, v.Rename(root, a.Ino, "f", b.Ino, "f2", 0))
	if got := must[Attr](t)(v.Lookup(root, b.Ino, "f2")); got.Ino != f.Ino {
		t.Fatalf("moved name points at %d", got.Ino)
	}
	_, err := v.Lookup(root, a.Ino, "f")
	wantErrno(t, err, syscall.ENOENT)

	// Over an existing file: the target loses its name and is freed.
	ok(t, v.Rename(root, b.Ino, "f2", b.Ino, "g", 0))
	_, err = v.GetAttr(g.Ino)
	wantErrno(t, err, syscall.ENOENT)
	if got := names(t, v, b.Ino); !slices.Equal(got, []string{"g"}) {
		t.Fatalf("b lists %q", got)
	}

	// Onto another link of the same inode: nothing happens.
	must[Attr](t)(v.Link(root, f.Ino, b.Ino, "h"))
	ok(t, v.Rename(root, b.Ino, "g", b.Ino, "h", 0))
	if got := names(t, v, b.Ino); !slices.Equal(got, []string{"g", "h"}) {
		t.Fatalf("b lists %q", got)
	}

	wantErrno(t, v.Rename(root, a.Ino, "missing", b.Ino, "x", 0), syscall.ENOENT)
	wantErrno(t, v.Rename(root, b.Ino, "g", a.Ino, "y", 1<<3), syscall.EINVAL)
	wantErrno(t, v.Rename(root, b.Ino, "g", a.Ino, "y", RenameExchange|RenameNoReplace), syscall.EINVAL)
}

func TestRenameDirectories(t *testing.T) {
	v := newTestVolume(t, Options{})
	a := must[Attr](t)(v.Mkdir(root, RootIno, "a", 0o755))
	sub := must[Attr](t)(v.Mkdir(root, a.Ino, "sub", 0o755))
	deep := must[Attr](t)(v.Mkdir(root, sub.Ino, "deep", 0o755))
	must[Attr](t)(v.Mknod(root, deep.Ino, "f", 0o644, 0))
	empty := must[Attr](t)(v.Mkdir(root, RootIno, "empty", 0o755))
	must[Attr](t)(v.Mknod(root, RootIno, "file", 0o644, 0))

	wantErrno(t, v.Rename(root, RootIno, "a", deep.Ino, "loop", 0), syscall.EINVAL)
	wantErrno(t, v.Rename(root, RootIno, "a", a.Ino, "self", 0), syscall.EINVAL)
	wantErrno(t, v.Rename(root, RootIno, "a", RootIno, "file", 0), syscall.ENOTDIR)
	wantErrno(t, v.Rename(root, RootIno, "file", RootIno, "empty", 0), syscall.EISDIR)
	wantErrno(t, v.Rename(root, RootIno, "empty", a.Ino, "sub", 0), syscall.ENOTEMPTY)
	wantErrno(t, v.Rename(root, RootIno, "file", RootIno, "a", RenameNoReplace), syscall.EEXIST)

	// Move sub up to the root, replacing the empty directory.
	ok(t, v.Rename(root, a.Ino, "sub", RootIno, "empty", 0))
	_, err := v.GetAttr(empty.Ino)
	wantErrno(t, err, syscall.ENOENT)
	if got := must[Attr](t)(v.Lookup(root, sub.Ino, "..")); got.Ino != RootIno {
		t.Fatalf("moved directory's parent is %d", got.Ino)
	}
	if n := must[Attr](t)(v.GetAttr(a.Ino)).Nlink; n != 2 {
		t.Fatalf("old parent nlink %d, want 2", n)
	}
	if n := must[Attr](t)(v.GetAttr(RootIno)).Nlink; n != 4 { // a, empty->sub, plus . and ..
		t.Fatalf("root nlink %d, want 4", n)
	}
}

func TestRenameExchange(t *testing.T) {
	v := newTestVolume(t, Options{})
	a := must[Attr](t)(v.Mkdir(root, RootIno, "a", 0o755))
	d := must[Attr](t)(v.Mkdir(root, a.Ino, "d", 0o755))
	f := must[Attr](t)(v.Mknod(root, RootIno, "f", 0o644, 0))
	var before []DirEntry
	ok(t, v.ReadDir(RootIno, 0, 0, func(e DirEntry) bool { before = append(before, e); return true }))

	wantErrno(t, v.Rename(root, RootIno, "f", a.Ino, "nope", RenameExchange), syscall.ENOENT)
	wantErrno(t, v.Rename(root, RootIno, "a", a.Ino, "d", RenameExchange), syscall.EINVAL)

	// A file and a directory in different parents swap; link counts follow
	// the directory and each name keeps its cookie.
	ok(t, v.Rename(root, RootIno, "f", a.Ino, "d", RenameExchange))
	if got := must[Attr](t)(v.Lookup(root, RootIno, "f")); got.Ino != d.Ino || got.Nlink != 2 {
		t.Fatalf("root/f is %+v", got)
	}
	if got := must[Attr](t)(v.Lookup(root, a.Ino, "d")); got.Ino != f.Ino {
		t.Fatalf("a/d is %d", got.Ino)
	}
	if got := must[Attr](t)(v.Lookup(root, d.Ino, "..")); got.Ino != RootIno {
		t.Fatalf("exchanged directory's parent %d", got.Ino)
	}
	if n := must[Attr](t)(v.GetAttr(a.Ino)).Nlink; n != 2 {
		t.Fatalf("a nlink %d", n)
	}
	var after []DirEntry
	ok(t, v.ReadDir(RootIno, 0, 0, func(e DirEntry) bool { after = append(after, e); return true }))
	if len(after) != len(before) || after[1].Cookie != before[1].Cookie || after[1].Ino != d.Ino {
		t.Fatalf("listing before %v, after %v", before, after)
	}
}
