package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/smallfs/smallfs/fs/device"
)

// uuidRE matches the UUIDs mkfs makes up, so goldens stay stable.
var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func TestFixturesGolden(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fixture string
		args    []string // the image path is appended
	}{
		{"info-clean", "clean", []string{"info"}},
		{"info-clean-json", "clean", []string{"info", "--json"}},
		{"info-unclean", "unclean", []string{"info"}},
		{"info-overlap", "overlap", []string{"info"}},
		{"fsck-clean", "clean", []string{"fsck"}},
		{"fsck-clean-json", "clean", []string{"fsck", "--json"}},
		{"fsck-unclean", "unclean", []string{"fsck"}},
		{"fsck-badlinks", "badlinks", []string{"fsck"}},
		{"fsck-badlinks-repair", "badlinks", []string{"fsck", "--repair"}},
		{"fsck-orphan", "orphan", []string{"fsck"}},
		{"fsck-orphan-repair", "orphan", []string{"fsck", "--repair"}},
		{"fsck-orphan-json", "orphan", []string{"fsck", "--json"}},
		{"fsck-overlap", "overlap", []string{"fsck"}},
		{"fsck-overlap-repair", "overlap", []string{"fsck", "--repair"}},
		{"info-nolinks", "nolinks", []string{"info"}},
		{"fsck-nolinks", "nolinks", []string{"fsck"}},
		{"fsck-nolinks-repair", "nolinks", []string{"fsck", "--repair"}},
		{"mkfs-refuses", "clean", []string{"mkfs"}},
		{"mkfs-force", "clean", []string{"mkfs", "--force", "--block-size", "1024"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			img := fixture(t, dir, tc.fixture)
			code, stdout, stderr := runCLI(t, dir, append(tc.args, img)...)
			golden(t, tc.name, code, uuidRE.ReplaceAllString(stdout, "$$UUID"), uuidRE.ReplaceAllString(stderr, "$$UUID"))
		})
	}
}

// TestRepairIsDurable checks that a repair is written: a second fsck of
// the repaired image finds nothing, and a check without --repair wrote
// nothing (the problem is still there).
func TestRepairIsDurable(t *testing.T) {
	dir := t.TempDir()
	img := fixture(t, dir, "orphan")
	if code, out, _ := runCLI(t, dir, "fsck", img); code != fsckUncorrected {
		t.Fatalf("fsck: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, dir, "fsck", img); code != fsckUncorrected {
		t.Fatalf("fsck without --repair changed the image: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, dir, "fsck", "--repair", img); code != fsckCorrected {
		t.Fatalf("fsck --repair: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, dir, "fsck", img); code != fsckClean {
		t.Fatalf("fsck after repair: exit %d\n%s", code, out)
	}
}

// TestLockedDevice: what a mounted device (exclusively locked) does to the
// offline commands.
func TestLockedDevice(t *testing.T) {
	dir := t.TempDir()
	img := fixture(t, dir, "clean")
	dev, err := device.Open(img, device.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	defer func(d time.Duration) { lockWait = d }(lockWait)
	lockWait = 50 * time.Millisecond // the lock is held by this test, not a closing daemon
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"locked-fsck", []string{"fsck", img}},
		{"locked-fsck-repair", []string{"fsck", "--repair", img}},
		{"locked-mkfs", []string{"mkfs", "--force", img}},
		{"locked-info", []string{"info", img}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, dir, tc.args...)
			golden(t, tc.name, code, uuidRE.ReplaceAllString(stdout, "$$UUID"), stderr)
		})
	}
}

func TestMkfsNewImage(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, dir, "mkfs", "--size", "8M", dir+"/new.img")
	golden(t, "mkfs-new", code, uuidRE.ReplaceAllString(stdout, "$$UUID"), stderr)
	if code, out, _ := runCLI(t, dir, "fsck", dir+"/new.img"); code != 0 {
		t.Errorf("fsck of a new filesystem: exit %d\n%s", code, out)
	}
	code, stdout, stderr = runCLI(t, dir, "mkfs", "--size", "16K", dir+"/tiny.img")
	golden(t, "mkfs-too-small", code, stdout, stderr)
}
