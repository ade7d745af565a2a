package bench

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
)

// A run cut short leaves a mount in the scratch directory: remove
// unmounts it before deleting, and never deletes through it.
func TestScratchRemoveUnmountsFirst(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	s, err := newScratch(t.TempDir(), device.PreallocOff)
	if err != nil {
		t.Fatal(err)
	}
	mnt := s.path("tmpfs", "")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(mnt, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mountsUnder(s.dir); len(got) != 1 || got[0] != mnt {
		t.Fatalf("mounts under the scratch directory: %v, want [%s]", got, mnt)
	}
	if err := s.remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("scratch directory still there: %v", err)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/a\040b`:  "/tmp/a b",
		`/tmp/plain`:   "/tmp/plain",
		`/x\134y`:      `/x\y`,
		`/short\04`:    `/short\04`,
		`/bad\09x\011`: "/bad\\09x\t",
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
