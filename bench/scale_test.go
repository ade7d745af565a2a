package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScaleBrief runs --scale at its smallest size: every step runs, the
// stat steps find every file with its size, fsck finds the image clean,
// and nothing is left mounted or in the scratch directory.
func TestScaleBrief(t *testing.T) {
	needFUSEMount(t)
	t.Parallel() // mounts of its own; waits mostly on the daemon and the kernel
	scratch, dir := t.TempDir(), t.TempDir()
	jsonPath := filepath.Join(dir, "scale.json")
	var out, errOut bytes.Buffer
	dropsBefore := drops.Load()
	code := Main([]string{"--scale", "--scale-files", "3000", "--scratch", scratch, "--json", jsonPath}, &out, &errOut)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep ScaleReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rep.Steps {
		names = append(names, s.Name)
	}
	want := "create-first stat-first create create-last stat-last ls-lR find-ls umount mount settled umount-again fsck"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("steps %q, want %q", got, want)
	}
	if rep.Files != 3000 || rep.Dirs != 3 || rep.Window != 1000 || rep.Create == nil || rep.Stat == nil {
		t.Errorf("report: %d files, %d dirs, window %d, ratios %v %v", rep.Files, rep.Dirs, rep.Window, rep.Create, rep.Stat)
	}
	for _, s := range rep.Steps {
		switch s.Name {
		case "create-first", "create-last":
			if s.Files != 1000 || s.Requests["CREATE"] != 1000 || s.RSS == 0 {
				t.Errorf("%s: %d files, %d CREATEs, RSS %d; want 1000, 1000 and the daemon's RSS", s.Name, s.Files, s.Requests["CREATE"], s.RSS)
			}
		case "stat-first", "stat-last":
			// Caches dropped: every file and its directory is looked up.
			if s.Files != 1000 || s.Requests["LOOKUP"] < 1000 {
				t.Errorf("%s: %d files, %d LOOKUPs; want 1000 and one per file at least", s.Name, s.Files, s.Requests["LOOKUP"])
			}
		case "ls-lR":
			if s.Requests["READDIRPLUS"] == 0 {
				t.Errorf("ls-lR sent no READDIRPLUS: %v", s.Requests)
			}
		case "mount":
			if s.RSS == 0 || s.DaemonCPU == nil {
				t.Errorf("mount: no figures of the new daemon: %+v", s)
			}
		case "fsck":
			if s.MaxRSS == 0 || s.CPU == nil {
				t.Errorf("fsck: no peak memory or CPU: %+v", s)
			}
		}
	}
	// A drop before each stat window, ls -lR and find -ls.
	if n := drops.Load() - dropsBefore; n < 4 {
		t.Errorf("the run asked for %d cache drops, want one before each of the 4 cold steps at least", n)
	}
	if names, _ := readNames(scratch); len(names) != 0 {
		t.Errorf("scratch directory left behind: %v", names)
	}
}

func TestScaleUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main([]string{"--scale", "--scale-files", "10", "--scratch", t.TempDir()}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "scale-files 10") {
		t.Errorf("--scale-files 10: exit %d, stderr %q; want a usage error naming it", code, errOut.String())
	}
}
