package device

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	if _, err := Open(missing, Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrNotDevice) {
		t.Errorf("directory: %v", err)
	}
	if _, err := Open("/dev/null", Options{NoLock: true}); !errors.Is(err, ErrNotDevice) {
		t.Errorf("character device: %v", err)
	}
	small := filepath.Join(dir, "small")
	os.WriteFile(small, make([]byte, 4096), 0o600)
	if _, err := Open(small, Options{}); !errors.Is(err, ErrTooSmall) {
		t.Errorf("small: %v", err)
	}
	if _, err := Open(missing, Options{Create: true, Size: 4096}); !errors.Is(err, ErrTooSmall) {
		t.Errorf("create small: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("refused create left a file: %v", err)
	}
	if _, err := Open(missing, Options{Create: true, ReadOnly: true, Size: 1 << 20}); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("create read-only: %v", err)
	}
}

// allocated returns the bytes of path's blocks on its filesystem.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

func TestOpenCreatesAndExtends(t *testing.T) {
	for _, p := range []Prealloc{PreallocFalloc, PreallocOff, PreallocFull} {
		sparse := p == PreallocOff
		path := filepath.Join(t.TempDir(), "img")
		var reported []int64
		progress := func(done, total int64) {
			if total != 64<<20 {
				t.Errorf("progress total %d, want 64 MiB", total)
			}
			reported = append(reported, done)
		}
		d, err := Open(path, Options{Create: true, Size: 64 << 20, Prealloc: p, Progress: progress})
		if err != nil {
			t.Fatal(err)
		}
		if d.Fd() == 0 || d.Size() != 64<<20 {
			t.Errorf("fd %d size %d", d.Fd(), d.Size())
		}
		if want := p == PreallocFull; want != (len(reported) > 0 && reported[len(reported)-1] == 64<<20) {
			t.Errorf("%v: progress reported %v", p, reported)
		}
		switch got := allocated(t, path); {
		case sparse && got >= 1<<20:
			t.Errorf("sparse: %d bytes allocated, want (almost) none", got)
		case !sparse && got < 64<<20:
			t.Errorf("preallocated: %d bytes allocated, want 64 MiB", got)
		}
		d.Close()
		d, err = Open(path, Options{Create: true, Size: 128 << 20, Prealloc: p})
		if err != nil || d.Size() != 128<<20 {
			t.Fatalf("extend: %v %d", err, d.Size())
		}
		if got := allocated(t, path); !sparse && got < 128<<20 {
			t.Errorf("extended: %d bytes allocated, want 128 MiB", got)
		}
		if p == PreallocFull {
			// Written zeros leave no hole, not even an unwritten extent
			// (which ext4's SEEK_HOLE reports as one).
			hole, err := unix.Seek(int(d.Fd()), 0, unix.SEEK_HOLE)
			if err != nil || hole != 128<<20 {
				t.Errorf("full: first hole at %d (%v), want none before 128 MiB", hole, err)
			}
		}
		d.Close()
		d, err = Open(path, Options{Create: true, Size: 1 << 20, Prealloc: p})
		if err != nil || d.Size() != 128<<20 {
			t.Fatalf("create never shrinks: %v %d", err, d.Size())
		}
		d.Close()
	}
}

// TestCreateRefusedWithoutHostSpace: an image the host filesystem has no
// room for is refused at once, and no partial file is left behind.
func TestCreateRefusedWithoutHostSpace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	path := filepath.Join(dir, "img")
	_, err := Open(path, Options{Create: true, Size: 64 << 20})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("64 MiB image on an 8 MiB filesystem: %v, want ENOSPC", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused image was left behind: %v", err)
	}
	d, err := Open(path, Options{Create: true, Size: 64 << 20, Prealloc: PreallocOff})
	if err != nil {
		t.Fatalf("sparse: %v", err)
	}
	d.Close()
}

func TestOpenLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "img")
	rw, err := Open(path, Options{Create: true, Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrLocked) {
		t.Errorf("second writer: %v", err)
	}
	if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrLocked) {
		t.Errorf("reader beside writer: %v", err)
	}
	peek, err := Open(path, Options{ReadOnly: true, NoLock: true})
	if err != nil {
		t.Fatalf("nolock: %v", err)
	}
	if _, err := peek.WriteAt([]byte{1}, 0); !errors.Is(err, ErrReadOnly) {
		t.Errorf("write read-only: %v", err)
	}
	peek.Close()
	rw.Close()

	r1, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("readers share: %v", err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrLocked) {
		t.Errorf("writer beside readers: %v", err)
	}
	r1.Close()
	r2.Close()
	rw, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("lock released on close: %v", err)
	}
	rw.Close()
}

// TestOpenBlockDevice runs only where a block device is readable (set
// SMALLFS_TEST_BLOCKDEV=/dev/loopN); it checks the BLKGETSIZE64 path.
func TestOpenBlockDevice(t *testing.T) {
	path := os.Getenv("SMALLFS_TEST_BLOCKDEV")
	if path == "" {
		t.Skip("SMALLFS_TEST_BLOCKDEV not set")
	}
	d, err := Open(path, Options{ReadOnly: true, NoLock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Size() <= 0 {
		t.Fatalf("size %d", d.Size())
	}
	t.Logf("%s: %d bytes", path, d.Size())
}

// TestPrefetchReadsIntoTheCache drops an image file's pages from the
// host's cache, asks for a range, and waits for it to be resident.
func TestPrefetchReadsIntoTheCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	resident := func() int {
		m, err := unix.Mmap(int(d.Fd()), 0, 1<<20, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Munmap(m)
		vec := make([]byte, (1<<20)/os.Getpagesize())
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Fatal(e)
		}
		n := 0
		for _, b := range vec {
			n += int(b & 1)
		}
		return n
	}
	if err := unix.Fadvise(int(d.Fd()), 0, 1<<20, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if resident() != 0 {
		t.Skip("the host keeps this file's pages (tmpfs?): nothing to prefetch")
	}
	// Asked again now and then: another package's test may drop the
	// machine's caches (drop_caches) meanwhile, and the pages with them.
	want := (128 << 10) / os.Getpagesize()
	for i, deadline := 0, time.Now().Add(10*time.Second); resident() < want; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("%d pages resident 10 s after Prefetch of %d", resident(), want)
		}
		if i%20 == 0 {
			d.Prefetch(256<<10, 128<<10)
		}
		time.Sleep(10 * time.Millisecond)
	}
	d.Prefetch(1<<20, 4096) // past the end: nothing, no panic
	d.Prefetch(0, 0)
}
