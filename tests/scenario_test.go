package tests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	sfuse "github.com/smallfs/smallfs/fs/fuse"
)

// TestLargeDirectory fills one directory with 10^5 names, lists it with
// names only and with attributes, and removes a tenth of it. It moves no
// data, so it mounts with 128 KiB requests: under -race, go-fuse's request
// buffers of MaxWrite bytes dominate the run (the race detector makes
// sync.Pool drop buffers at random, and each is reallocated and cleared).
func TestLargeDirectory(t *testing.T) {
	t.Parallel()
	m := newMount(t, func(c *config) { c.mount.MaxWrite = 128 << 10 })
	const n = 100_000
	dir := m.path("big")
	must(t, os.Mkdir(dir, 0o755))
	name := func(i int) string { return fmt.Sprintf("entry-%06d", i) }
	parallel(t, 2, n, func(i int) error {
		return syscall.Mknod(filepath.Join(dir, name(i)), syscall.S_IFREG|0o644, 0)
	})
	want := make([]string, n)
	for i := range want {
		want[i] = name(i)
	}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Fatalf("listing has %d names, want %d (first difference near %q)", len(got), n, firstDiff(got, want))
	}
	// ls -l: every entry with its attributes.
	es, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range es {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() != 0 {
			t.Fatalf("%s: %v %v", e.Name(), info, err)
		}
	}
	if st := lstat(t, dir); st.Nlink != 2 {
		t.Errorf("nlink of a directory of files: %d", st.Nlink)
	}
	parallel(t, 2, n/10, func(i int) error { return syscall.Unlink(filepath.Join(dir, name(10*i))) })
	want = want[:0]
	for i := range n {
		if i%10 != 0 {
			want = append(want, name(i))
		}
	}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after removing a tenth: %d names, want %d (near %q)", len(got), len(want), firstDiff(got, want))
	}
}

// parallel runs fn(0..n-1) on workers goroutines and fails on the first
// error.
func parallel(t testing.TB, workers, n int, fn func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + " / " + b[i]
		}
	}
	return "the end"
}

// TestReaddirUnderChange lists a directory in small getdents batches while
// other names come and go: names present throughout appear exactly once.
func TestReaddirUnderChange(t *testing.T) {
	m := newMount(t)
	dir := m.path("d")
	must(t, os.Mkdir(dir, 0o755))
	const stable = 2000
	for i := range stable {
		must(t, syscall.Mknod(filepath.Join(dir, fmt.Sprintf("s%05d", i)), syscall.S_IFREG|0o644, 0))
	}
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Add(1)
	go func() {
		defer churn.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			p := filepath.Join(dir, fmt.Sprintf("t%05d", i%500))
			if i%1000 < 500 {
				_ = syscall.Mknod(p, syscall.S_IFREG|0o644, 0)
			} else {
				_ = syscall.Unlink(p)
			}
		}
	}()
	defer func() { close(stop); churn.Wait() }()
	for range 10 {
		seen := map[string]int{}
		fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		must(t, err)
		buf := make([]byte, 1024)
		for {
			n, err := syscall.ReadDirent(fd, buf)
			must(t, err)
			if n == 0 {
				break
			}
			_, _, ns := syscall.ParseDirent(buf[:n], -1, nil)
			for _, nm := range ns {
				seen[nm]++
			}
		}
		syscall.Close(fd)
		for nm, c := range seen {
			if c > 1 {
				t.Errorf("%s listed %d times", nm, c)
			}
		}
		for i := range stable {
			if nm := fmt.Sprintf("s%05d", i); seen[nm] != 1 {
				t.Fatalf("%s listed %d times", nm, seen[nm])
			}
		}
	}
}

func TestHardLinksAcrossDirectories(t *testing.T) {
	m := newMount(t)
	must(t, os.Mkdir(m.path("a"), 0o755))
	must(t, os.Mkdir(m.path("b"), 0o755))
	writeFile(t, m.path("a", "f"), []byte("v1"))
	must(t, os.Link(m.path("a", "f"), m.path("b", "g")))
	must(t, os.Link(m.path("b", "g"), m.path("b", "h")))
	ino := lstat(t, m.path("a", "f")).Ino
	for _, p := range []string{m.path("a", "f"), m.path("b", "g"), m.path("b", "h")} {
		if st := lstat(t, p); st.Ino != ino || st.Nlink != 3 {
			t.Errorf("%s: ino %d nlink %d, want %d and 3", p, st.Ino, st.Nlink, ino)
		}
	}
	writeFile(t, m.path("b", "g"), []byte("version two"))
	wantContent(t, m.path("a", "f"), []byte("version two"))
	must(t, os.Remove(m.path("a", "f")))
	if st := lstat(t, m.path("b", "h")); st.Nlink != 2 {
		t.Errorf("nlink after unlinking one name: %d", st.Nlink)
	}
	must(t, os.Rename(m.path("b", "h"), m.path("a", "f2")))
	if st := lstat(t, m.path("a", "f2")); st.Ino != ino || st.Nlink != 2 {
		t.Errorf("after rename: ino %d nlink %d", st.Ino, st.Nlink)
	}
	// Renaming a link onto another link of the same inode changes nothing.
	must(t, os.Rename(m.path("a", "f2"), m.path("b", "g")))
	if _, err := os.Lstat(m.path("a", "f2")); err != nil {
		t.Errorf("rename onto another link of the same inode removed the source: %v", err)
	}
	wantContent(t, m.path("a", "f2"), []byte("version two"))
}

func TestRenameOverExisting(t *testing.T) {
	m := newMount(t)
	writeFile(t, m.path("old"), []byte("old"))
	writeFile(t, m.path("new"), []byte("new"))
	f, err := os.Open(m.path("old"))
	must(t, err)
	defer f.Close()
	must(t, os.Rename(m.path("new"), m.path("old")))
	wantContent(t, m.path("old"), []byte("new"))
	if b, err := io.ReadAll(f); err != nil || string(b) != "old" {
		t.Errorf("open replaced file reads %q %v, want its old data", b, err)
	}
	if _, err := os.Lstat(m.path("new")); !os.IsNotExist(err) {
		t.Errorf("source still there: %v", err)
	}

	must(t, os.MkdirAll(m.path("d1", "child"), 0o755))
	must(t, os.Mkdir(m.path("d2"), 0o755))
	must(t, os.MkdirAll(m.path("full", "x"), 0o755))
	// syscall.Rename: os.Rename refuses to replace a directory on its own.
	must(t, syscall.Rename(m.path("d1"), m.path("d2")))
	if st, root := lstat(t, m.path("d2", "child", "..")), lstat(t, m.path("d2")); st.Ino != root.Ino {
		t.Errorf("d2/child/.. is inode %d, want %d", st.Ino, root.Ino)
	}
	wantErrno(t, "rename a dir over a non-empty dir", syscall.Rename(m.path("d2"), m.path("full")), syscall.ENOTEMPTY)
	wantErrno(t, "rename a file over a dir", syscall.Rename(m.path("old"), m.path("full")), syscall.EISDIR)
	wantErrno(t, "rename a dir over a file", syscall.Rename(m.path("full"), m.path("old")), syscall.ENOTDIR)

	// Moving a directory updates both parents' link counts.
	before := lstat(t, m.Dir).Nlink
	must(t, os.Rename(m.path("d2", "child"), m.path("child")))
	if got := lstat(t, m.Dir).Nlink; got != before+1 {
		t.Errorf("root nlink %d after moving a directory in, want %d", got, before+1)
	}
	if got := lstat(t, m.path("d2")).Nlink; got != 2 {
		t.Errorf("d2 nlink %d after moving its subdirectory out, want 2", got)
	}
}

func TestSparseFile(t *testing.T) {
	m := newMount(t)
	p := m.path("sparse")
	must(t, os.WriteFile(p, nil, 0o644))
	must(t, os.Truncate(p, 100<<20))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	data := pattern(7, 4096)
	_, err = f.WriteAt(data, 50<<20)
	must(t, err)
	must(t, f.Sync())
	st := lstat(t, p)
	if st.Size != 100<<20 || st.Blocks*512 >= 1<<20 {
		t.Errorf("sparse file: size %d blocks %d, want 100 MiB in under 1 MiB of blocks", st.Size, st.Blocks)
	}
	got := make([]byte, 4096)
	for _, off := range []int64{0, 1 << 20, 50<<20 - 4096, 50<<20 + 4096, 100<<20 - 4096} {
		if _, err := f.ReadAt(got, off); err != nil || !bytes.Equal(got, make([]byte, 4096)) {
			t.Errorf("hole at %d does not read as zeros: %v", off, err)
		}
	}
	if _, err := f.ReadAt(got, 50<<20); err != nil || !bytes.Equal(got, data) {
		t.Errorf("data in the middle: %v", err)
	}
}

// TestLargeFile writes 64 MiB in 1 MiB writes and reads it back.
func TestLargeFile(t *testing.T) {
	t.Parallel()
	m := newMount(t)
	const chunk, chunks = 1 << 20, 64
	f, err := os.Create(m.path("large"))
	must(t, err)
	for i := range chunks {
		if _, err := f.Write(pattern(i, chunk)); err != nil {
			t.Fatal(err)
		}
	}
	must(t, f.Close())
	if st := lstat(t, m.path("large")); st.Size != chunk*chunks || st.Blocks < chunk*chunks/512 {
		t.Errorf("size %d blocks %d", st.Size, st.Blocks)
	}
	// Read it through a fresh open with a cold page cache.
	must(t, os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0))
	f, err = os.Open(m.path("large"))
	must(t, err)
	defer f.Close()
	buf := make([]byte, chunk)
	for i := range chunks {
		if _, err := io.ReadFull(f, buf); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if !bytes.Equal(buf, pattern(i, chunk)) {
			t.Fatalf("chunk %d differs", i)
		}
	}
	if n, err := f.Read(buf); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("read at EOF: %d %v", n, err)
	}
}

// TestAppendTwoWriters appends fixed-size records from two open files at
// once: none is lost, torn or overwritten.
// TestAppendTwoWriters: O_APPEND writes of two open files interleave
// whole, in both modes (in no-open mode the kernel picks each offset from
// its own size under the inode lock; the daemon sees one file).
func TestAppendTwoWriters(t *testing.T) {
	for _, noOpen := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "no-open"}[noOpen], func(t *testing.T) {
			appendTwoWriters(t, newMount(t, func(c *config) { c.mount.NoOpen = noOpen }))
		})
	}
}

func appendTwoWriters(t *testing.T, m *fsMount) {
	p := m.path("log")
	const records, size = 500, 100
	var wg sync.WaitGroup
	for w := range 2 {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		must(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer f.Close()
			rec := bytes.Repeat([]byte{'a' + byte(w)}, size)
			rec[size-1] = '\n'
			for range records {
				if _, err := f.Write(rec); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(p)
	must(t, err)
	if len(b) != 2*records*size {
		t.Fatalf("log has %d bytes, want %d", len(b), 2*records*size)
	}
	count := map[byte]int{}
	for off := 0; off < len(b); off += size {
		rec := b[off : off+size]
		if bytes.Count(rec, rec[:1]) != size-1 || rec[size-1] != '\n' {
			t.Fatalf("torn record at %d: %q", off, rec)
		}
		count[rec[0]]++
	}
	if count['a'] != records || count['b'] != records {
		t.Errorf("records per writer: %v", count)
	}
}

// asNobody runs a command as uid/gid 65534 and returns its combined
// output and error.
func asNobody(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// openPath makes the directories above dir traversable by other users
// (t.TempDir makes them 0700).
func openPath(t testing.TB, dir string) {
	for d := filepath.Dir(dir); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		must(t, os.Chmod(d, 0o755))
	}
}

// TestPermissions checks the mount options that decide who may do what:
// default_permissions (the kernel checks mode bits) and allow_other. The
// kernel checks wherever a caller other than root can reach the mount; a
// mount only root can reach leaves root's checks to the adapter, and the
// kernel still refuses to execute a file without execute bits.
func TestPermissions(t *testing.T) {
	m := newMount(t, func(c *config) { c.mount.AllowOther = true })
	if _, super := mountOptions(t, m.Dir); !slices.Contains(super, "default_permissions") {
		t.Errorf("mount with allow_other: options %q lack default_permissions", super)
	}
	openPath(t, m.Dir)
	writeFile(t, m.path("f"), []byte("public"))
	must(t, os.Chmod(m.path("f"), 0o644))
	if out, err := asNobody("cat", m.path("f")); err != nil || out != "public" {
		t.Errorf("another user reading a 0644 file: %q %v", out, err)
	}
	if out, err := asNobody("sh", "-c", "echo x >> "+m.path("f")); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("another user writing a 0644 root file: %q %v", out, err)
	}
	if out, err := asNobody("touch", m.path("new")); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("another user creating in a 0755 root dir: %q %v", out, err)
	}

	private := newMount(t)
	openPath(t, private.Dir)
	writeFile(t, private.path("f"), nil)
	if out, err := asNobody("stat", private.path("f")); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("another user reaching a mount without allow_other: %q %v", out, err)
	}
	if _, super := mountOptions(t, private.Dir); slices.Contains(super, "default_permissions") {
		t.Errorf("mount only root can reach: options %q have default_permissions", super)
	}
	script := private.path("script")
	writeFile(t, script, []byte("#!/bin/sh\nexit 0\n"))
	must(t, os.Chmod(script, 0o644))
	if code, out := runFromMount(t, script); code != 126 || !strings.Contains(out, "ermission denied") {
		t.Errorf("root executing a 0644 file: exit %d %q, want permission denied (exit 126)", code, out)
	}
	must(t, os.Chmod(script, 0o744))
	if code, out := runFromMount(t, script); code != 0 {
		t.Errorf("root executing a 0744 file: exit %d %q", code, out)
	}

	kernel := newMount(t, func(c *config) { c.mount.Permissions = sfuse.PermissionsKernel })
	if _, super := mountOptions(t, kernel.Dir); !slices.Contains(super, "default_permissions") {
		t.Errorf("mount with PermissionsKernel: options %q lack default_permissions", super)
	}
}

// TestPrivilegeClearing: writes and truncates by an unprivileged user, and
// chown by anyone, clear set-user-ID and (with group execute) set-group-ID,
// as on a local filesystem; root's writes keep them. smallfs does this
// itself (FUSE_HANDLE_KILLPRIV_V2), so the kernel need not ask for
// security.capability before every write.
func TestPrivilegeClearing(t *testing.T) {
	m := newMount(t, func(c *config) { c.mount.AllowOther = true })
	openPath(t, m.Dir)
	mode := func(name string) uint32 { return lstat(t, m.path(name)).Mode & 0o7777 }
	for _, c := range []struct {
		name      string
		from, to  uint32
		asNobody  []string
		asRootErr error
	}{
		{"write", 0o6777, 0o0777, []string{"sh", "-c", "echo x >> $0"}, nil},
		{"write-sgid-without-group-x", 0o6767, 0o2767, []string{"sh", "-c", "echo x >> $0"}, nil},
		{"truncate", 0o6777, 0o0777, []string{"truncate", "-s", "0"}, nil},
		{"open-trunc", 0o4777, 0o0777, []string{"sh", "-c", "echo x > $0"}, nil},
	} {
		writeFile(t, m.path(c.name), []byte("data"))
		must(t, syscall.Chmod(m.path(c.name), c.from))
		if out, err := asNobody(c.asNobody[0], append(c.asNobody[1:], m.path(c.name))...); err != nil {
			t.Errorf("%s as nobody: %v %s", c.name, err, out)
		}
		if got := mode(c.name); got != c.to {
			t.Errorf("%s by an unprivileged user: mode %o, want %o", c.name, got, c.to)
		}
	}
	writeFile(t, m.path("root"), nil)
	must(t, syscall.Chmod(m.path("root"), 0o6755))
	f, err := os.OpenFile(m.path("root"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.Write([]byte("root may"))
	must(t, err)
	must(t, f.Close())
	if got := mode("root"); got != 0o6755 {
		t.Errorf("write by root: mode %o, want 6755", got)
	}
	must(t, os.Chown(m.path("root"), 1, 1))
	if got := mode("root"); got != 0o0755 {
		t.Errorf("chown: mode %o, want 755", got)
	}
	must(t, os.Mkdir(m.path("dir"), 0o755))
	must(t, syscall.Chmod(m.path("dir"), 0o2755))
	must(t, os.Chown(m.path("dir"), 1, 1))
	if got := mode("dir"); got != 0o2755 {
		t.Errorf("chown of a directory: mode %o, want 2755 kept", got)
	}

	// Only the first write to a cached inode asks for security.capability.
	writeFile(t, m.path("hot"), nil)
	before := m.requests("GETXATTR")
	for range 10 {
		f, err := os.OpenFile(m.path("hot"), os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.Write([]byte("more"))
		must(t, err)
		must(t, f.Close())
	}
	if got := m.requests("GETXATTR") - before; got > 1 {
		t.Errorf("%d GETXATTR requests for 10 appends to a cached inode, want at most 1", got)
	}
}
