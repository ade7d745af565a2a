package tests

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/smallfs/smallfs/fs/volume"
)

// TestAccessTimes: reading a file and listing a directory update their
// access times as the mount flags say (relatime by default, noatime,
// nodiratime, strictatime); opening does not. Reads go O_DIRECT: one the
// page cache answers never reaches the volume. Checked on the volume.
func TestAccessTimes(t *testing.T) {
	for _, c := range []struct {
		name           string
		flags          uintptr
		file, dir, two bool // updated by a read, by a listing; by a second read
	}{
		{"relatime", 0, true, true, false},
		{"noatime", syscall.MS_NOATIME, false, false, false},
		{"nodiratime", syscall.MS_NODIRATIME, true, false, false},
		{"strictatime", syscall.MS_STRICTATIME, true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newMount(t, func(cfg *config) { cfg.mount.MountFlags = c.flags })
			dir, file, old := agedEntries(t, m)
			atime := func(p string) int64 { return volumeAtime(t, m, p) }
			fileBefore, dirBefore := atime(file), atime(dir)
			fd, err := syscall.Open(file, syscall.O_RDONLY, 0)
			must(t, err)
			must(t, syscall.Close(fd))
			if got := atime(file); got != fileBefore {
				t.Errorf("an open without a read moved the atime %d -> %d", fileBefore, got)
			}
			readDirect(t, file)
			_, err = os.ReadDir(dir)
			must(t, err)
			fileAfter, dirAfter := atime(file), atime(dir)
			if updated := fileAfter > old.Add(47*time.Hour).UnixNano(); updated != c.file {
				t.Errorf("file: atime %v -> %v after a read: updated %v, want %v", time.Unix(0, fileBefore), time.Unix(0, fileAfter), updated, c.file)
			}
			if updated := dirAfter > old.Add(47*time.Hour).UnixNano(); updated != c.dir {
				t.Errorf("directory: atime %v -> %v after a listing: updated %v, want %v", time.Unix(0, dirBefore), time.Unix(0, dirAfter), updated, c.dir)
			}
			readDirect(t, file)
			if again := atime(file); (again != fileAfter) != c.two {
				t.Errorf("file: atime %d -> %d after a second read, want updated %v", fileAfter, again, c.two)
			}
		})
	}
}

// agedEntries makes a directory d holding a file f, both last accessed
// (at old) long before their last change, as relatime wants for an update.
func agedEntries(t *testing.T, m *fsMount) (dir, file string, old time.Time) {
	t.Helper()
	dir, file = m.path("d"), m.path("d", "f")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.WriteFile(file, []byte("data"), 0o644))
	old = time.Now().Add(-48 * time.Hour)
	for _, p := range []string{file, dir} {
		must(t, os.Chtimes(p, old, old.Add(time.Hour)))
	}
	return dir, file, old
}

// volumeAtime is path's access time as the volume holds it: the kernel's
// attribute cache would not show a change.
func volumeAtime(t *testing.T, m *fsMount, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Stat(path, &st))
	a, err := m.vol.GetAttr(volume.Ino(st.Ino))
	must(t, err)
	return a.Atime
}

// readDirect reads path with O_DIRECT, so the read reaches the
// filesystem whatever the page cache holds.
func readDirect(t *testing.T, path string) {
	t.Helper()
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECT, 0)
	must(t, err)
	defer syscall.Close(fd)
	if _, err := syscall.Read(fd, make([]byte, 4096)); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
}

// TestRemountedReadOnlyKeepsAccessTimes: once the kernel has remounted
// the mount read-only and the server is told (Server.SetReadOnly, as the
// daemon does on remount,ro), reads and listings record no access time,
// so nothing is written to the device; remounted read-write, they do
// again.
func TestRemountedReadOnlyKeepsAccessTimes(t *testing.T) {
	m := newMount(t)
	dir, file, old := agedEntries(t, m)
	atime := func(p string) int64 { return volumeAtime(t, m, p) }
	remount := func(ro bool) {
		t.Helper()
		flags := uintptr(syscall.MS_REMOUNT | syscall.MS_NOSUID | syscall.MS_NODEV)
		if ro {
			flags |= syscall.MS_RDONLY
		}
		must(t, syscall.Mount("", m.Dir, "", flags, ""))
		m.srv.SetReadOnly(ro)
	}
	access := func() {
		t.Helper()
		readDirect(t, file)
		_, err := os.ReadDir(dir)
		must(t, err)
	}
	remount(true)
	access()
	if f, d := atime(file), atime(dir); f != old.UnixNano() || d != old.UnixNano() {
		t.Errorf("read and listed on a mount remounted ro: atimes moved to %v, %v", time.Unix(0, f), time.Unix(0, d))
	}
	remount(false)
	access()
	if f, d := atime(file), atime(dir); f == old.UnixNano() || d == old.UnixNano() {
		t.Errorf("read and listed after remount,rw: atimes %v, %v, want updated", time.Unix(0, f), time.Unix(0, d))
	}
}
