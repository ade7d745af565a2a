package volume

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

func TestXattrs(t *testing.T) {
	v := newTestVolume(t, Options{})
	f := must[Attr](t)(v.Mknod(root, RootIno, "f", 0o644, 0))

	ok(t, v.SetXattr(f.Ino, "user.a", []byte("1"), 0))
	ok(t, v.SetXattr(f.Ino, "user.b", nil, XattrCreate))
	wantErrno(t, v.SetXattr(f.Ino, "user.a", []byte("2"), XattrCreate), syscall.EEXIST)
	wantErrno(t, v.SetXattr(f.Ino, "user.c", []byte("2"), XattrReplace), syscall.ENODATA)
	ok(t, v.SetXattr(f.Ino, "user.a", []byte("22"), XattrReplace))
	if got := must[[]byte](t)(v.GetXattr(f.Ino, "user.a")); !bytes.Equal(got, []byte("22")) {
		t.Fatalf("getxattr %q", got)
	}
	if got := must[[]string](t)(v.ListXattr(f.Ino)); !slices.Equal(got, []string{"user.a", "user.b"}) {
		t.Fatalf("listxattr %q", got)
	}
	ok(t, v.RemoveXattr(f.Ino, "user.a"))
	wantErrno(t, v.RemoveXattr(f.Ino, "user.a"), syscall.ENODATA)
	_, err := v.GetXattr(f.Ino, "user.a")
	wantErrno(t, err, syscall.ENODATA)

	wantErrno(t, v.SetXattr(f.Ino, "", nil, 0), syscall.ERANGE)
	wantErrno(t, v.SetXattr(f.Ino, strings.Repeat("n", MaxXattrNameLen+1), nil, 0), syscall.ERANGE)
	wantErrno(t, v.SetXattr(f.Ino, "user.big", make([]byte, MaxXattrValueLen+1), 0), syscall.E2BIG)
	wantErrno(t, v.SetXattr(f.Ino, "user.x", nil, 3), syscall.EINVAL)
	ok(t, v.SetXattr(f.Ino, "user.big", make([]byte, MaxXattrValueLen-100), 0))
	for _, name := range []string{"user.big1", "user.big2", "user.big3"} {
		ok(t, v.SetXattr(f.Ino, name, make([]byte, MaxXattrValueLen), 0))
	}
	wantErrno(t, v.SetXattr(f.Ino, "user.more", make([]byte, 200), 0), syscall.ENOSPC) // MaxXattrTotal
	wantErrno(t, v.SetXattr(999, "user.a", nil, 0), syscall.ENOENT)

	// The value is copied in and out.
	val := []byte("abc")
	ok(t, v.SetXattr(RootIno, "user.r", val, 0))
	val[0] = 'X'
	got := must[[]byte](t)(v.GetXattr(RootIno, "user.r"))
	got[1] = 'Y'
	if again := must[[]byte](t)(v.GetXattr(RootIno, "user.r")); string(again) != "abc" {
		t.Fatalf("stored value changed to %q", again)
	}
}

// TestXattrNames: names follow ext4's rules: a namespace prefix with
// nothing after it is EINVAL, a name in no namespace the kernel knows
// EOPNOTSUPP, for set, get and remove alike. "user." was once stored.
func TestXattrNames(t *testing.T) {
	v := newTestVolume(t, Options{})
	f := must[Attr](t)(v.Mknod(root, RootIno, "f", 0o644, 0))
	for _, tc := range []struct {
		name  string
		errno syscall.Errno
	}{
		{"user.", syscall.EINVAL},
		{"trusted.", syscall.EINVAL},
		{"security.", syscall.EINVAL},
		{"system.", syscall.EOPNOTSUPP},
		{"user", syscall.EOPNOTSUPP},
		{"foo.bar", syscall.EOPNOTSUPP},
		{"x", syscall.EOPNOTSUPP},
	} {
		wantErrno(t, v.SetXattr(f.Ino, tc.name, []byte("v"), 0), tc.errno)
		_, err := v.GetXattr(f.Ino, tc.name)
		wantErrno(t, err, tc.errno)
		wantErrno(t, v.RemoveXattr(f.Ino, tc.name), tc.errno)
	}
	for _, name := range []string{"user.a", "trusted.overlay.opaque", "security.x", "system.y"} {
		ok(t, v.SetXattr(f.Ino, name, []byte("v"), 0))
	}
}

// TestXattrLargest: a value of XATTR_SIZE_MAX (65,536 bytes) under the
// longest name is accepted on an empty volume and survives a reopen; so
// is a second one. The names of one inode are bounded by what
// listxattr(2) can return (XATTR_LIST_MAX). A 64 KiB value once got
// ENOSPC: the per-inode total counted its name too.
func TestXattrLargest(t *testing.T) {
	dev := device.NewMem(8 << 20) // the smallest log mkfs makes: 256 KiB
	ok(t, Mkfs(dev, MkfsOptions{}))
	v, err := Open(dev, Options{CommitInterval: -1})
	ok(t, err)
	f := must[Attr](t)(v.Mknod(root, RootIno, "f", 0o644, 0))
	long := "user." + strings.Repeat("n", MaxXattrNameLen-len("user."))
	big := bytes.Repeat([]byte{0xa5}, MaxXattrValueLen)
	ok(t, v.SetXattr(f.Ino, long, big, 0))
	ok(t, v.SetXattr(f.Ino, "user.second", big, 0))
	ok(t, v.Sync())
	crashed, err := Open(dev.Clone(), Options{CommitInterval: -1}) // replays the log
	ok(t, err)
	if got := must[[]byte](t)(crashed.GetXattr(f.Ino, long)); !bytes.Equal(got, big) {
		t.Errorf("after replay: %d bytes, want %d", len(got), len(big))
	}
	ok(t, crashed.Close())

	g := must[Attr](t)(v.Mknod(root, RootIno, "g", 0o644, 0))
	var names int
	for i := 0; ; i++ {
		name := fmt.Sprintf("user.%0250d", i)
		err := v.SetXattr(g.Ino, name, nil, 0)
		if err != nil {
			wantErrno(t, err, syscall.ENOSPC)
			break
		}
		names += len(name) + 1
	}
	if names > MaxXattrList || names+256 <= MaxXattrList {
		t.Errorf("names of one inode took %d bytes with their NULs before ENOSPC, want up to %d", names, MaxXattrList)
	}
	ok(t, v.Close())

	v, err = Open(dev.Reopen(), Options{CommitInterval: -1})
	ok(t, err)
	defer v.Close()
	for _, name := range []string{long, "user.second"} {
		if got := must[[]byte](t)(v.GetXattr(f.Ino, name)); !bytes.Equal(got, big) {
			t.Errorf("%.12s... after reopen: %d bytes, want %d", name, len(got), len(big))
		}
	}
}
