package device

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
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

func TestOpenCreatesSparseAndExtends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "img")
	d, err := Open(path, Options{Create: true, Size: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 64<<20 || st.Blocks*512 >= 1<<20 {
		t.Errorf("size %d, allocated %d bytes: want a sparse 64 MiB file", st.Size, st.Blocks*512)
	}
	if d.Fd() == 0 || d.Size() != 64<<20 {
		t.Errorf("fd %d size %d", d.Fd(), d.Size())
	}
	d.Close()
	d, err = Open(path, Options{Create: true, Size: 128 << 20})
	if err != nil || d.Size() != 128<<20 {
		t.Fatalf("extend: %v %d", err, d.Size())
	}
	d.Close()
	d, err = Open(path, Options{Create: true, Size: 1 << 20})
	if err != nil || d.Size() != 128<<20 {
		t.Fatalf("create never shrinks: %v %d", err, d.Size())
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
