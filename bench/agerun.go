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
	"strings"
	"syscall"
	"time"
)

// ageConfig is the aging run's part of the command line (--age).
type ageConfig struct {
	deviceSize int64
	fill       int // % of the smallest free space the targets start with
	churn      int // % of the tree's bytes written per round
	every      int // checkpoint every so many rounds
	sizeTree   string
	seed       uint64
	batch      int // files of writes under age
	rounds     int
	deviceFlag string
}

// Limits of the aging flags.
const (
	ageMinDevice = 16 << 20
	ageMaxFill   = 200
	ageMaxRounds = 100000
	ageMaxBatch  = 1000000
)

// register adds the aging flags to fs.
func (a *ageConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&a.deviceFlag, "device-size", "1G", "with --age: size of every target's device (image file), K, M, G suffixes")
	fs.IntVar(&a.fill, "fill", 90, "with --age: the tree is held at this `PERCENT` of the smallest free space the targets start with (above 100: the churn meets a full device)")
	fs.IntVar(&a.churn, "churn", 5, "with --age: `PERCENT` of the tree's bytes each round writes (creates, rewrites, appends)")
	fs.IntVar(&a.every, "every", 10, "with --age: measure every `K` rounds (and after the fill and the last round)")
	fs.StringVar(&a.sizeTree, "size-tree", "", "with --age: draw file sizes from the regular files under `DIR` (default: the Go distribution's src, $(go env GOROOT)/src)")
	fs.Uint64Var(&a.seed, "seed", 1, "with --age: seed of the churn")
	fs.IntVar(&a.batch, "batch", 2000, "with --age: `FILES` of 4 KiB created, then appended to, for writes under age")
}

// ageFlags are the flags --age takes; the others are the smallfile
// sequence's and refused with it.
var ageFlags = map[string]bool{
	"age": true, "device-size": true, "fill": true, "churn": true, "every": true, "size-tree": true, "seed": true,
	"batch": true, "rounds": true, "files-per-dir": true, "json": true, "svg": true, "scratch": true,
	"smallfs-bin": true, "smallfs-opts": true, "preallocate": true, "replay": true,
}

// finishAge checks the aging flags once parsed. --rounds defaults to 100
// with --age.
func (c *config) finishAge(fs *flag.FlagSet) error {
	a := &c.ag
	var errs []string
	roundsSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "rounds" {
			roundsSet = true
		}
		if !ageFlags[f.Name] {
			errs = append(errs, fmt.Sprintf("--%s does not apply to --age", f.Name))
		}
	})
	a.rounds = 100
	if roundsSet {
		a.rounds = c.rounds
	}
	if sizes, err := parseSizes(a.deviceFlag); err != nil || len(sizes) != 1 || sizes[0] < ageMinDevice {
		errs = append(errs, fmt.Sprintf("device size %q: want one size from 16M to 1G", a.deviceFlag))
	} else {
		a.deviceSize = sizes[0]
	}
	if a.fill < 1 || a.fill > ageMaxFill {
		errs = append(errs, fmt.Sprintf("fill %d: want 1 to %d %%", a.fill, ageMaxFill))
	}
	if a.churn < 1 || a.churn > 100 {
		errs = append(errs, fmt.Sprintf("churn %d: want 1 to 100 %%", a.churn))
	}
	if a.every < 1 {
		errs = append(errs, fmt.Sprintf("every %d: want at least 1", a.every))
	}
	if a.rounds < 0 || a.rounds > ageMaxRounds {
		errs = append(errs, fmt.Sprintf("rounds %d: want 0 to %d with --age", a.rounds, ageMaxRounds))
	}
	if a.batch < 2 || a.batch > ageMaxBatch {
		errs = append(errs, fmt.Sprintf("batch %d: want 2 to %d files", a.batch, ageMaxBatch))
	}
	if c.w.FilesPerDir < 1 || c.w.FilesPerDir > 100000 {
		errs = append(errs, fmt.Sprintf("files per directory %d: want 1 to 100000", c.w.FilesPerDir))
	}
	for _, name := range c.targets {
		if kind, _, _ := strings.Cut(name, ":"); kind != "smallfs" && name != "ext4-loop" && name != "loopback" {
			errs = append(errs, fmt.Sprintf("target %s: --age runs smallfs, smallfs:OPTS, ext4-loop and loopback", name))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrUsage, strings.Join(errs, "; "))
	}
	return nil
}

// defaultSizeTree is the Go distribution's src directory.
func defaultSizeTree(ctx context.Context) (string, error) {
	out, err := command(ctx, time.Minute, "go", "env", "GOROOT")
	root := strings.TrimSpace(out)
	if err != nil || root == "" {
		return "", fmt.Errorf("%w: no Go distribution to draw file sizes from (go env GOROOT: %v): pass --size-tree DIR", ErrUsage, err)
	}
	return filepath.Join(root, "src"), nil
}

// ageMain is `smallfs bench --age`: the aging run, or with --replay the
// table and chart of a saved aging report.
func ageMain(c *config, stdout, stderr io.Writer) int {
	if c.replay != "" {
		rep, err := readAgeReport(c.replay)
		if err == nil {
			err = rep.writeOutputs(c, stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "smallfs bench: %v\n", err)
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := runAge(ctx, c, stdout, stderr)
	if rep != nil {
		if werr := rep.writeOutputs(c, stdout); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return exitStatus(err, rep != nil && rep.Failed, stderr)
}

// ageTarget is one target of the aging run: the aged filesystem, mounted
// for the whole run, and another instance of the same kind for the fresh
// copies, mounted at each checkpoint.
type ageTarget struct {
	aged, fresh Target
	st          *ageState
	failed      bool
	churn       time.Duration // applying the rounds since the last checkpoint
	churnOps    int64
}

// newAgeTargets makes the aged and fresh instances of each target named.
func newAgeTargets(ctx context.Context, c *config, s *scratch) ([]*ageTarget, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%w: finding my executable: %w", ErrTarget, err)
	}
	var bin string
	seen := map[string]bool{}
	var out []*ageTarget
	for _, name := range c.targets {
		if seen[name] {
			return nil, fmt.Errorf("%w: target %s given twice", ErrUsage, name)
		}
		seen[name] = true
		kind, opts, variant := strings.Cut(name, ":")
		mk := func() Target { return nil }
		switch {
		case kind == "smallfs":
			if bin == "" {
				if bin, err = smallfsBinaryFor(ctx, c, s); err != nil {
					return nil, err
				}
			}
			if variant && opts == "" {
				return nil, fmt.Errorf("%w: target %s names no mount options (smallfs:OPT,...)", ErrUsage, name)
			}
			o := c.smallfsOpts
			if variant {
				o = joinOpts(o, opts)
			}
			mk = func() Target { return newSmallfs(name, bin, o, s) }
		case name == "ext4-loop":
			mk = func() Target { return newExt4Loop(s) }
		case name == "loopback":
			mk = func() Target { return newLoopback(self, newExt4Loop(s), s) }
		}
		out = append(out, &ageTarget{aged: mk(), fresh: mk()})
	}
	return out, nil
}

// runAge runs the aging: fill, rounds of churn on every target in turn,
// a checkpoint every K rounds. The report is returned even when the run
// was cut short.
func runAge(ctx context.Context, c *config, stdout, stderr io.Writer) (rep *AgeReport, err error) {
	a := c.ag
	tree := a.sizeTree
	if tree == "" {
		if tree, err = defaultSizeTree(ctx); err != nil {
			return nil, err
		}
	}
	sizes, err := sampleSizes(tree)
	if err != nil {
		return nil, err
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
	prog := newProgress(stdout)
	defer prog.clear()
	t0 := time.Now()
	rep = &AgeReport{
		Schema: AgeSchema, Date: t0, Machine: machine(), LoadBefore: readLoadAvg("/proc/loadavg"),
		Config: AgeRunConfig{DeviceSize: a.deviceSize, Fill: a.fill, Churn: a.churn, Every: a.every, Rounds: a.rounds,
			Seed: a.seed, Batch: a.batch, FilesPerDir: c.w.FilesPerDir},
		Population: AgePopulation{Tree: tree, Files: len(sizes.sizes), Mean: sizes.mean(),
			Median: sizes.quantile(50), P90: sizes.quantile(90), P99: sizes.quantile(99), Max: sizes.quantile(100)},
	}
	targets, err := newAgeTargets(ctx, c, s)
	if err != nil {
		return nil, err
	}
	var run []*ageTarget
	for _, t := range targets {
		prog.status("preparing " + t.aged.Name())
		if err := preflight(ctx, t.aged); err != nil {
			rep.Skipped = append(rep.Skipped, Skip{Target: t.aged.Name(), Reason: err.Error()})
			fmt.Fprintf(stderr, "smallfs bench: skipping %s: %v\n", t.aged.Name(), err)
			continue
		}
		run = append(run, t)
	}
	if ctx.Err() != nil {
		return rep, ErrInterrupted
	}
	if len(run) == 0 {
		return nil, fmt.Errorf("%w: no target can run here", ErrTarget)
	}
	r := &ageRunner{cfg: a, targets: run, rep: rep, prog: prog, warn: stderr}
	err = r.run(ctx, sizes, c.w.FilesPerDir)
	rep.Interrupted = errors.Is(err, ErrInterrupted)
	for _, t := range run {
		rep.Targets = append(rep.Targets, TargetInfo{Name: t.aged.Name(), Detail: t.aged.Detail()})
	}
	rep.LoadAfter = readLoadAvg("/proc/loadavg")
	rep.Elapsed = elapsedSince(t0)
	rep.summarize()
	return rep, err
}

type ageRunner struct {
	cfg     ageConfig
	targets []*ageTarget
	rep     *AgeReport
	prog    *progress
	warn    io.Writer
	model   *ageModel
}

// fail records a target's failure; it takes no further part.
func (r *ageRunner) fail(t *ageTarget, err error) {
	t.failed = true
	r.rep.Failed = true
	msg := fmt.Sprintf("%s: %v", t.aged.Name(), err)
	r.rep.Errors = append(r.rep.Errors, msg)
	fmt.Fprintf(r.warn, "smallfs bench: %s\n", msg)
}

func (r *ageRunner) run(ctx context.Context, sizes *sizeSampler, perDir int) (err error) {
	// Mount every aged target; unmount (and fsck smallfs) at the end,
	// whatever happened.
	minFree := int64(-1)
	var mounted []*ageTarget
	defer func() {
		for _, t := range mounted {
			r.prog.status(t.aged.Name() + "  unmounting and checking")
			if uerr := t.aged.Unmount(); uerr != nil {
				r.fail(t, fmt.Errorf("after the run: %w", uerr))
			}
		}
	}()
	for _, t := range r.targets {
		r.prog.status(t.aged.Name() + "  mounting")
		root, err := t.aged.Mount(ctx, r.cfg.deviceSize)
		if err != nil {
			_ = t.aged.Unmount()
			return err
		}
		mounted = append(mounted, t)
		var st syscall.Statfs_t
		if err := syscall.Statfs(root, &st); err != nil {
			return fmt.Errorf("%w: statfs %s: %w", ErrTarget, root, err)
		}
		free := int64(st.Bfree) * st.Bsize
		r.rep.FreeAtStart = append(r.rep.FreeAtStart, free)
		if minFree < 0 || free < minFree {
			minFree = free
		}
		t.st = newAgeState(root, nil)
	}
	target := minFree * int64(r.cfg.fill) / 100
	r.rep.TreeBytes = target
	r.model = newAgeModel(r.cfg.seed, sizes, 4096, perDir, target)
	fill := r.model.fill()
	for _, t := range r.targets {
		t.st.dirs = r.model.dirs
	}
	budget := target * int64(r.cfg.churn) / 100
	load := startLoad(0)
	if err := r.apply(ctx, fill, "fill"); err != nil {
		return err
	}
	if err := r.checkpoint(ctx, 0, load); err != nil {
		return err
	}
	load = startLoad(1)
	for round := 1; round <= r.cfg.rounds; round++ {
		ops := r.model.round(budget)
		for _, t := range r.targets {
			t.st.dirs = r.model.dirs
		}
		if err := r.apply(ctx, ops, fmt.Sprintf("round %d/%d", round, r.cfg.rounds)); err != nil {
			return err
		}
		if round%r.cfg.every == 0 || round == r.cfg.rounds {
			if err := r.checkpoint(ctx, round, load); err != nil {
				return err
			}
			load = startLoad(round + 1)
		}
	}
	return nil
}

// apply runs ops on every target in turn.
func (r *ageRunner) apply(ctx context.Context, ops []ageOp, label string) error {
	for _, t := range r.targets {
		if t.failed {
			continue
		}
		r.prog.status(label + "  " + t.aged.Name())
		t0 := time.Now()
		for i, op := range ops {
			if i%256 == 0 && ctx.Err() != nil {
				return ErrInterrupted
			}
			if err := t.st.apply(op); err != nil {
				what := fmt.Sprintf("file %d", op.id)
				if op.kind == ageMkdir {
					what = "directory " + r.model.dirs[op.dir]
				}
				r.fail(t, fmt.Errorf("%s, %s of %s: %w", label, ageKindNames[op.kind], what, err))
				break
			}
		}
		t.churn += time.Since(t0)
		t.churnOps += int64(len(ops))
	}
	return nil
}

// checkpoint measures every target aged, then on a fresh copy.
func (r *ageRunner) checkpoint(ctx context.Context, round int, load *loadMeter) error {
	cp := AgeCheckpoint{Round: round, Files: len(r.model.live), TreeBytes: r.model.used,
		Ops: r.model.counts}
	for _, t := range r.targets {
		m := AgeMeasure{Target: t.aged.Name(), ChurnSeconds: t.churn.Seconds(), ChurnOps: t.churnOps}
		t.churn, t.churnOps = 0, 0
		if t.failed {
			m.Error = "failed earlier"
			cp.Targets = append(cp.Targets, m)
			continue
		}
		m.ENOSPC, m.Skipped, m.Files = t.st.enospc, t.st.skipped, t.st.live()
		label := fmt.Sprintf("checkpoint %d  %s", round, t.aged.Name())
		var err error
		m.Aged, err = r.measure(ctx, label+" aged", t.aged, t.st)
		if err != nil {
			cp.Targets = append(cp.Targets, m)
			if errors.Is(err, ErrInterrupted) {
				r.rep.Checkpoints = append(r.rep.Checkpoints, cp)
				return err
			}
			r.fail(t, fmt.Errorf("checkpoint %d, aged: %w", round, err))
			continue
		}
		m.Fresh, err = r.fresh(ctx, label+" fresh", t)
		if errors.Is(err, ErrInterrupted) {
			cp.Targets = append(cp.Targets, m)
			r.rep.Checkpoints = append(r.rep.Checkpoints, cp)
			return err
		}
		if err != nil {
			r.fail(t, fmt.Errorf("checkpoint %d, fresh copy: %w", round, err))
		}
		cp.Targets = append(cp.Targets, m)
	}
	l := load.end(r.rep.Machine.CPUs)
	l.OthersCPU = nil // the daemons of the fresh copies are not the bench's to count
	cp.Load = &l
	r.rep.Checkpoints = append(r.rep.Checkpoints, cp)
	return nil
}

// fresh mounts a fresh filesystem of the same kind and size, copies the
// aged tree into it, measures it and tears it down (smallfs: fsck).
func (r *ageRunner) fresh(ctx context.Context, label string, t *ageTarget) (side AgeSide, err error) {
	r.prog.status(label + "  mounting")
	root, err := t.fresh.Mount(ctx, r.cfg.deviceSize)
	defer func() {
		r.prog.status(label + "  unmounting")
		if uerr := t.fresh.Unmount(); uerr != nil {
			err = errors.Join(err, uerr)
		}
	}()
	if err != nil {
		return side, err
	}
	r.prog.status(label + "  copying the tree")
	t0 := time.Now()
	st, err := t.st.copyTree(ctx, root)
	side.CopySeconds = num(time.Since(t0).Seconds())
	if errors.Is(err, errFull) {
		side.Notes = append(side.Notes, err.Error())
		return side, nil
	}
	if err != nil {
		return side, err
	}
	s, err := r.measure(ctx, label, t.fresh, st)
	s.CopySeconds = side.CopySeconds
	return s, err
}

// measure takes one side's figures: layout, cold read, writes under age.
func (r *ageRunner) measure(ctx context.Context, label string, t Target, st *ageState) (AgeSide, error) {
	var side AgeSide
	if s, ok := t.(*smallfsTarget); ok {
		side.Transport = s.transport
	}
	r.prog.status(label + "  layout")
	l, err := measureLayout(ctx, t, st.root)
	if err != nil {
		return side, err
	}
	side.Layout = l
	r.prog.status(label + "  cold read")
	cr, err := st.readTree(ctx)
	if err != nil {
		return side, err
	}
	side.ColdFiles, side.ColdBytes, side.ColdSeconds = cr.Files, cr.Bytes, cr.Elapsed.Seconds()
	side.ColdMBps = num(rate(float64(cr.Bytes)/1e6, cr.Elapsed))
	side.ColdFilesPerSec = num(rate(float64(cr.Files), cr.Elapsed))
	r.prog.status(label + "  writes")
	b, err := runBatch(ctx, st.root, r.cfg.batch)
	switch {
	case errors.Is(err, errFull):
		side.Notes = append(side.Notes, err.Error())
	case err != nil:
		return side, err
	default:
		side.CreatePerSec = num(b.Create.FilesPerSec())
		side.AppendPerSec = num(b.Append.FilesPerSec())
	}
	return side, nil
}
