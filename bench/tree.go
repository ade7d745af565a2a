package bench

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// TreeSchema names the layout of a --tree report's JSON.
const TreeSchema = "smallfs-bench-tree/1"

// treeSteps are the steps of a --tree run, in order.
var treeSteps = []struct{ name, what string }{
	{"tar-x", "tar xf of the tarball into the empty filesystem"},
	{"stat-walk", "caches dropped, lstat of every path the tarball holds, in its order (git status)"},
	{"grep-r", "caches dropped, grep -r of a string through every file"},
	{"rm-rf", "rm -rf of the tree"},
}

// TreeReport is what `smallfs bench --tree` measured.
type TreeReport struct {
	Schema  string       `json:"schema"`
	Date    time.Time    `json:"date"`
	Machine Machine      `json:"machine"`
	Source  string       `json:"source"` // the directory the tarball was made of
	Files   int          `json:"files"`  // regular files in it
	Dirs    int          `json:"dirs"`
	Bytes   int64        `json:"bytes"` // of the regular files
	Pattern string       `json:"pattern"`
	Matches int          `json:"matches"` // files grep -rl lists, on every target
	Rounds  int          `json:"rounds"`
	Targets []TargetInfo `json:"targets"`
	Skipped []Skip       `json:"skipped,omitempty"`
	Runs    []TreeRun    `json:"runs"`
	// Medians are seconds per step and target, over the rounds that ran
	// the step; Ratios the base target's speed over each other's
	// (their median time over its), step by step.
	Base    string                        `json:"base"`
	Medians map[string]map[string]float64 `json:"medians"`
	Ratios  map[string]map[string]float64 `json:"ratios"`
	Load    []RoundLoad                   `json:"load"`
	Elapsed time.Duration                 `json:"elapsed_ns"`
	Failed  bool                          `json:"failed"`
}

// TreeRun is one target's steps in one round.
type TreeRun struct {
	Target string             `json:"target"`
	Round  int                `json:"round"`
	Steps  map[string]float64 `json:"steps"` // seconds
	Error  string             `json:"error,omitempty"`
}

// treeSource is the tree --tree unpacks: the files and directories of
// src as the tarball lists them, relative to its parent.
type treeSource struct {
	dir     string
	tarball string
	paths   []string // every entry, in tarball order
	files   int
	dirs    int
	bytes   int64
}

// defaultTreeSrc is the Go distribution's src/, found through `go env
// GOROOT` or in /usr/local/go.
func defaultTreeSrc(ctx context.Context) string {
	if out, err := command(ctx, 30*time.Second, "go", "env", "GOROOT"); err == nil {
		if root := strings.TrimSpace(out); root != "" {
			return filepath.Join(root, "src")
		}
	}
	return "/usr/local/go/src"
}

// makeTarball writes a tarball of src (regular files, directories and
// symlinks, its last element as the top directory) into the scratch
// directory and lists its paths.
func makeTarball(s *scratch, src string) (*treeSource, error) {
	src, err := filepath.Abs(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: --tree-src %s is not a directory", ErrUsage, src)
	}
	t := &treeSource{dir: src, tarball: s.path("tree", ".tar")}
	f, err := os.Create(t.tarball)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTarget, err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	tw := tar.NewWriter(bw)
	top := filepath.Dir(src)
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(path); err != nil {
				return err
			}
		case !d.IsDir() && !d.Type().IsRegular():
			return nil // devices, sockets: not part of a source tree
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, path)
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname = "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		t.paths = append(t.paths, rel)
		switch {
		case d.IsDir():
			t.dirs++
		case d.Type().IsRegular():
			t.files++
			t.bytes += fi.Size()
			in, err := os.Open(path)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, in)
			in.Close()
			return err
		}
		return nil
	})
	err = errors.Join(err, tw.Close(), bw.Flush(), f.Close())
	if err != nil {
		return nil, fmt.Errorf("%w: tarball of %s: %w", ErrTarget, src, err)
	}
	return t, nil
}

// grepCount runs grep -rl pattern dir and returns how many files it
// lists (exit 1, nothing found, is 0 files).
func grepCount(ctx context.Context, pattern, dir string) (int, error) {
	cmd := exec.CommandContext(ctx, "grep", "-rlF", "--", pattern, dir)
	var errOut limitedBuffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && errOut.String() == "" {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("grep -rl %s: %w: %s", dir, err, lastLine(errOut.String()))
	}
	return strings.Count(string(out), "\n"), nil
}

// runTree is `smallfs bench --tree`.
func runTree(ctx context.Context, c *config, stdout, stderr io.Writer) int {
	rep, err := treeBench(ctx, c, stdout, stderr)
	if rep != nil {
		if werr := rep.WriteTable(stdout); werr != nil {
			err = errors.Join(err, werr)
		}
		if c.jsonPath != "" {
			b, jerr := json.MarshalIndent(rep, "", "  ")
			if jerr == nil {
				jerr = os.WriteFile(c.jsonPath, append(b, '\n'), 0o644)
			}
			err = errors.Join(err, jerr)
		}
	}
	return exitStatus(err, rep != nil && rep.Failed, stderr)
}

func treeBench(ctx context.Context, c *config, stdout, stderr io.Writer) (rep *TreeReport, err error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%w: --tree needs root (it drops the kernel's caches between steps)", ErrTarget)
	}
	s, err := newScratch(c.scratch, c.prealloc)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := s.remove(); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	src := c.treeSrc
	if src == "" {
		src = defaultTreeSrc(ctx)
	}
	prog := newProgress(stdout)
	defer prog.clear()
	prog.status("tarball of " + src)
	ts, err := makeTarball(s, src)
	if err != nil {
		return nil, err
	}
	matches, err := grepCount(ctx, c.treePattern, ts.dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTarget, err)
	}
	rep = &TreeReport{Schema: TreeSchema, Date: time.Now(), Machine: machine(), Source: ts.dir, Files: ts.files, Dirs: ts.dirs,
		Bytes: ts.bytes, Pattern: c.treePattern, Matches: matches, Rounds: c.rounds}
	t0 := time.Now()
	// The report's targets and skips, through the sequence's setup.
	shell := &Report{Machine: rep.Machine}
	targets, err := setupTargets(ctx, c, s, shell, prog, stderr)
	if err != nil {
		return nil, err
	}
	rep.Targets, rep.Skipped = shell.Targets, shell.Skipped
	if len(targets) == 0 {
		return rep, fmt.Errorf("%w: no target can run here", ErrTarget)
	}
	if rep.Base = baseOf(c.base, targets); rep.Base == "" {
		return rep, fmt.Errorf("%w: --base %s is not one of the targets that run", ErrUsage, c.base)
	}
	// Room for the tree twice over, and its metadata.
	space := max(2*ts.bytes+int64(len(ts.paths))*8192, 256<<20)
	for round := 1; round <= c.rounds; round++ {
		load := startLoad(round)
		for _, t := range targets {
			prog.status(fmt.Sprintf("round %d: %s", round, t.Name()))
			run := TreeRun{Target: t.Name(), Round: round, Steps: map[string]float64{}}
			if err := treeRun(ctx, t, ts, c.treePattern, matches, space, &run); err != nil {
				run.Error = err.Error()
				rep.Failed = true
				fmt.Fprintf(stderr, "smallfs bench: %s, round %d: %s\n", t.Name(), round, run.Error)
			}
			rep.Runs = append(rep.Runs, run)
			if ctx.Err() != nil {
				rep.Load = append(rep.Load, load.end(rep.Machine.CPUs))
				rep.summarize()
				rep.Elapsed = elapsedSince(t0)
				return rep, ErrInterrupted
			}
		}
		rep.Load = append(rep.Load, load.end(rep.Machine.CPUs))
	}
	rep.summarize()
	rep.Elapsed = elapsedSince(t0)
	return rep, nil
}

// treeRun mounts a fresh t and times the steps on it.
func treeRun(ctx context.Context, t Target, ts *treeSource, pattern string, matches int, space int64, run *TreeRun) (err error) {
	dir, err := t.Mount(ctx, space)
	defer func() {
		if uerr := t.Unmount(); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}()
	if err != nil {
		return err
	}
	timed := func(name string, f func() error) error {
		t0 := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		run.Steps[name] = time.Since(t0).Seconds()
		return ctx.Err()
	}
	if err := timed("tar-x", func() error {
		_, err := command(ctx, time.Hour, "tar", "xf", ts.tarball, "-C", dir)
		return err
	}); err != nil {
		return err
	}
	if err := dropCaches(); err != nil {
		return err
	}
	if err := timed("stat-walk", func() error { return statWalk(dir, ts.paths) }); err != nil {
		return err
	}
	if err := dropCaches(); err != nil {
		return err
	}
	var n int
	if err := timed("grep-r", func() (err error) { n, err = grepCount(ctx, pattern, dir); return err }); err != nil {
		return err
	}
	if n != matches {
		return fmt.Errorf("%w: grep -rl found %d files, %d in the source", ErrVerify, n, matches)
	}
	if err := timed("rm-rf", func() error {
		_, err := command(ctx, time.Hour, "rm", "-rf", filepath.Join(dir, ts.paths[0]))
		return err
	}); err != nil {
		return err
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		return fmt.Errorf("%w: after rm -rf the directory holds %d entries (%v)", ErrVerify, len(left), err)
	}
	return nil
}

// statWalk lstats every path, as git status does the paths of its
// index, and checks that each is there.
func statWalk(dir string, paths []string) error {
	var st syscall.Stat_t
	for _, p := range paths {
		path := dir + "/" + p
		if err := again0(func() error { return syscall.Lstat(path, &st) }); err != nil {
			return fmt.Errorf("lstat %s: %w", path, err)
		}
	}
	return nil
}

// summarize fills the medians and ratios.
func (r *TreeReport) summarize() {
	r.Medians, r.Ratios = map[string]map[string]float64{}, map[string]map[string]float64{}
	for _, st := range treeSteps {
		m := map[string]float64{}
		for _, t := range r.Targets {
			var xs []float64
			for _, run := range r.Runs {
				if v, ok := run.Steps[st.name]; ok && run.Target == t.Name {
					xs = append(xs, v)
				}
			}
			if len(xs) > 0 {
				m[t.Name] = median(xs)
			}
		}
		r.Medians[st.name] = m
		base, ok := m[r.Base]
		if !ok || base <= 0 {
			continue
		}
		ratios := map[string]float64{}
		for name, v := range m {
			if name != r.Base {
				ratios[name] = v / base
			}
		}
		r.Ratios[st.name] = ratios
	}
}

// WriteTable prints the report.
func (r *TreeReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "smallfs bench --tree: %s, %d files, %d directories, %.1f MB; grep -r %q: %d files; %d rounds\n",
		r.Source, r.Files, r.Dirs, float64(r.Bytes)/1e6, r.Pattern, r.Matches, r.Rounds)
	fmt.Fprintf(w, "%s, %d CPUs, %s; %s\n", r.Machine.Kernel, r.Machine.CPUs, r.Machine.Go, r.Date.UTC().Format("2006-01-02 15:04 MST"))
	for _, t := range r.Targets {
		fmt.Fprintf(w, "  %-12s %s\n", t.Name, t.Detail)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "  skipped %s: %s\n", s.Target, s.Reason)
	}
	for _, l := range r.Load {
		busy := ""
		if l.Busy {
			busy = " BUSY"
		}
		fmt.Fprintf(w, "  round %d: load %s before, %s after%s\n", l.Round, loadString(l.Before), loadString(l.After), busy)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "step\t"
	for _, t := range r.Targets {
		head += t.Name + " s\t"
	}
	for _, t := range r.Targets {
		if t.Name != r.Base {
			head += r.Base + " ÷ " + t.Name + "\t"
		}
	}
	fmt.Fprintln(tw, head)
	for _, st := range treeSteps {
		line := st.name + "\t"
		for _, t := range r.Targets {
			if v, ok := r.Medians[st.name][t.Name]; ok {
				line += fmt.Sprintf("%.3f\t", v)
			} else {
				line += "n/a\t"
			}
		}
		for _, t := range r.Targets {
			if t.Name == r.Base {
				continue
			}
			if v, ok := r.Ratios[st.name][t.Name]; ok {
				line += fmt.Sprintf("%.2f×\t", v)
			} else {
				line += "n/a\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nmedians of the rounds; ratios are speed (the other's time over %s's)\n", r.Base)
	for _, st := range treeSteps {
		fmt.Fprintf(w, "  %-10s %s\n", st.name, st.what)
	}
	for _, run := range r.Runs {
		if run.Error != "" {
			fmt.Fprintf(w, "FAILED %s round %d: %s\n", run.Target, run.Round, run.Error)
		}
	}
	_, err := fmt.Fprintf(w, "took %s\n", r.Elapsed)
	return err
}
