package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary be the loopback target's server: the
// target starts `EXE bench serve-loopback ROOT MNT`, as smallfs does.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "bench" {
		os.Exit(Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--threads", "0"},
		{"--sizes", "4Q"},
		{"--rounds", "0"},
		{"--nonsense"},
		{"/no/such/directory"},
		{"smallfs:"},
		{"--age", "--scale"},
		{"--tree", "--age"},
	} {
		var out, errOut bytes.Buffer
		scratch := t.TempDir()
		code := Main(append([]string{"--scratch", scratch}, args...), &out, &errOut)
		if code != 2 && !(args[0] == "/no/such/directory" && code == 1) {
			t.Errorf("%v: exit %d, want a usage error; stderr %s", args, code, errOut.String())
		}
		if !strings.HasPrefix(errOut.String(), "smallfs bench: ") {
			t.Errorf("%v: stderr %q does not start with the command name", args, errOut.String())
		}
		if names, _ := readNames(scratch); len(names) != 0 {
			t.Errorf("%v: left %v in the scratch directory", args, names)
		}
	}
}

// needFUSEMount skips a test that mounts FUSE filesystems where it
// cannot, and under -short.
func needFUSEMount(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("mounts filesystems")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
}

// runBrief runs the bench on args for one round of 2 × 60 files of 4 KiB,
// writing the report to dir/r.json, and returns the report; a run that
// fails fails the test.
func runBrief(t *testing.T, scratch, dir string, args ...string) *Report {
	t.Helper()
	jsonPath := filepath.Join(dir, "r.json")
	var out, errOut bytes.Buffer
	code := Main(append([]string{"--scratch", scratch, "--files", "60", "--files-per-dir", "25", "--sizes", "4K",
		"--rounds", "1", "--json", jsonPath}, args...), &out, &errOut)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	rep, err := ReadReport(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestEndToEnd runs the real command's targets briefly: smallfs (built
// from this source tree: mkfs, mount, stats, umount, fsck), go-fuse's
// loopback in a child process, and a plain directory.
func TestEndToEnd(t *testing.T) {
	needFUSEMount(t)
	scratch, dir := t.TempDir(), t.TempDir()
	svgPath := filepath.Join(dir, "r.svg")
	rep := runBrief(t, scratch, dir, "--svg", svgPath, "smallfs", "loopback", dir)
	if len(rep.Targets) != 3 || len(rep.Runs) != 3 || len(rep.Ratios) != 2 {
		t.Fatalf("%d targets, %d runs, %d ratios; want 3, 3, 2", len(rep.Targets), len(rep.Runs), len(rep.Ratios))
	}
	if len(rep.Load) != 1 || rep.Load[0].Before == nil || rep.Load[0].After == nil || rep.Load[0].OthersCPU == nil {
		t.Errorf("machine load per round: %+v, want one round with its readings", rep.Load)
	}
	for _, run := range rep.Runs {
		if run.Error != "" {
			t.Errorf("%s: %s", run.Target, run.Error)
		}
		for _, m := range run.Ops {
			if m.Status != StatusOK || m.Files != 120 {
				t.Errorf("%s %s: %s, %d files; want ok, 120", run.Target, m.Op, m.Status, m.Files)
			}
		}
	}
	sm := rep.Runs[0]
	if sm.Target != "smallfs" || sm.MemPerFile == nil || sm.MemGrowthPerFile == nil || sm.Ops[0].RoundTrips == nil || sm.Ops[0].CPUPer1000 == nil || sm.Ops[0].GCs == nil {
		t.Errorf("smallfs run lacks the daemon's figures: %+v", sm)
	}
	if rt := sm.Ops[0].Requests; rt["CREATE"] != 1 {
		t.Errorf("smallfs create: %v CREATE requests per file, want 1", rt["CREATE"])
	}
	// A cold read reaches the daemon: the kernel has neither the pages
	// nor the names any more.
	for _, m := range sm.Ops {
		if m.Op == "cold-read" && (m.Requests["READ"] < 1 || m.Requests["LOOKUP"] < 1) {
			t.Errorf("smallfs cold-read: requests per file %v, want a READ and a LOOKUP of each file", m.Requests)
		}
	}
	if lb := rep.Runs[1]; lb.Target != "loopback" || lb.MemPerFile == nil || lb.Ops[0].RoundTrips != nil {
		t.Errorf("loopback: want memory per file and no request counts: %+v", lb)
	}
	if names, _ := readNames(scratch); len(names) != 0 {
		t.Errorf("scratch directory left behind: %v", names)
	}
	if names, _ := readNames(dir); len(names) != 2 {
		t.Errorf("the directory target kept %v, want only the report files", names)
	}
	if b, err := os.ReadFile(svgPath); err != nil || !bytes.Contains(b, []byte("smallfs ÷ loopback")) {
		t.Errorf("chart: %v", err)
	}
}

// TestVariantTarget runs smallfs beside smallfs:OPTS and checks the
// options reached the variant's mount: in no-open mode a create is a MKNOD.
func TestVariantTarget(t *testing.T) {
	needFUSEMount(t)
	scratch, dir := t.TempDir(), t.TempDir()
	rep := runBrief(t, scratch, dir, "smallfs", "smallfs:no_open=on,commit_interval=2")
	if len(rep.Runs) != 2 || len(rep.Ratios) != 1 {
		t.Fatalf("%d runs, %d ratios; want 2, 1", len(rep.Runs), len(rep.Ratios))
	}
	plain, variant := rep.Runs[0], rep.Runs[1]
	if plain.Target != "smallfs" || variant.Target != "smallfs:no_open=on,commit_interval=2" {
		t.Fatalf("targets %q, %q", plain.Target, variant.Target)
	}
	if plain.Error != "" || variant.Error != "" {
		t.Fatalf("errors: %q, %q", plain.Error, variant.Error)
	}
	if rt := plain.Ops[0].Requests; rt["CREATE"] != 1 || rt["MKNOD"] != 0 {
		t.Errorf("smallfs create: %v", rt)
	}
	// The mount's first CREATE is answered ENOSYS, then MKNOD serves.
	if rt := variant.Ops[0].Requests; rt["CREATE"] > 0.1 || rt["MKNOD"] != 1 {
		t.Errorf("smallfs:no_open=on create: %v, want MKNOD instead of CREATE", rt)
	}
	if names, _ := readNames(scratch); len(names) != 0 {
		t.Errorf("scratch directory left behind: %v", names)
	}
}
