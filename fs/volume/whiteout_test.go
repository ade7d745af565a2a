package volume

import (
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestRenameWhiteout: RENAME_WHITEOUT moves the name and leaves a
// whiteout at the old one (a character device 0/0 with no permission
// bits, owned by the caller, as ext4 makes it), in one transaction. It
// works for files and directories, replacing a target or (with
// NOREPLACE) refusing one, and not with EXCHANGE. It once answered EINVAL,
// which leaves overlayfs without it in its upper layer.
func TestRenameWhiteout(t *testing.T) {
	dev := device.NewMem(8 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	v, err := Open(dev, Options{CommitInterval: -1})
	ok(t, err)
	user := Context{UID: 1000, GID: 1000}
	sub := must[Attr](t)(v.Mkdir(root, RootIno, "sub", 0o755))
	f := must[Attr](t)(v.Mknod(root, RootIno, "f", 0o644, 0))
	d := must[Attr](t)(v.Mkdir(root, RootIno, "d", 0o755))
	must[Attr](t)(v.Mknod(root, sub.Ino, "old", 0o644, 0))

	isWhiteout := func(dir Ino, name string, owner Context) {
		t.Helper()
		a, err := v.Lookup(root, dir, name)
		if err != nil {
			t.Fatalf("whiteout %q: %v", name, err)
		}
		if a.Mode != syscall.S_IFCHR || a.Rdev != 0 || a.Nlink != 1 || a.UID != owner.UID || a.GID != owner.GID {
			t.Errorf("whiteout %q: mode %#o rdev %d nlink %d owner %d:%d; want %#o 0/0, 1 link, %d:%d",
				name, a.Mode, a.Rdev, a.Nlink, a.UID, a.GID, syscall.S_IFCHR, owner.UID, owner.GID)
		}
	}
	moved := func(dir Ino, name string, want Ino) {
		t.Helper()
		if a, err := v.Lookup(root, dir, name); err != nil || a.Ino != want {
			t.Errorf("%q after the rename: inode %d, %v; want %d", name, a.Ino, err, want)
		}
	}

	seq := v.j.Last()
	ok(t, v.Rename(user, RootIno, "f", sub.Ino, "old", RenameWhiteout))
	if n := v.j.Last() - seq; n != 1 {
		t.Errorf("rename with whiteout took %d transactions, want 1", n)
	}
	moved(sub.Ino, "old", f.Ino)
	isWhiteout(RootIno, "f", user)

	ok(t, v.Rename(root, RootIno, "d", sub.Ino, "d2", RenameWhiteout|RenameNoReplace))
	moved(sub.Ino, "d2", d.Ino)
	isWhiteout(RootIno, "d", root)
	if a := must[Attr](t)(v.GetAttr(RootIno)); a.Nlink != 3 { // ".", "..", sub
		t.Errorf("root has %d links after its subdirectory moved out, want 3", a.Nlink)
	}

	wantErrno(t, v.Rename(root, sub.Ino, "old", sub.Ino, "d2", RenameWhiteout|RenameNoReplace), syscall.EEXIST)
	wantErrno(t, v.Rename(root, sub.Ino, "old", sub.Ino, "d2", RenameWhiteout|RenameExchange), syscall.EINVAL)
	wantErrno(t, v.Rename(root, sub.Ino, "old", sub.Ino, "d2", RenameWhiteout), syscall.EISDIR)
	moved(sub.Ino, "old", f.Ino) // the refusals changed nothing
	checkOK(t, v, dev, "after the renames")
	ok(t, v.Sync())

	crashed, err := Open(dev.Clone(), Options{CommitInterval: -1}) // replays the log
	ok(t, err)
	checkOK(t, crashed, dev, "after replay")
	ok(t, crashed.Close())
	ok(t, v.Close())
	v, err = Open(dev.Reopen(), Options{CommitInterval: -1})
	ok(t, err)
	isWhiteout(RootIno, "f", user)
	isWhiteout(RootIno, "d", root)
	checkOK(t, v, dev, "after reopen")
	ok(t, v.Close())
}
