package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

// TestTuneChecksums: an image made without checksums is given them by
// tune (info shows the feature, fsck --data then reads every block),
// and tune --no-data-checksums takes them away; neither flag is a usage
// error.
func TestTuneChecksums(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "tune.img")
	if code, _, stderr := runCLI(t, dir, "mkfs", "--size", "16M", "--no-data-checksums", img); code != 0 {
		t.Fatalf("mkfs: exit %d\n%s", code, stderr)
	}
	dev, err := device.Open(img, device.Options{})
	if err != nil {
		t.Fatal(err)
	}
	vol, err := volume.Open(dev, volume.Options{CommitInterval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	_, h, err := vol.Create(volume.Context{}, volume.RootIno, "f", 0o644, syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	h.WriteAt([]byte(strings.Repeat("data ", 5000)), 0)
	h.Release()
	if err := vol.Close(); err != nil {
		t.Fatal(err)
	}
	dev.Close()

	feature := "data-checksums: every block of file data"
	if _, stdout, _ := runCLI(t, dir, "info", img); strings.Contains(stdout, feature) {
		t.Fatalf("info of an image made without checksums shows them:\n%s", stdout)
	}
	if code, _, stderr := runCLI(t, dir, "tune", img); code != exitUsage || !strings.Contains(stderr, "--data-checksums or --no-data-checksums") {
		t.Errorf("tune without a change: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, dir, "tune", "--data-checksums", img)
	if code != 0 || !strings.Contains(stdout, "every block of file data has a checksum") {
		t.Fatalf("tune --data-checksums: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, stdout, _ := runCLI(t, dir, "info", img); !strings.Contains(stdout, feature) {
		t.Errorf("info after tune --data-checksums:\n%s", stdout)
	}
	if code, stdout, stderr := runCLI(t, dir, "fsck", "--data", img); code != fsckClean {
		t.Errorf("fsck --data after tune: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, dir, "tune", "--no-data-checksums", img); code != 0 {
		t.Fatalf("tune --no-data-checksums: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, stdout, _ := runCLI(t, dir, "info", img); strings.Contains(stdout, feature) {
		t.Errorf("info after tune --no-data-checksums:\n%s", stdout)
	}
	if code, stdout, stderr := runCLI(t, dir, "fsck", img); code != fsckClean {
		t.Errorf("fsck after taking checksums away: exit %d\n%s%s", code, stdout, stderr)
	}
}
