package device

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/smallfs/smallfs/internal/looptest"
)

// image makes a 1 MiB image file in a fresh directory.
func image(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// openFree opens a device the test expects no one to hold; systemd-udevd
// may hold a shared flock of a block device for a moment after a change.
func openFree(t *testing.T, path string, opts Options) *File {
	t.Helper()
	for i := 0; ; i++ {
		d, err := Open(path, opts)
		if err == nil {
			return d
		}
		if !errors.Is(err, ErrLocked) || i == 1000 {
			t.Fatalf("open %s: %v", path, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func same(t *testing.T, a, b string) bool {
	t.Helper()
	ok, err := SameStorage(a, b)
	if err != nil {
		t.Fatalf("SameStorage(%s, %s): %v", a, b, err)
	}
	return ok
}

func TestSameStorageFiles(t *testing.T) {
	img := image(t, "img")
	link := filepath.Join(filepath.Dir(img), "link")
	sym := filepath.Join(filepath.Dir(img), "sym")
	if err := os.Link(img, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("img", sym); err != nil {
		t.Fatal(err)
	}
	other := image(t, "other") // same content, another inode
	for _, c := range []struct {
		a, b string
		want bool
	}{{img, img, true}, {img, link, true}, {sym, link, true}, {img, other, false}} {
		if got := same(t, c.a, c.b); got != c.want {
			t.Errorf("SameStorage(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if _, err := SameStorage(img, filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, err := SameStorage(t.TempDir(), img); !errors.Is(err, ErrNotDevice) {
		t.Errorf("directory: %v", err)
	}
}

// TestLockFollowsInode: the lock is the inode's, so a second name (a hard
// link) of a mounted image is refused like the first.
func TestLockFollowsInode(t *testing.T) {
	img := image(t, "img")
	link := filepath.Join(filepath.Dir(img), "link")
	if err := os.Link(img, link); err != nil {
		t.Fatal(err)
	}
	d, err := Open(img, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, Options{}); !errors.Is(err, ErrLocked) {
		t.Errorf("writer through a hard link: %v, want ErrLocked", err)
	}
	if _, err := Open(link, Options{ReadOnly: true}); !errors.Is(err, ErrLocked) {
		t.Errorf("reader through a hard link: %v, want ErrLocked", err)
	}
	d.Close()
	if d, err = Open(link, Options{}); err != nil {
		t.Fatalf("after close: %v", err)
	}
	d.Close()
}

func TestLoopExcludesBackingFile(t *testing.T) {
	img := image(t, "img")
	loop := looptest.Attach(t, img)

	if !same(t, img, loop) || !same(t, loop, img) || !same(t, loop, loop) {
		t.Errorf("%s and the file behind it are not the same storage", loop)
	}
	if same(t, loop, image(t, "other")) {
		t.Errorf("%s and an unrelated file are the same storage", loop)
	}
	if loop2 := looptest.Attach(t, img); !same(t, loop, loop2) {
		t.Errorf("two loop devices over one file are not the same storage")
	}

	for _, first := range []string{img, loop} {
		second := map[string]string{img: loop, loop: img}[first]
		w := openFree(t, first, Options{})
		if _, err := Open(second, Options{}); !errors.Is(err, ErrLocked) {
			t.Errorf("writer on %s beside a writer on %s: %v, want ErrLocked", second, first, err)
		}
		if _, err := Open(second, Options{ReadOnly: true}); !errors.Is(err, ErrLocked) {
			t.Errorf("reader on %s beside a writer on %s: %v, want ErrLocked", second, first, err)
		}
		peek, err := Open(second, Options{ReadOnly: true, NoLock: true})
		if err != nil {
			t.Errorf("nolock reader on %s beside a writer: %v", second, err)
		} else {
			peek.Close()
		}
		w.Close()

		r1, err := Open(first, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := Open(second, Options{ReadOnly: true})
		if err != nil {
			t.Errorf("readers on %s and %s share: %v", first, second, err)
		} else {
			r2.Close()
		}
		if _, err := Open(second, Options{}); !errors.Is(err, ErrLocked) {
			t.Errorf("writer on %s beside a reader on %s: %v, want ErrLocked", second, first, err)
		}
		r1.Close()
	}
	d := openFree(t, loop, Options{}) // every lock released
	if d.Size() != 1<<20 {
		t.Errorf("loop device size %d, want 1 MiB", d.Size())
	}
	d.Close()
}

// TestBlockDeviceBusy: a writer claims a block device exclusively, so a
// device the kernel (or anyone) holds is refused with ErrBusy; readers
// claim nothing.
func TestBlockDeviceBusy(t *testing.T) {
	loop := looptest.Attach(t, image(t, "img"))
	// An O_EXCL open is how the kernel's mounts claim a device too.
	fd, err := unix.Open(loop, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("claim %s: %v", loop, err)
	}
	if _, err := Open(loop, Options{}); !errors.Is(err, ErrBusy) {
		t.Errorf("writer on a claimed device: %v, want ErrBusy", err)
	}
	r, err := Open(loop, Options{ReadOnly: true})
	if err != nil {
		t.Errorf("reader on a claimed device: %v", err)
	} else {
		r.Close()
	}
	unix.Close(fd)

	w := openFree(t, loop, Options{})
	defer w.Close()
	if fd, err := unix.Open(loop, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0); !errors.Is(err, unix.EBUSY) {
		if err == nil {
			unix.Close(fd)
		}
		t.Errorf("exclusive open beside a writer: %v, want EBUSY", err)
	}
}
