package volume

import (
	"syscall"
	"testing"
)

// TestCreateExistingOpensWhatTheNameHeld: Create over an existing name
// opens the inode the name held when Create looked, whatever happens to
// the name once the metadata lock is dropped. It once looked the name up,
// dropped the lock and opened by inode number: a file unlinked in between
// and its number reused opened another file, and the handle leaked
// behind the error of the name's second lookup.
func TestCreateExistingOpensWhatTheNameHeld(t *testing.T) {
	v := newTestVolume(t, Options{})
	a, h, err := v.Create(root, RootIno, "a", 0o644, syscall.O_RDWR)
	ok(t, err)
	if _, err := h.WriteAt([]byte("aaaa"), 0); err != nil {
		t.Fatal(err)
	}
	ok(t, h.Release())
	testHookOpenExisting = func() {
		testHookOpenExisting = nil
		ok(t, v.Unlink(root, RootIno, "a"))
		_, hb, err := v.Create(root, RootIno, "b", 0o644, syscall.O_RDWR)
		ok(t, err)
		if _, err := hb.WriteAt([]byte("bbbb"), 0); err != nil {
			t.Error(err)
		}
		ok(t, hb.Release())
	}
	defer func() { testHookOpenExisting = nil }()
	got, h, err := v.Create(root, RootIno, "a", 0o644, syscall.O_RDWR)
	if err != nil {
		if h != nil {
			t.Fatalf("Create over an existing name failed (%v) and returned a handle on inode %d", err, h.Ino())
		}
		return
	}
	defer h.Release()
	if h.Ino() != a.Ino || got.Ino != a.Ino {
		t.Fatalf("Create over \"a\" (inode %d) opened inode %d, attributes of %d", a.Ino, h.Ino(), got.Ino)
	}
	buf := make([]byte, 4)
	if n, _ := h.ReadAt(buf, 0); string(buf[:n]) != "aaaa" {
		t.Errorf("read %q, want aaaa", buf[:n])
	}
}
