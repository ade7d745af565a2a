package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// noReply are the FUSE requests the kernel sends without waiting for an
// answer: they cost the daemon work but the caller no round trip.
var noReply = map[string]bool{"FORGET": true, "BATCH_FORGET": true, "INTERRUPT": true}

// runner runs the rounds: every round, every size, every target in turn,
// so a slow minute on the shared machine lands on all targets alike.
type runner struct {
	w        Workload // Size set per run
	sizes    []int64
	rounds   int
	targets  []Target
	progress *progress
	warn     io.Writer
	report   *Report
	load     *loadMeter // the round's
}

func (r *runner) run(ctx context.Context) error {
	for round := 1; round <= r.rounds; round++ {
		r.load = startLoad(round)
		for _, size := range r.sizes {
			for _, t := range r.targets {
				rec := r.runOne(ctx, t, size, round)
				r.report.Runs = append(r.report.Runs, rec)
				if rec.Error != "" {
					r.report.Failed = true
					fmt.Fprintf(r.warn, "smallfs bench: %s, %s, round %d: %s\n", t.Name(), sizeName(size), round, rec.Error)
				}
				if ctx.Err() != nil {
					r.endLoad()
					return ErrInterrupted
				}
			}
		}
		r.endLoad()
	}
	return nil
}

// endLoad records the machine's load over the round and flags one run
// under a load above the CPUs on the warning stream as it happens.
func (r *runner) endLoad() {
	l := r.load.end(r.report.Machine.CPUs)
	r.report.Load = append(r.report.Load, l)
	if l.Busy {
		fmt.Fprintf(r.warn, "smallfs bench: round %d ran under load (%s)\n", l.Round, loadCell(l))
	}
}

// runOne mounts a fresh filesystem, runs the sequence, and tears it down;
// a teardown failure (a corrupt smallfs image) fails the run.
func (r *runner) runOne(ctx context.Context, t Target, size int64, round int) (rec RunRecord) {
	rec = RunRecord{Target: t.Name(), Size: size, Round: round}
	w := r.w
	w.Size = size
	label := fmt.Sprintf("round %d/%d  %s  %s", round, r.rounds, sizeName(size), t.Name())
	r.progress.status(label + "  mounting")
	dir, err := t.Mount(ctx, w.SpaceNeeded())
	defer func() {
		r.progress.status(label + "  unmounting")
		if err := t.Unmount(); err != nil {
			rec.Error = joinMsg(rec.Error, err.Error())
		}
	}()
	if err != nil {
		rec.Error = err.Error()
		rec.Ops = notRun(Sequence(), 0)
		return rec
	}
	run, err := Prepare(dir, w)
	if err != nil {
		rec.Error = err.Error()
		rec.Ops = notRun(Sequence(), 0)
		return rec
	}
	ops := Sequence()
	before := t.Sample()
	first := before
	defer func() { r.countDaemon(first, before) }()
	for i, op := range ops {
		stop := r.progress.track(label+"  "+op.Name, run.Done, w.TotalFiles())
		res, err := run.Do(ctx, op)
		stop()
		after := t.Sample()
		m := measure(res, before, after)
		prev := before
		before = after
		if op.Name == "create" && err == nil && after.hasProc() {
			rss := after.RSS
			rec.RSSAfterCreate = &rss
			rec.MemPerFile = num(float64(rss) / float64(w.TotalFiles()))
			if m.CPUPer1000 != nil { // both samples are of this daemon
				rec.MemGrowthPerFile = num(float64(rss-prev.RSS) / float64(w.TotalFiles()))
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrUnsupported):
			m.Status, m.Error = StatusUnsupported, err.Error()
		default:
			m.Status, m.Error = StatusFailed, err.Error()
			rec.Error = fmt.Sprintf("%s: %v", op.Name, err)
			rec.Ops = append(rec.Ops, m)
			rec.Ops = append(rec.Ops, notRun(ops, i+1)...)
			return rec
		}
		rec.Ops = append(rec.Ops, m)
	}
	return rec
}

// countDaemon adds a detached daemon's CPU between two samples to the
// round's own CPU, which getrusage cannot see.
func (r *runner) countDaemon(first, last Sample) {
	if r.load != nil && first.Detached && first.hasProc() && last.hasProc() && first.Pid == last.Pid {
		r.load.daemons += last.CPU - first.CPU
	}
}

// measure turns a step's result and the daemon samples around it into a
// Measure; the daemon figures are only as known as both samples.
func measure(res Result, before, after Sample) Measure {
	m := Measure{
		Op: res.Op, Status: StatusOK, Files: res.Files, Bytes: res.Bytes,
		Seconds: res.Elapsed.Seconds(), FilesPerSec: res.FilesPerSec(), MBPerSec: res.MBPerSec(),
	}
	if res.Files == 0 {
		return m
	}
	files := float64(res.Files)
	if before.Requests != nil && after.Requests != nil {
		var total uint64
		m.Requests = map[string]float64{}
		for op, n := range after.Requests {
			d := n - before.Requests[op]
			if d == 0 || n < before.Requests[op] {
				continue
			}
			m.Requests[op] = float64(d) / files
			if !noReply[op] {
				total += d
			}
		}
		m.RoundTrips = num(float64(total) / files)
	}
	if before.hasProc() && after.hasProc() && before.Pid == after.Pid {
		m.CPUPer1000 = num((after.CPU - before.CPU).Seconds() / files * 1000)
		if before.HasGCs && after.HasGCs && after.GCs >= before.GCs {
			m.GCs = num(float64(after.GCs - before.GCs))
		}
	}
	return m
}

func notRun(ops []Op, from int) []Measure {
	var out []Measure
	for _, op := range ops[from:] {
		out = append(out, Measure{Op: op.Name, Status: StatusNotRun})
	}
	return out
}

func joinMsg(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// preflight mounts and unmounts t once with a little space, so a target
// this machine cannot run is skipped before the long run starts.
func preflight(ctx context.Context, t Target) error {
	_, err := t.Mount(ctx, 64<<20)
	return errors.Join(err, t.Unmount())
}

// elapsedSince is for the report's total.
func elapsedSince(t0 time.Time) time.Duration { return time.Since(t0).Round(time.Second) }
