package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Main is `smallfs bench ARGS...`: it parses the flags, sets the targets
// up in one scratch directory, runs the rounds, prints the table and
// writes --json and --svg. It returns the exit status: 0 all runs passed,
// 1 a run failed (an error, a corrupt smallfs image) or was interrupted,
// 2 usage error. Everything it mounted is unmounted and the scratch
// directory removed, even on failure or Ctrl-C.
//
// `bench serve-loopback ROOT MNT` is the hidden child mode the loopback
// target starts; the program calling Main must pass it through.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == serveLoopbackArg {
		return serveLoopback(args[1:], stdout, stderr)
	}
	c, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "smallfs bench: %v\nTry 'smallfs bench --help'.\n", err)
		return 2
	}
	if c.age {
		return ageMain(c, stdout, stderr)
	}
	if c.replay != "" {
		return replay(c, stdout, stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if c.scale {
		return runScale(ctx, c, stdout, stderr)
	}
	if c.tree {
		return runTree(ctx, c, stdout, stderr)
	}
	rep, err := run(ctx, c, stdout, stderr)
	if rep != nil {
		if werr := writeOutputs(rep, c, stdout); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return exitStatus(err, rep != nil && rep.Failed, stderr)
}

// exitStatus is Main's status for a run that ended with err, failed
// saying whether one of its runs failed: 2 a usage error, 1 an error or
// a failed run, 0 all passed. It prints err.
func exitStatus(err error, failed bool, stderr io.Writer) int {
	switch {
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "smallfs bench: %v\n", err)
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "smallfs bench: %v\n", err)
		return 1
	case failed:
		return 1
	}
	return 0
}

// replay prints and charts a saved report.
func replay(c *config, stdout, stderr io.Writer) int {
	rep, err := ReadReport(c.replay)
	if err == nil {
		err = writeOutputs(rep, c, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "smallfs bench: %v\n", err)
		return 1
	}
	return 0
}

// run sets up the scratch directory and the targets, runs the rounds and
// summarizes. The report is returned even when the run was cut short.
func run(ctx context.Context, c *config, stdout, stderr io.Writer) (rep *Report, err error) {
	s, err := newScratch(c.scratch, c.prealloc)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := s.remove(); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	prog := newProgress(stdout)
	defer prog.clear()
	w := c.w.withDefaults()
	rep = &Report{
		Schema: Schema, Date: time.Now(), Machine: machine(),
		Workload: ReportConfig{
			Threads: w.Threads, Files: w.Files, Sizes: c.sizes, FilesPerDir: w.FilesPerDir,
			Fsync: w.Fsync, XattrSize: w.XattrSize, Rounds: c.rounds, Verify: !w.NoVerify, Ops: OpNames(),
		},
	}
	t0 := time.Now()
	targets, err := setupTargets(ctx, c, s, rep, prog, stderr)
	if err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("%w: no target can run here", ErrTarget)
	}
	rep.Base = baseOf(c.base, targets)
	if rep.Base == "" {
		return nil, fmt.Errorf("%w: --base %s is not one of the targets that run", ErrUsage, c.base)
	}
	r := &runner{w: w, sizes: c.sizes, rounds: c.rounds, targets: targets, progress: prog, warn: stderr, report: rep}
	err = r.run(ctx)
	// A target learns some of its detail by running (smallfs: io_uring
	// or /dev/fuse).
	for _, t := range targets {
		for j := range rep.Targets {
			if rep.Targets[j].Name == t.Name() {
				rep.Targets[j].Detail = t.Detail()
			}
		}
	}
	rep.Elapsed = elapsedSince(t0)
	rep.summarize()
	return rep, err
}

// setupTargets builds the targets named on the command line and
// preflights each; one this machine cannot run is skipped with its reason.
func setupTargets(ctx context.Context, c *config, s *scratch, rep *Report, prog *progress, stderr io.Writer) ([]Target, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: finding my executable: %w", ErrTarget, err)
	}
	skip := func(name string, err error) {
		rep.Skipped = append(rep.Skipped, Skip{Target: name, Reason: err.Error()})
		fmt.Fprintf(stderr, "smallfs bench: skipping %s: %v\n", name, err)
	}
	var bin string
	var out []Target
	seen := map[string]bool{}
	for _, name := range c.targets {
		if seen[name] {
			return nil, fmt.Errorf("%w: target %s given twice", ErrUsage, name)
		}
		seen[name] = true
		prog.status("preparing " + name)
		var ts []Target
		kind, variantOpts, variant := strings.Cut(name, ":")
		if !variant || kind != "smallfs" {
			kind = name
		}
		switch kind {
		case "smallfs":
			if bin == "" {
				if bin, err = smallfsBinaryFor(ctx, c, s); err != nil {
					skip(name, err)
					continue
				}
			}
			if variant {
				if variantOpts == "" {
					return nil, fmt.Errorf("%w: target %s names no mount options (smallfs:OPT,...)", ErrUsage, name)
				}
				ts = append(ts, newSmallfs(name, bin, joinOpts(c.smallfsOpts, variantOpts), s))
				break
			}
			ts = append(ts, smallfsTargets(ctx, c, bin, s, skip)...)
		case "loopback":
			backing := Target(newExt4Loop(s))
			if err := preflight(ctx, backing); err != nil {
				fmt.Fprintf(stderr, "smallfs bench: loopback runs over the scratch directory: no ext4 loop image here (%v)\n", err)
				backing = &dirTarget{parent: s.dir}
			}
			ts = append(ts, newLoopback(self, backing, s))
		case "ext4-loop":
			ts = append(ts, newExt4Loop(s))
		case "fuse2fs":
			t, err := newFuse2fs(ctx, s)
			if err != nil {
				skip(name, err)
				continue
			}
			ts = append(ts, t)
		case "tmpfs":
			ts = append(ts, newTmpfs(s))
		default:
			abs, err := filepath.Abs(name)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrUsage, err)
			}
			d, err := newDirTarget(abs)
			if err != nil {
				return nil, fmt.Errorf("target %q is not smallfs, loopback, fuse2fs, ext4-loop, tmpfs or a directory: %w", name, err)
			}
			ts = append(ts, d)
		}
		for _, t := range ts {
			if err := preflight(ctx, t); err != nil {
				skip(t.Name(), err)
				continue
			}
			rep.Targets = append(rep.Targets, TargetInfo{Name: t.Name(), Detail: t.Detail()})
			out = append(out, t)
		}
		if ctx.Err() != nil {
			return nil, ErrInterrupted
		}
	}
	return out, nil
}

// smallfsTargets is "smallfs" and, with --pools, "smallfs-nopool" when
// the command offers PoolOption ("smallfs" then runs with the pools on
// explicitly where it can say so), and with --checksums "smallfs-nosum"
// when its mkfs offers NoSumsFlag.
func smallfsTargets(ctx context.Context, c *config, bin string, s *scratch, skip func(string, error)) []Target {
	opts := c.smallfsOpts
	var extra []Target
	if c.pools {
		if offered, on := poolOptions(ctx, bin); !offered {
			skip("smallfs-nopool", fmt.Errorf("n/a: %s has no -o %s yet", bin, PoolOption))
		} else {
			if on {
				opts = joinOpts(opts, poolOnOption)
			}
			extra = append(extra, newSmallfs("smallfs-nopool", bin, joinOpts(c.smallfsOpts, PoolOption), s))
		}
	}
	if c.checksums {
		if mkfsOffers(ctx, bin, NoSumsFlag) {
			extra = append(extra, newSmallfs("smallfs-nosum", bin, opts, s, NoSumsFlag))
		} else {
			skip("smallfs-nosum", fmt.Errorf("n/a: %s mkfs has no %s", bin, NoSumsFlag))
		}
	}
	return append([]Target{newSmallfs("smallfs", bin, opts, s)}, extra...)
}

func smallfsBinaryFor(ctx context.Context, c *config, s *scratch) (string, error) {
	if c.smallfsBin != "" {
		return filepath.Abs(c.smallfsBin)
	}
	return smallfsBinary(ctx, s)
}

func joinOpts(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

// baseOf picks the target the ratios are of: the one asked for, else
// smallfs, else the first.
func baseOf(asked string, targets []Target) string {
	want := asked
	if want == "" {
		want = "smallfs"
	}
	for _, t := range targets {
		if t.Name() == want {
			return want
		}
	}
	if asked != "" {
		return ""
	}
	return targets[0].Name()
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// writeOutputs prints the table and writes the JSON and SVG files.
func writeOutputs(rep *Report, c *config, stdout io.Writer) error {
	var errs []error
	if err := rep.WriteTable(stdout); err != nil {
		errs = append(errs, err)
	}
	if c.jsonPath != "" {
		b, err := rep.MarshalIndent()
		if err == nil {
			err = os.WriteFile(c.jsonPath, append(b, '\n'), 0o644)
		}
		errs = append(errs, err)
	}
	if c.svgPath != "" {
		errs = append(errs, os.WriteFile(c.svgPath, rep.SVG(), 0o644))
	}
	return errors.Join(errs...)
}
