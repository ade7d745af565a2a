package tests

import (
	"fmt"
	"os"
	"syscall"
	"testing"
)

// No-open mode (fs/fuse Options.NoOpen): the kernel opens and closes files
// without telling the daemon, which keeps written inodes open itself and
// writes them back at FORGET, at its limits, at the periodic commit or at
// unmount. These tests check that nothing written is lost on any of those
// paths; TestRoundTrips, TestPosix and TestAppendTwoWriters run in both
// modes too.

func noOpen(c *config) { c.mount.NoOpen = true }

// TestNoOpenWriteBack writes more files than the adapter keeps open,
// rewrites some with O_TRUNC, and finds every byte after a remount.
func TestNoOpenWriteBack(t *testing.T) {
	m := newMount(t, noOpen, func(c *config) { c.mount.NoOpenFiles = 8 })
	want := map[string][]byte{}
	for i := range 64 {
		name := fmt.Sprintf("f%02d", i)
		want[name] = pattern(i, 1000+i*997)
		writeFile(t, m.path(name), want[name])
	}
	for i := 0; i < 64; i += 7 { // O_TRUNC: a SETATTR in this mode
		name := fmt.Sprintf("f%02d", i)
		want[name] = pattern(-i, 100)
		writeFile(t, m.path(name), want[name])
	}
	f, err := os.OpenFile(m.path("f01"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.Write([]byte("tail"))
	must(t, err)
	must(t, f.Close())
	want["f01"] = append(want["f01"], "tail"...)
	for name, b := range want {
		wantContent(t, m.path(name), b) // through the kernel's cache
	}
	m.remount()
	for name, b := range want {
		wantContent(t, m.path(name), b)
	}
}

// TestNoOpenDirtyLimit: the handles no-open mode holds (up to 4096, far
// more than the data written here) leave dirty memory to the volume,
// which keeps it under its DirtyLimit plus the write in progress; nothing
// is lost on the way.
func TestNoOpenDirtyLimit(t *testing.T) {
	const limit = 256 << 10
	m := newMount(t, noOpen, func(c *config) { c.volume.DirtyLimit = limit })
	var want [][]byte
	for i := range 64 { // 2 MiB in all, 8 times the limit
		data := pattern(i, 32<<10)
		writeFile(t, m.path(fmt.Sprint("f", i)), data)
		want = append(want, data)
		// One 32 KiB write dirties at most one 64 KiB buffer past the limit.
		if d := m.vol.DirtyBytes(); d > limit+64<<10 {
			t.Fatalf("after %d files: %d dirty bytes, limit %d", i+1, d, limit)
		}
	}
	m.remount()
	for i, data := range want {
		wantContent(t, m.path(fmt.Sprint("f", i)), data)
	}
}

// TestNoOpenUnlinkedOpenFile: a file unlinked while open keeps its data
// for the process holding it; the kernel's reference keeps the inode, and
// its FORGET frees it.
func TestNoOpenUnlinkedOpenFile(t *testing.T) {
	m := newMount(t, noOpen)
	f, err := os.Create(m.path("tmp"))
	must(t, err)
	defer f.Close()
	data := pattern(3, 20_000)
	_, err = f.Write(data)
	must(t, err)
	must(t, os.Remove(m.path("tmp")))
	got := make([]byte, len(data)+1)
	n, err := f.ReadAt(got, 0)
	if n != len(data) || string(got[:n]) != string(data) {
		t.Fatalf("read %d bytes of the unlinked file (%v), want %d", n, err, len(data))
	}
	must(t, f.Close())
	wantErrno(t, "stat of the unlinked file", syscall.Stat(m.path("tmp"), new(syscall.Stat_t)), syscall.ENOENT)
}

// TestNoOpenFsync: fsync with file handle 0 writes the inode back and
// makes it durable.
func TestNoOpenFsync(t *testing.T) {
	m := newMount(t, noOpen)
	f, err := os.Create(m.path("synced"))
	must(t, err)
	data := pattern(5, 50_000)
	_, err = f.Write(data)
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
	var st syscall.Stat_t
	must(t, syscall.Stat(m.path("synced"), &st))
	if st.Blocks == 0 {
		t.Error("no blocks allocated after fsync")
	}
	m.remount()
	wantContent(t, m.path("synced"), data)
}
