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
// nodiratime, strictatime). Checked on the volume: the kernel may serve
// a stat from its attribute cache until the attribute timeout.
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
			dir, file := m.path("d"), m.path("d", "f")
			must(t, os.Mkdir(dir, 0o755))
			must(t, os.WriteFile(file, []byte("data"), 0o644))
			// Accessed long before the last change, as relatime wants.
			old := time.Now().Add(-48 * time.Hour)
			for _, p := range []string{file, dir} {
				must(t, os.Chtimes(p, old, old.Add(time.Hour)))
			}
			atime := func(p string) int64 {
				t.Helper()
				var st syscall.Stat_t
				must(t, syscall.Stat(p, &st))
				a, err := m.vol.GetAttr(volume.Ino(st.Ino))
				must(t, err)
				return a.Atime
			}
			fileBefore, dirBefore := atime(file), atime(dir)
			_, err := os.ReadFile(file)
			must(t, err)
			_, err = os.ReadDir(dir)
			must(t, err)
			fileAfter, dirAfter := atime(file), atime(dir)
			if updated := fileAfter > old.Add(47*time.Hour).UnixNano(); updated != c.file {
				t.Errorf("file: atime %v -> %v after a read: updated %v, want %v", time.Unix(0, fileBefore), time.Unix(0, fileAfter), updated, c.file)
			}
			if updated := dirAfter > old.Add(47*time.Hour).UnixNano(); updated != c.dir {
				t.Errorf("directory: atime %v -> %v after a listing: updated %v, want %v", time.Unix(0, dirBefore), time.Unix(0, dirAfter), updated, c.dir)
			}
			_, err = os.ReadFile(file)
			must(t, err)
			if again := atime(file); (again != fileAfter) != c.two {
				t.Errorf("file: atime %d -> %d after a second read, want updated %v", fileAfter, again, c.two)
			}
		})
	}
}
