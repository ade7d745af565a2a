package tests

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// node is what a test remembers of one path to compare after a remount.
type node struct {
	Mode, Nlink, UID, GID uint32
	Size                  int64
	Mtime                 int64
	Rdev                  uint64
	Sum                   [32]byte // regular files: sha256 of the content
	Target                string   // symlinks
	Xattrs                string   // sorted name=value pairs
}

// snapshot walks the tree under root and records every path.
func snapshot(t testing.TB, root string) map[string]node {
	t.Helper()
	tree := map[string]node{}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		n := node{Mode: st.Mode, Nlink: uint32(st.Nlink), UID: st.Uid, GID: st.Gid, Size: st.Size,
			Mtime: st.Mtim.Nano(), Rdev: st.Rdev}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n.Sum = sha256.Sum256(b)
		case syscall.S_IFLNK:
			n.Target, _ = os.Readlink(p)
		case syscall.S_IFDIR:
			n.Size, n.Mtime = 0, 0 // reading files may not touch them, but listing is not our point
		}
		n.Xattrs = xattrs(p)
		rel, _ := filepath.Rel(root, p)
		tree[rel] = n
		return nil
	})
	must(t, err)
	return tree
}

func xattrs(p string) string {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if err != nil || n == 0 {
		return ""
	}
	var kv []string
	for _, name := range strings.Split(strings.TrimSuffix(string(buf[:n]), "\x00"), "\x00") {
		v := make([]byte, 64<<10)
		vn, _ := unix.Lgetxattr(p, name, v)
		kv = append(kv, name+"="+string(v[:max(vn, 0)]))
	}
	slices.Sort(kv)
	return strings.Join(kv, ",")
}

func compareTrees(t testing.TB, got, want map[string]node) {
	t.Helper()
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[p]; !ok {
			t.Errorf("%s: missing", p)
		} else if g != want[p] {
			t.Errorf("%s:\n got %+v\nwant %+v", p, g, want[p])
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: unexpected", p)
		}
	}
}

// populate builds a tree with every kind of inode and attribute.
func populate(t testing.TB, root string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(root, "a", "b", "c"), 0o750))
	must(t, os.Mkdir(filepath.Join(root, "empty"), 0o700))
	for i, size := range []int{0, 1, 100, 4095, 4096, 100_000, 3 << 20} {
		writeFile(t, filepath.Join(root, "a", fmt.Sprintf("f%d", i)), pattern(i, size))
	}
	// A file rewritten smaller, one truncated, one sparse.
	writeFile(t, filepath.Join(root, "a", "b", "rewritten"), pattern(20, 200_000))
	writeFile(t, filepath.Join(root, "a", "b", "rewritten"), pattern(21, 5000))
	writeFile(t, filepath.Join(root, "a", "b", "truncated"), pattern(22, 50_000))
	must(t, os.Truncate(filepath.Join(root, "a", "b", "truncated"), 10_000))
	f, err := os.Create(filepath.Join(root, "a", "b", "sparse"))
	must(t, err)
	_, err = f.WriteAt([]byte("end"), 10<<20)
	must(t, err)
	must(t, f.Close())

	must(t, os.Link(filepath.Join(root, "a", "f3"), filepath.Join(root, "a", "b", "c", "hard")))
	must(t, os.Symlink("../f1", filepath.Join(root, "a", "b", "sym")))
	must(t, syscall.Mknod(filepath.Join(root, "fifo"), syscall.S_IFIFO|0o640, 0))
	must(t, os.Chmod(filepath.Join(root, "a", "f2"), 0o4755))
	must(t, os.Chown(filepath.Join(root, "a", "f4"), 1000, 2000))
	must(t, unix.Setxattr(filepath.Join(root, "a", "f5"), "user.k", []byte("v"), 0))
	must(t, unix.Setxattr(filepath.Join(root, "a", "b"), "user.dir", []byte("d"), 0))
	must(t, os.Chtimes(filepath.Join(root, "a", "f6"), time.Unix(1e9, 1), time.Unix(1.2e9, 7)))
	writeFile(t, filepath.Join(root, "gone"), []byte("x"))
	must(t, os.Remove(filepath.Join(root, "gone")))
	writeFile(t, filepath.Join(root, "moved"), []byte("m"))
	must(t, os.Rename(filepath.Join(root, "moved"), filepath.Join(root, "empty", "here")))
	must(t, os.Remove(filepath.Join(root, "empty", "here")))
}

// TestRemount writes a tree, unmounts, mounts the image again and finds
// everything as it was.
func TestRemount(t *testing.T) {
	t.Parallel()
	for _, noOpen := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "no-open"}[noOpen], func(t *testing.T) {
			remountTree(t, newMount(t, func(c *config) { c.mount.NoOpen = noOpen }))
		})
	}
}

func remountTree(t *testing.T, m *fsMount) {
	populate(t, m.Dir)
	want := snapshot(t, m.Dir)
	m.remount()
	compareTrees(t, snapshot(t, m.Dir), want)
	// And once more after changing it on the second mount.
	writeFile(t, m.path("a", "f0"), []byte("second mount"))
	want = snapshot(t, m.Dir)
	m.remount()
	compareTrees(t, snapshot(t, m.Dir), want)
}

// TestKillAfterFsync kills the serving process with SIGKILL in the middle
// of a workload, removes the dead mount, mounts the image again and finds
// every fsynced file intact; files not fsynced are either absent, empty or
// whole, never wrong.
func TestKillAfterFsync(t *testing.T) {
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "image"), filepath.Join(dir, "mnt")
	makeImage(t, img, defaultImageSize)
	must(t, os.Mkdir(mnt, 0o755))
	d := startDaemon(t, img, mnt, 0)

	synced := map[string][]byte{}
	must(t, os.MkdirAll(filepath.Join(mnt, "s", "deep"), 0o755))
	for i := range 40 {
		p := filepath.Join(mnt, "s", fmt.Sprintf("f%02d", i))
		if i%3 == 0 {
			p = filepath.Join(mnt, "s", "deep", fmt.Sprintf("f%02d", i))
		}
		data := pattern(i, 1+i*3001)
		f, err := os.Create(p)
		must(t, err)
		_, err = f.Write(data)
		must(t, err)
		must(t, f.Sync())
		must(t, f.Close())
		rel, _ := filepath.Rel(mnt, p)
		synced[rel] = data
	}
	// Unsynced work keeps going while the daemon dies.
	unsynced := map[string][]byte{}
	for i := range 40 {
		rel := filepath.Join("u", fmt.Sprintf("f%02d", i))
		unsynced[rel] = pattern(100+i, 1+i*2003)
	}
	must(t, os.Mkdir(filepath.Join(mnt, "u"), 0o755))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for rel, data := range unsynced {
			if os.WriteFile(filepath.Join(mnt, rel), data, 0o644) != nil {
				return // the daemon is gone
			}
		}
	}()
	time.Sleep(5 * time.Millisecond)
	d.kill(t)
	<-done

	m := mountImage(t, img, mnt, config{})
	for _, p := range m.vol.Check() {
		t.Errorf("check after crash: %s", p)
	}
	for rel, data := range synced {
		wantContent(t, filepath.Join(mnt, rel), data)
	}
	for rel, data := range unsynced {
		got, err := os.ReadFile(filepath.Join(mnt, rel))
		if err == nil && len(got) != 0 && !bytes.Equal(got, data) {
			t.Errorf("%s: unsynced file has %d wrong bytes", rel, len(got))
		}
	}
}

// TestUnmountFromOutside unmounts with umount(8), not through the Server:
// the serve loop ends, and the volume closes cleanly with everything in it.
func TestUnmountFromOutside(t *testing.T) {
	m := newMount(t)
	populate(t, m.Dir)
	want := snapshot(t, m.Dir)
	if out, err := exec.Command("umount", m.Dir).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v %s", err, out)
	}
	select {
	case <-m.srv.Done():
	case <-time.After(time.Minute):
		t.Fatal("serve loop still running a minute after umount")
	}
	m.remount()
	compareTrees(t, snapshot(t, m.Dir), want)
}

// TestServerAbort: Abort ends a mount with a file open and written, at
// once: the mount is gone, the writer's next write fails, what it wrote
// before is on the image, which closes clean (the harness checks it).
func TestServerAbort(t *testing.T) {
	m := newMount(t)
	data := pattern(10, 10_000)
	f, err := os.Create(m.path("open"))
	must(t, err)
	defer f.Close()
	_, err = f.Write(data)
	must(t, err)
	must(t, m.srv.Abort())
	select {
	case <-m.srv.Done():
	default:
		t.Fatal("Abort returned before the serve loop ended")
	}
	if _, err := f.Write(data); err == nil {
		t.Error("a write after Abort succeeded")
	}
	if perMount, _ := mountOptionsOrNil(m.Dir); perMount != nil {
		t.Errorf("%s still mounted after Abort", m.Dir)
	}
	must(t, m.srv.Abort()) // again: nothing to do
	m.remount()
	wantContent(t, m.path("open"), data)
}

// TestAbortWithOpenFile cuts the connection (fusectl abort) while a file
// written but not yet flushed is open, so the kernel never releases it:
// the serve loop still ends, the volume still closes clean (the adapter
// releases what the kernel left open), and the data reaches the image.
func TestAbortWithOpenFile(t *testing.T) {
	m := newMount(t)
	data := pattern(9, 10_000)
	f, err := os.Create(m.path("open"))
	must(t, err)
	_, err = f.Write(data)
	must(t, err)
	abortConnection(m.connID)
	select {
	case <-m.srv.Done():
	case <-time.After(time.Minute):
		t.Fatal("serve loop still running a minute after the abort")
	}
	f.Close() // fails: the connection is gone
	detach(t, m.Dir)
	m.remount()
	wantContent(t, m.path("open"), data)
}
