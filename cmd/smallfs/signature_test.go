package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMkfsRefusesForeignData: mkfs refuses, without --force, a device
// holding another filesystem, a partition table, swap, an encrypted
// volume, or any bytes that are not zero at its start, naming what it
// found; --force overwrites it; a device of zeros is made at once. It
// once overwrote an ext4 image without a word.
func TestMkfsRefusesForeignData(t *testing.T) {
	dir := t.TempDir()
	image := func(name string, at int, magic string) string {
		img := make([]byte, 1<<20)
		copy(img[at:], magic)
		if name == "ext4" {
			img[1024] = 1 // an inode count, a block size of 1 KiB
		}
		path := filepath.Join(dir, name+".img")
		if err := os.WriteFile(path, img, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cases := []struct{ path, want string }{
		{image("ext4", 1080, "\x53\xef"), "an ext2/ext3/ext4 filesystem"},
		{image("xfs", 0, "XFSB"), "an XFS filesystem"},
		{image("btrfs", 0x10040, "_BHRfS_M"), "a btrfs filesystem"},
		{image("swap", 4086, "SWAPSPACE2"), "swap space"},
		{image("luks", 0, "LUKS\xba\xbe"), "a LUKS encrypted volume"},
		{image("gpt", 512, "EFI PART"), "a GPT partition table"},
		{image("mbr", 510, "\x55\xaa"), "a DOS/MBR partition table"},
		{image("data", 100<<10, "x"), "data in no format smallfs knows (a byte that is not zero at offset 102400"},
	}
	for _, tool := range []struct{ name, want string }{{"mkfs.ext4", "an ext2/ext3/ext4 filesystem"}, {"mkswap", "swap space"}} {
		if _, err := exec.LookPath(tool.name); err != nil {
			continue
		}
		path := filepath.Join(dir, "made-by-"+tool.name+".img")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, 16<<20); err != nil {
			t.Fatal(err)
		}
		args := []string{path}
		if tool.name == "mkfs.ext4" {
			args = []string{"-q", "-F", path}
		}
		if out, err := exec.Command(tool.name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", tool.name, err, out)
		}
		cases = append(cases, struct{ path, want string }{path, tool.want})
	}
	for _, c := range cases {
		code, _, stderr := runCLI(t, dir, "mkfs", c.path)
		if code != exitError || !strings.Contains(stderr, "holds "+c.want) || !strings.Contains(stderr, "--force overwrites it") {
			t.Errorf("mkfs over %s: exit %d, %q; want 1 naming %q", filepath.Base(c.path), code, stderr, c.want)
		}
		if code, _, stderr := runCLI(t, dir, "mkfs", "--force", c.path); code != exitOK {
			t.Errorf("mkfs --force over %s: exit %d, %s", filepath.Base(c.path), code, stderr)
		}
	}
	zeros := filepath.Join(dir, "zeros.img")
	if err := os.Truncate(image("zeros", 0, ""), 4<<20); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, dir, "mkfs", zeros); code != exitOK {
		t.Errorf("mkfs over zeros: exit %d, %s", code, stderr)
	}
}
