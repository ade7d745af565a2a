package bench

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestFuse2fs runs fuse2fs briefly beside a plain directory: every step
// passes, its CPU and memory are read like the loopback's, and it appears
// in the ratio columns.
func TestFuse2fs(t *testing.T) {
	needFUSEMount(t)
	if _, err := exec.LookPath("fuse2fs"); err != nil {
		t.Skip("fuse2fs not installed")
	}
	scratch, dir := t.TempDir(), t.TempDir()
	rep := runBrief(t, scratch, dir, "--base", dir, "fuse2fs", dir)
	if len(rep.Runs) != 2 || rep.Runs[0].Target != "fuse2fs" || len(rep.Ratios) != 1 || rep.Ratios[0].Other != "fuse2fs" {
		t.Fatalf("runs %d (first %q), ratios %+v; want fuse2fs and the directory, one ratio to fuse2fs",
			len(rep.Runs), rep.Runs[0].Target, rep.Ratios)
	}
	f := rep.Runs[0]
	for _, m := range f.Ops {
		if m.Status != StatusOK || m.Files != 120 {
			t.Errorf("fuse2fs %s: %s, %d files (%s); want ok, 120", m.Op, m.Status, m.Files, m.Error)
		}
	}
	if f.MemPerFile == nil || f.Ops[0].CPUPer1000 == nil || f.Ops[0].RoundTrips != nil {
		t.Errorf("fuse2fs: want memory per file and CPU, no request counts: %+v", f)
	}
	if geo := rep.Ratios[0].Geomean; geo == nil {
		t.Error("no geometric mean over the steps both ran")
	}
	if names, _ := readNames(scratch); len(names) != 0 {
		t.Errorf("scratch directory left behind: %v", names)
	}
}

// Without fuse2fs on PATH the target is skipped with a one-line reason
// that says how to install it, and the other targets still run.
func TestFuse2fsMissingIsSkipped(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	scratch, dir := t.TempDir(), t.TempDir()
	var out, errOut bytes.Buffer
	code := Main([]string{"--scratch", scratch, "--files", "10", "--sizes", "4K", "--rounds", "1", "fuse2fs", dir}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, errOut.String())
	}
	// (a busy machine adds a line on the round's load)
	want := "smallfs bench: skipping fuse2fs: target failed: fuse2fs not installed (apt-get install fuse2fs)"
	if first, _, _ := strings.Cut(errOut.String(), "\n"); first != want || strings.Count(errOut.String(), "fuse2fs") != 3 {
		t.Errorf("stderr %q, want the one line %q about fuse2fs", errOut.String(), want)
	}
	if !strings.Contains(out.String(), "skipped fuse2fs: ") {
		t.Errorf("the table does not say fuse2fs was skipped:\n%s", out.String())
	}
}
