package volume

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// TestCloseConcurrent: two Closes at once do the work once; the second
// waits for the first and gives ErrClosed. The first is held inside its
// write-back (the test holds wbGate, which every write-back shares), so
// the second surely starts while the first is under way; it once closed
// the commit's stop channel a second time and panicked.
func TestCloseConcurrent(t *testing.T) {
	dev := device.NewMem(64 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	v, err := Open(dev, Options{CommitInterval: -1, DirtyExpire: -1})
	ok(t, err)
	_, h, err := v.Create(root, RootIno, "f", 0o644, syscall.O_RDWR)
	ok(t, err)
	if _, err := h.WriteAt([]byte(strings.Repeat("x", 5000)), 0); err != nil {
		t.Fatal(err)
	}
	v.wbGate.Lock() // the first Close waits here in its write-back
	results := make(chan error, 2)
	closeOnce := func() {
		defer func() {
			if r := recover(); r != nil {
				results <- fmt.Errorf("panic: %v", r)
			}
		}()
		results <- v.Close()
	}
	go closeOnce()
	go closeOnce()
	// Wait until one Close waits for the other, or one has returned.
	for !stackHas("sync.(*Once).doSlow", "(*Volume).Close") && len(results) == 0 {
		runtime.Gosched()
	}
	v.wbGate.Unlock()
	var closed, nils int
	for range 2 {
		switch err := <-results; {
		case err == nil:
			nils++
		case errors.Is(err, ErrClosed):
			closed++
		default:
			t.Errorf("Close: %v", err)
		}
	}
	if nils != 1 || closed != 1 {
		t.Errorf("two Closes: %d succeeded, %d gave ErrClosed; want one of each", nils, closed)
	}
	if err := v.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("Close after Close: %v, want ErrClosed", err)
	}
	v2, err := Open(dev.Reopen(), Options{CommitInterval: -1})
	ok(t, err)
	defer v2.Close()
	if !v2.Recovery().Clean {
		t.Error("reopened volume was not closed cleanly")
	}
	a, err := v2.Lookup(root, RootIno, "f")
	ok(t, err)
	if a.Size != 5000 {
		t.Errorf("size after close and reopen: %d, want 5000", a.Size)
	}
}

// stackHas reports whether some goroutine's stack holds all of frames.
func stackHas(frames ...string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		all := true
		for _, f := range frames {
			all = all && strings.Contains(g, f)
		}
		if all {
			return true
		}
	}
	return false
}

// TestCloseFreesUnlinked: an inode without links that the kernel still
// referenced (its FORGET lost at unmount), one still open, and an
// O_TMPFILE never linked are freed by a clean Close: the volume that
// opens next has no orphan to free, which fsck would report as a
// problem of a cleanly closed volume.
func TestCloseFreesUnlinked(t *testing.T) {
	dev := device.NewMem(64 << 20)
	ok(t, Mkfs(dev, MkfsOptions{}))
	opts := Options{CommitInterval: -1, TrackLookups: true}
	v, err := Open(dev, opts)
	ok(t, err)
	for _, name := range []string{"looked-up", "open"} {
		_, h, err := v.Create(root, RootIno, name, 0o644, syscall.O_RDWR)
		ok(t, err)
		if _, err := h.WriteAt([]byte("data"+strings.Repeat("x", 5000)), 0); err != nil {
			t.Fatal(err)
		}
		if name == "looked-up" {
			ok(t, h.Release()) // the entry Create returned is the kernel's reference
		}
		ok(t, v.Unlink(root, RootIno, name))
	}
	_, tmp, err := v.Tmpfile(root, RootIno, 0o600, syscall.O_RDWR)
	ok(t, err)
	if _, err := tmp.WriteAt([]byte("tmp"), 0); err != nil {
		t.Fatal(err)
	}
	ok(t, v.Close())
	v2, err := Open(dev.Reopen(), opts)
	ok(t, err)
	defer v2.Close()
	if r := v2.Recovery(); !r.Clean || len(r.Orphans) != 0 {
		t.Fatalf("after a clean Close: clean %v, orphans %v; want clean and none", r.Clean, r.Orphans)
	}
	if st := v2.StatFS(); st.Files-st.FilesFree != 1 {
		t.Errorf("%d inodes in use after Close, want the root only", st.Files-st.FilesFree)
	}
	checkOK(t, v2, dev, "after reopen")
}
