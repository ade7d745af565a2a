package volume

import (
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestAccessed: under relatime an access updates the access time when it
// is not after the last change, or a day old, and only then; strictatime
// at every access; noatime never. ctime stays; the update is logged and
// survives a crash after the next commit.
func TestAccessed(t *testing.T) {
	c := device.NewCrash(16<<20, 1)
	ok(t, Mkfs(c, MkfsOptions{}))
	v, err := Open(c, Options{CommitInterval: -1})
	ok(t, err)
	clock := int64(1_000_000_000_000)
	v.now = func() int64 { return clock }
	ino := must[Attr](t)(v.Mknod(root, RootIno, "f", 0o644, 0)).Ino
	access := func(policy AtimePolicy, want bool) Attr {
		t.Helper()
		clock += 1000
		if got := must[bool](t)(v.Accessed(ino, policy)); got != want {
			t.Fatalf("access at %d (policy %d): updated %v, want %v", clock, policy, got, want)
		}
		a := must[Attr](t)(v.GetAttr(ino))
		if want && a.Atime != clock {
			t.Fatalf("atime %d after an update at %d", a.Atime, clock)
		}
		return a
	}
	created := must[Attr](t)(v.GetAttr(ino))
	a := access(AtimeRelative, true) // atime == ctime: not after the change
	if a.Ctime != created.Ctime || a.Mtime != created.Mtime {
		t.Errorf("an access moved ctime %d -> %d or mtime %d -> %d", created.Ctime, a.Ctime, created.Mtime, a.Mtime)
	}
	access(AtimeRelative, false) // read since the change
	access(AtimeNever, false)
	clock += 1000
	must[Attr](t)(v.SetAttr(root, ino, SetAttrIn{Valid: SetMode, Mode: 0o600})) // a change
	access(AtimeRelative, true)
	access(AtimeRelative, false)
	clock += relatimeAge
	access(AtimeRelative, true) // a day old
	access(AtimeStrict, true)
	access(AtimeStrict, true)
	last := access(AtimeRelative, false)
	_, err = v.Accessed(999, AtimeRelative)
	wantErrno(t, err, syscall.ENOENT)

	ok(t, v.Sync())
	img := must[*device.Mem](t)(c.Crash(device.DropUnflushed))
	v2, err := Open(img, Options{CommitInterval: -1})
	ok(t, err)
	if got := must[Attr](t)(v2.GetAttr(ino)).Atime; got != last.Atime {
		t.Errorf("atime after a crash %d, want %d", got, last.Atime)
	}
	ok(t, v2.Close())
	ok(t, v.Close())
}
