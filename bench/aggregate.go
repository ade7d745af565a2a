package bench

import "math"

// summarize fills r.Summary and r.Ratios from r.Runs: medians over the
// rounds per target, size and step, then Base over each other target.
func (r *Report) summarize() {
	r.Summary, r.Ratios = nil, nil
	for _, size := range r.Workload.Sizes {
		for _, t := range r.Targets {
			r.Summary = append(r.Summary, r.summaryOf(t.Name, size))
		}
		base, ok := r.find(r.Base, size)
		if !ok {
			continue
		}
		for _, t := range r.Targets {
			if t.Name == r.Base {
				continue
			}
			other, _ := r.find(t.Name, size)
			r.Ratios = append(r.Ratios, ratioOf(base, other))
		}
	}
}

func (r *Report) find(target string, size int64) (Summary, bool) {
	for _, s := range r.Summary {
		if s.Target == target && s.Size == size {
			return s, true
		}
	}
	return Summary{}, false
}

func (r *Report) summaryOf(target string, size int64) Summary {
	s := Summary{Target: target, Size: size}
	var mem, growth []float64
	byOp := map[string][]Measure{}
	for _, run := range r.Runs {
		if run.Target != target || run.Size != size {
			continue
		}
		mem = appendKnown(mem, run.MemPerFile)
		growth = appendKnown(growth, run.MemGrowthPerFile)
		for _, m := range run.Ops {
			byOp[m.Op] = append(byOp[m.Op], m)
		}
	}
	s.MemPerFile, s.MemGrowthPerFile = num(median(mem)), num(median(growth))
	for _, op := range r.Workload.Ops {
		s.Ops = append(s.Ops, summarizeOp(op, byOp[op]))
	}
	return s
}

// summarizeOp takes the medians over the rounds that ran op fully. With
// none, Status says why: the first failure or "unsupported".
func summarizeOp(op string, ms []Measure) OpSummary {
	s := OpSummary{Op: op, Status: StatusNotRun}
	var fps, mbs, rts, cpu, gcs []float64
	reqs := map[string][]float64{}
	counted := false
	for _, m := range ms {
		if m.Status != StatusOK {
			if s.Status == StatusNotRun {
				s.Status = m.Status
			}
			continue
		}
		fps = append(fps, m.FilesPerSec)
		mbs = append(mbs, m.MBPerSec)
		rts = appendKnown(rts, m.RoundTrips)
		cpu = appendKnown(cpu, m.CPUPer1000)
		gcs = appendKnown(gcs, m.GCs)
		counted = counted || m.Requests != nil
		for k, v := range m.Requests {
			reqs[k] = append(reqs[k], v)
		}
	}
	if len(fps) == 0 {
		return s
	}
	s.Status, s.Rounds = StatusOK, len(fps)
	med := median(fps)
	s.FilesPerSec, s.Spread = num(med), num(spread(fps))
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range fps {
		lo, hi = min(lo, x), max(hi, x)
	}
	s.Min, s.Max = num(lo), num(hi)
	if m := median(mbs); m > 0 {
		s.MBPerSec = num(m)
	}
	s.RoundTrips, s.CPUPer1000, s.GCs = num(median(rts)), num(median(cpu)), num(median(gcs))
	if counted { // an empty map is a step that cost no request
		s.Requests = map[string]float64{}
		for k, v := range reqs {
			s.Requests[k] = median(v)
		}
	}
	return s
}

func appendKnown(xs []float64, p *float64) []float64 {
	if p != nil {
		return append(xs, *p)
	}
	return xs
}

// ratioOf divides base's medians by other's, step by step.
func ratioOf(base, other Summary) Ratio {
	r := Ratio{Size: base.Size, Base: base.Target, Other: other.Target}
	var all []float64
	for i, b := range base.Ops {
		x := math.NaN()
		if i < len(other.Ops) && other.Ops[i].Op == b.Op {
			x = ratio(val(b.FilesPerSec), val(other.Ops[i].FilesPerSec))
		}
		r.Ops = append(r.Ops, OpRatio{Op: b.Op, Ratio: num(x)})
		all = append(all, x)
	}
	r.Geomean = num(geomean(all))
	return r
}
