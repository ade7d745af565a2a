package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
	"github.com/smallfs/smallfs/fs/format"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the output")

// runCLI runs the command in-process and returns its exit code and output,
// with dir (a temporary directory) replaced by $TMP so goldens are stable.
func runCLI(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdout: &out, stderr: &errOut}
	code := a.run(append([]string{"smallfs"}, args...))
	clean := func(s string) string {
		if dir != "" {
			s = strings.ReplaceAll(s, dir, "$TMP")
		}
		return s
	}
	return code, clean(out.String()), clean(errOut.String())
}

// golden compares a run with testdata/name.golden (or rewrites it under
// -update).
func golden(t *testing.T, name string, code int, stdout, stderr string) {
	t.Helper()
	got := fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, stdout, stderr)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: output differs from %s (-update rewrites it)\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func TestHelpAndUsageGolden(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	zeros := filepath.Join(dir, "zeros.img")
	if err := os.WriteFile(zeros, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	newer := newerFormatImage(t, dir)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"help", []string{"--help"}},
		{"noargs", nil},
		{"help-mkfs", []string{"mkfs", "--help"}},
		{"help-mount", []string{"mount", "-h"}},
		{"help-helper", []string{"img", "/mnt", "--help"}},
		{"help-fsck", []string{"help", "fsck"}},
		{"help-info", []string{"info", "--help"}},
		{"help-stats", []string{"stats", "--help"}},
		{"help-sync", []string{"sync", "--help"}},
		{"usage-sync-args", []string{"sync"}},
		{"sync-not-mounted", []string{"sync", dir}},
		{"usage-mount-args", []string{"mount", "img"}},
		{"usage-mount-flag", []string{"mount", "--bogus", "img", "/mnt"}},
		{"usage-mount-option", []string{"mount", "-o", "bogus,log_level=loud", "img", "/mnt"}},
		{"usage-mount-flag-value", []string{"mount", "--commit-interval", "0", "img", "/mnt"}},
		{"usage-helper-args", []string{"img"}},
		{"usage-helper-flag", []string{"img", "/mnt", "-x"}},
		{"usage-helper-type", []string{"img", "/mnt", "-t", "ext4"}},
		{"usage-helper-option", []string{"img", "/mnt", "-o", "rw,noatime,allow_root", "-o", "metrics_addr=0.0.0.0:1"}},
		{"usage-helper-kernel-option", []string{"img", "/mnt", "-o", "max_read=0"}},
		{"usage-helper-option-conflict", []string{"img", "/mnt", "-o", "no_open=on,flush_on_close=on"}},
		{"usage-mount-kernel-option", []string{"mount", "-o", "user_id=5", "img", "/mnt"}},
		{"usage-stats-args", []string{"stats"}},
		{"usage-stats-interval", []string{"stats", "--watch", "--interval", "0s", dir}},
		{"stats-not-mounted", []string{"stats", dir}},
		{"stats-missing", []string{"stats", filepath.Join(dir, "nowhere", "mnt")}},
		{"usage-fsck", []string{"fsck", "--repair"}},
		{"usage-fsck-flag", []string{"fsck", "-y", "img"}},
		{"usage-mkfs-size", []string{"mkfs", "--size", "12Q", "img"}},
		{"usage-mkfs-block-size", []string{"mkfs", "--block-size", "3000", "img"}},
		{"usage-mkfs-root-owner", []string{"mkfs", "--root-owner", "4294967295:4294967295", "--size", "1M", filepath.Join(dir, "owner.img")}},
		{"usage-mkfs-root-gid", []string{"mkfs", "--root-owner", "0:4294967295", "--size", "1M", filepath.Join(dir, "owner.img")}},
		{"usage-info", []string{"info", "a", "b"}},
		{"mkfs-missing", []string{"mkfs", filepath.Join(dir, "new.img")}},
		{"info-missing", []string{"info", filepath.Join(dir, "nowhere.img")}},
		{"info-too-small", []string{"info", notDir}},
		{"info-not-smallfs", []string{"info", zeros}},
		{"info-newer", []string{"info", newer}},
		{"mkfs-refuses-newer", []string{"mkfs", newer}},
		{"info-directory", []string{"info", dir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, dir, tc.args...)
			golden(t, tc.name, code, stdout, stderr)
		})
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-V"}, {"version"}, {"img", "/mnt", "-V"}} {
		code, stdout, _ := runCLI(t, "", args...)
		if code != 0 || !strings.HasPrefix(stdout, "smallfs devel") || !strings.Contains(stdout, "on-disk format 1") {
			t.Errorf("%q: exit %d, %q", args, code, stdout)
		}
	}
}

// TestHelpNamesEveryFlag keeps help texts and flag sets from drifting: every
// flag a command defines must appear in its help.
func TestHelpNamesEveryFlag(t *testing.T) {
	for _, c := range commands {
		code, help, _ := runCLI(t, "", c.name, "--help")
		if code != 0 {
			t.Errorf("%s --help: exit %d", c.name, code)
		}
		for _, f := range flagsOf(c.name) {
			if !strings.Contains(help, "--"+f) && !strings.Contains(help, "-"+f+",") &&
				!strings.Contains(help, "-"+f+" ") && !(c.name == "mount" && optionListed(help, f)) {
				t.Errorf("%s --help does not mention --%s", c.name, f)
			}
		}
	}
}

// flagsOf lists the flags a command defines.
func flagsOf(name string) []string {
	var fs *flag.FlagSet
	switch name {
	case "stats":
		fs, _ = statsFlags()
	case "mkfs":
		fs, _ = mkfsFlags()
	case "fsck":
		fs, _ = fsckFlags()
	case "info":
		fs, _ = infoFlags()
	case "mount":
		var p mountopt.Args
		fs = mountFlags(&p, func(string) {})
	default:
		return nil
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// optionListed reports whether the mount help lists the option whose flag
// is f in its option table.
func optionListed(help, f string) bool {
	name := strings.ReplaceAll(f, "-", "_")
	return strings.Contains(help, "\n  "+name+" ") || strings.Contains(help, "\n  "+name+"=")
}

// newerFormatImage writes an image whose superblocks claim a format
// version this smallfs does not know.
func newerFormatImage(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "newer.img")
	img := make([]byte, 1<<20)
	sb := format.Superblock{Version: format.FormatVersion + 1, BlockSize: 4096, Blocks: 256, Generation: 1}
	sb.Encode(img[format.SuperblockAOffset:])
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFormatErrorDamaged: damaged metadata is told as such, without the
// "open:" volume.Open puts first, and errors.Is still finds the cause.
func TestFormatErrorDamaged(t *testing.T) {
	err := formatError("img", fmt.Errorf("open: checkpoint at block 9: %w", format.ErrCorrupt))
	if got, want := err.Error(), "img: damaged filesystem: checkpoint at block 9: "+format.ErrCorrupt.Error(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(err, format.ErrCorrupt) {
		t.Errorf("%v does not wrap ErrCorrupt", err)
	}
}
