package volume

import (
	"bytes"
	"slices"
	"strings"
	"syscall"
	"testing"
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
	wantErrno(t, v.SetXattr(f.Ino, "user.more", make([]byte, 200), 0), syscall.ENOSPC)
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
