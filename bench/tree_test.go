package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestTreeBrief runs --tree on a small tree against smallfs and a plain
// directory: every step runs on both, grep finds on each the files it
// finds in the source, and nothing is left behind.
func TestTreeBrief(t *testing.T) {
	needFUSEMount(t)
	t.Parallel() // mounts of its own; waits mostly on the daemon and the kernel
	src := filepath.Join(t.TempDir(), "src")
	for d := range 3 {
		dir := filepath.Join(src, fmt.Sprintf("pkg%d", d), "internal")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			body := "package x\n"
			if i%4 == 0 {
				body += "func main() {}\n"
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink("pkg0", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	scratch, dir := t.TempDir(), t.TempDir()
	jsonPath := filepath.Join(t.TempDir(), "tree.json")
	var out, errOut bytes.Buffer
	code := Main([]string{"--tree", "--tree-src", src, "--rounds", "1", "--scratch", scratch, "--json", jsonPath, "smallfs", dir}, &out, &errOut)
	t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep TreeReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Files != 60 || rep.Dirs != 7 || rep.Matches != 15 || len(rep.Runs) != 2 {
		t.Fatalf("%d files, %d dirs, %d matches, %d runs; want 60, 7, 15, 2", rep.Files, rep.Dirs, rep.Matches, len(rep.Runs))
	}
	for _, run := range rep.Runs {
		if run.Error != "" || len(run.Steps) != len(treeSteps) {
			t.Errorf("%s: steps %v, error %q", run.Target, run.Steps, run.Error)
		}
	}
	if _, ok := rep.Ratios["tar-x"][dir]; !ok {
		t.Errorf("no ratio of smallfs to %s: %v", dir, rep.Ratios)
	}
	if names, _ := readNames(scratch); len(names) != 0 {
		t.Errorf("scratch directory left behind: %v", names)
	}
	if names, _ := readNames(dir); len(names) != 0 {
		t.Errorf("the directory target kept %v", names)
	}
}
