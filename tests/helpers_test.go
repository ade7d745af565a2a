package tests

import (
	"bytes"
	"os"
	"slices"
	"syscall"
	"testing"
)

// must fails the test on err; the helpers below keep test bodies about
// filesystem behaviour, not error plumbing.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErrno fails unless err carries errno.
func wantErrno(t testing.TB, what string, err error, errno syscall.Errno) {
	t.Helper()
	var got syscall.Errno
	switch e := err.(type) {
	case nil:
		t.Errorf("%s: succeeded, want %v", what, errno)
		return
	case syscall.Errno:
		got = e
	case *os.PathError:
		got, _ = e.Err.(syscall.Errno)
	case *os.LinkError:
		got, _ = e.Err.(syscall.Errno)
	case *os.SyscallError:
		got, _ = e.Err.(syscall.Errno)
	}
	if got != errno {
		t.Errorf("%s: got %v, want %v", what, err, errno)
	}
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	must(t, os.WriteFile(path, data, 0o644))
}

func wantContent(t testing.TB, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("read %s: %v", path, err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: got %d bytes %.32q..., want %d bytes %.32q...", path, len(got), got, len(want), want)
	}
}

func lstat(t testing.TB, path string) syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Lstat(path, &st))
	return st
}

// names lists a directory through readdir, sorted, without "." and "..".
func names(t testing.TB, dir string) []string {
	t.Helper()
	f, err := os.Open(dir)
	must(t, err)
	defer f.Close()
	ns, err := f.Readdirnames(-1)
	must(t, err)
	slices.Sort(ns)
	return ns
}

// pattern returns n bytes that differ with seed and position, so misplaced
// or swapped blocks show.
func pattern(seed, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}
