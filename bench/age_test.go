package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// sizeTree makes a small tree of files from 0 to 24 KiB to draw sizes from.
func sizeTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for i, size := range []int{0, 300, 1500, 4096, 5000, 9000, 12000, 24000} {
		if err := os.WriteFile(filepath.Join(root, string(rune('a'+i))), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// runAgeBrief runs `bench --age` with args on a 16 MiB device and returns
// the report it wrote; a run that fails fails the test unless failOK.
func runAgeBrief(t *testing.T, scratch, dir string, args ...string) (*AgeReport, int, string) {
	t.Helper()
	jsonPath := filepath.Join(dir, "age.json")
	var out, errOut bytes.Buffer
	code := Main(append([]string{"--age", "--scratch", scratch, "--device-size", "16M", "--size-tree", sizeTree(t),
		"--files-per-dir", "20", "--batch", "40", "--json", jsonPath}, args...), &out, &errOut)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	rep, err := readAgeReport(jsonPath)
	if err != nil {
		t.Fatalf("exit %d: %v", code, err)
	}
	return rep, code, out.String()
}

func needAgeMounts(t *testing.T) {
	t.Helper()
	needFUSEMount(t)
	if err := dropCaches(); err != nil {
		t.Skip(err)
	}
}

// TestAgeEndToEnd ages smallfs, ext4-loop and loopback for a few rounds
// and checks that every checkpoint has its figures, aged and fresh, that
// they are sane, and that nothing is left behind.
func TestAgeEndToEnd(t *testing.T) {
	needAgeMounts(t)
	scratch, dir := t.TempDir(), t.TempDir()
	svg := filepath.Join(dir, "age.svg")
	rep, code, out := runAgeBrief(t, scratch, dir, "--fill", "40", "--rounds", "2", "--every", "2", "--svg", svg,
		"smallfs", "ext4-loop", "loopback")
	if code != 0 || rep.Failed {
		t.Fatalf("exit %d, failed %v: %v", code, rep.Failed, rep.Errors)
	}
	if len(rep.Targets) != 3 {
		t.Fatalf("targets %+v, want 3", rep.Targets)
	}
	var rounds []int
	for _, cp := range rep.Checkpoints {
		rounds = append(rounds, cp.Round)
		if len(cp.Targets) != 3 {
			t.Errorf("round %d: %d targets measured", cp.Round, len(cp.Targets))
		}
		for _, m := range cp.Targets {
			for _, side := range []struct {
				name string
				s    AgeSide
			}{{"aged", m.Aged}, {"fresh", m.Fresh}} {
				s := side.s
				what := m.Target + " " + side.name
				if s.ColdFiles != int64(m.Files) || s.ColdFiles == 0 || s.ColdMBps == nil || *s.ColdMBps <= 0 {
					t.Errorf("round %d, %s: read %d files of %d, %v MB/s", cp.Round, what, s.ColdFiles, m.Files, s.ColdMBps)
				}
				if s.CreatePerSec == nil || s.AppendPerSec == nil {
					t.Errorf("round %d, %s: no writes under age: %v", cp.Round, what, s.Notes)
				}
				l := s.Layout
				if l == nil {
					t.Errorf("round %d, %s: no layout", cp.Round, what)
					continue
				}
				if l.Files != m.Files || l.Extents.Median < 1 || l.Small.Files == 0 || l.Spread.Dirs == 0 || l.Spread.Median < 1 {
					t.Errorf("round %d, %s: layout %+v for %d files", cp.Round, what, l.Figures, m.Files)
				}
				if l.FreeScore == nil || *l.FreeScore < 0 || *l.FreeScore > 1 {
					t.Errorf("round %d, %s: free-space score %v", cp.Round, what, l.FreeScore)
				}
			}
			if m.ColdRatio == nil {
				t.Errorf("round %d, %s: no aged/fresh ratio", cp.Round, m.Target)
			}
			if m.ENOSPC != 0 {
				t.Errorf("round %d, %s: %d ENOSPC at 40 %% full", cp.Round, m.Target, m.ENOSPC)
			}
		}
	}
	if !slices.Equal(rounds, []int{0, 2}) {
		t.Errorf("checkpoints at rounds %v, want 0 and 2", rounds)
	}
	if cp := rep.Checkpoints[len(rep.Checkpoints)-1]; cp.Ops[ageRename] == 0 || cp.Ops[ageRewrite] == 0 || cp.Ops[ageAppend] == 0 || cp.Ops[ageDelete] == 0 {
		t.Errorf("the churn did not do every kind of operation: %v", cp.Ops)
	}
	if len(rep.Summary) != 3 || rep.Summary[0].LastRatio == nil || rep.Summary[0].SmallMedian == nil {
		t.Errorf("summary %+v", rep.Summary)
	}
	if !strings.Contains(out, "round 2:") || !strings.Contains(out, "summary:") {
		t.Errorf("table lacks the last checkpoint or the summary")
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("<polyline")) {
		t.Errorf("chart: %v", err)
	}
	if names, _ := readNames(scratch); len(names) != 0 {
		t.Errorf("scratch directory left behind: %v", names)
	}
}

// TestAgeFullDevice holds the tree above what the device holds: writes
// meet ENOSPC, the run counts them and goes on after deletes, every cold
// read finds exactly the bytes write(2) took, and smallfs's fsck at
// unmount is clean (a run that leaves it unclean fails).
func TestAgeFullDevice(t *testing.T) {
	needAgeMounts(t)
	scratch, dir := t.TempDir(), t.TempDir()
	rep, code, _ := runAgeBrief(t, scratch, dir, "--fill", "130", "--churn", "20", "--rounds", "2", "--every", "2", "smallfs", "ext4-loop")
	if code != 0 || rep.Failed {
		t.Fatalf("exit %d, failed %v: %v", code, rep.Failed, rep.Errors)
	}
	last := rep.Checkpoints[len(rep.Checkpoints)-1]
	if last.Round != 2 || len(last.Targets) != 2 {
		t.Fatalf("last checkpoint %+v", last)
	}
	for _, m := range last.Targets {
		if m.ENOSPC == 0 {
			t.Errorf("%s: no ENOSPC with the tree at 130 %% of the device", m.Target)
		}
		if m.Aged.ColdFiles != int64(m.Files) || m.Files == 0 {
			t.Errorf("%s: cold read found %d files of %d", m.Target, m.Aged.ColdFiles, m.Files)
		}
	}
	if names, _ := readNames(scratch); len(names) != 0 {
		t.Errorf("scratch directory left behind: %v", names)
	}
}

// TestAgeInterrupted cancels the run once the aged filesystems are
// mounted: it stops, and leaves no mount and no scratch directory.
func TestAgeInterrupted(t *testing.T) {
	needAgeMounts(t)
	scratch := t.TempDir()
	c, err := parseFlags([]string{"--age", "--scratch", scratch, "--device-size", "16M", "--size-tree", sizeTree(t),
		"--rounds", "1000", "--every", "1000", "smallfs", "ext4-loop"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Wait for the two aged mounts (the preflights come and go first).
		for ctx.Err() == nil {
			if len(mountsUnder(scratch)) >= 2 {
				time.Sleep(500 * time.Millisecond)
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var out, errOut bytes.Buffer
	rep, err := runAge(ctx, c, &out, &errOut)
	if !errors.Is(err, ErrInterrupted) || rep == nil || !rep.Interrupted {
		t.Errorf("interrupted run: %v, want ErrInterrupted and a report that says so", err)
	}
	if m := mountsUnder(scratch); len(m) != 0 {
		t.Errorf("still mounted: %v", m)
	}
	if names, _ := readNames(scratch); len(names) != 0 {
		t.Errorf("scratch directory left behind: %v", names)
	}
}

func TestAgeUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--age", "--sizes", "4K"},
		{"--age", "--fill", "0"},
		{"--age", "--device-size", "1M"},
		{"--age", "--every", "0"},
		{"--age", "--batch", "1"},
		{"--age", "tmpfs"},
		{"--age", "--rounds", "-1"},
	} {
		if _, err := parseFlags(args, &bytes.Buffer{}); !errors.Is(err, ErrUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	c, err := parseFlags([]string{"--age"}, &bytes.Buffer{})
	if err != nil || c.ag.rounds != 100 || c.ag.deviceSize != 1<<30 || c.ag.fill != 90 {
		t.Errorf("defaults: %+v, %v; want 100 rounds of a 1 GiB device at 90 %%", c.ag, err)
	}
	if c, err := parseFlags([]string{"--age", "--rounds", "0"}, &bytes.Buffer{}); err != nil || c.ag.rounds != 0 {
		t.Errorf("--rounds 0: %v", err)
	}
}

func TestDumpe2fsFreeJoinsGroups(t *testing.T) {
	out := `Group 0: (Blocks 0-32767) csum 0x1234
  Free blocks: 100-199, 300, 32000-32767
  Free inodes: 12-8192
Group 1: (Blocks 32768-65535)
  Free blocks: 32768-32799, 40000-40009
Group 2: (Blocks 65536-98303)
  Free blocks: 
`
	lens, err := dumpe2fsFree(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{100, 1, 768 + 32, 10}; !slices.Equal(lens, want) {
		t.Errorf("free extents %v, want %v", lens, want)
	}
	if _, err := dumpe2fsFree("  Free blocks: 9-3\n"); err == nil {
		t.Error("a range that ends before it starts was accepted")
	}
}

// TestAgeModelHoldsTheFill: the churn keeps the tree at its target, the
// same seed draws the same operations, and a state that applies them in
// a directory ends with the model's files.
func TestAgeModelHoldsTheFill(t *testing.T) {
	sizes, err := sampleSizes(sizeTree(t))
	if err != nil {
		t.Fatal(err)
	}
	const target = 2 << 20
	gen := func() ([]ageOp, *ageModel) {
		m := newAgeModel(7, sizes, 4096, 10, target)
		ops := m.fill()
		for range 5 {
			ops = append(ops, m.round(target/5)...)
		}
		return ops, m
	}
	ops, m := gen()
	again, _ := gen()
	if len(ops) != len(again) || ops[len(ops)/2] != again[len(ops)/2] || ops[len(ops)-1] != again[len(ops)-1] {
		t.Fatal("the same seed drew other operations")
	}
	if m.used > target || m.used < target-24000-4096*8 {
		t.Errorf("tree holds %d bytes of blocks, target %d", m.used, target)
	}
	st := newAgeState(t.TempDir(), m.dirs)
	for _, op := range ops {
		if err := st.apply(op); err != nil {
			t.Fatal(err)
		}
	}
	if st.live() != len(m.live) || st.enospc != 0 {
		t.Fatalf("state holds %d files, model %d; %d ENOSPC", st.live(), len(m.live), st.enospc)
	}
	for _, id := range m.live {
		if st.dir[id] != m.dir[id] || st.size[id] != m.size[id] {
			t.Fatalf("file %d: in %d with %d bytes, model %d with %d", id, st.dir[id], st.size[id], m.dir[id], m.size[id])
		}
	}
	// readTree drops caches (root); check the bytes with its reader alone.
	r := &treeReader{s: st, ctx: context.Background(), dirOf: map[string]int32{}, buf: make([]byte, recordSize)}
	for i, d := range st.dirs {
		r.dirOf[d] = int32(i)
	}
	if err := r.dir(st.root, ""); err != nil || r.files != int64(len(m.live)) {
		t.Fatalf("read back %d files: %v", r.files, err)
	}
	// A changed byte is found.
	victim := m.live[0]
	for _, id := range m.live {
		if m.size[id] > 0 {
			victim = id
			break
		}
	}
	p := st.path(victim)
	b, err := os.ReadFile(p)
	if err != nil || len(b) == 0 {
		t.Fatalf("no file with bytes to change: %v", err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r.files = 0
	if err := r.dir(st.root, ""); !errors.Is(err, ErrVerify) {
		t.Errorf("a changed byte: %v, want ErrVerify", err)
	}
}
