package bench

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report for a terminal: per file size, the median
// files/s of every step on every target with its spread, and the ratios of
// the base target to each other one; then MB/s, the daemons' figures, and
// what was skipped or failed.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "smallfs bench: %d threads × %s files, %d files/dir, fsync %s, %d round(s); %s; %d CPUs, Linux %s, %s\n",
		r.Workload.Threads, thousands(float64(r.Workload.Files)), r.Workload.FilesPerDir, onOff(r.Workload.Fsync),
		r.Workload.Rounds, r.Date.Format("2006-01-02 15:04 MST"), r.Machine.CPUs, r.Machine.Kernel, r.Machine.Go)
	for _, t := range r.Targets {
		fmt.Fprintf(w, "  %-14s %s\n", t.Name, t.Detail)
	}
	r.writeLoad(w)
	for _, size := range r.Workload.Sizes {
		fmt.Fprintf(w, "\nfiles/s, %s files (median of the rounds ±spread: (max-min)/median)\n", sizeName(size))
		r.writeRates(w, size)
		r.writeDaemons(w, size)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "\nskipped %s: %s", s.Target, s.Reason)
	}
	if r.Failed {
		fmt.Fprintf(w, "\nFAILED: a run failed or left a corrupt image (see above and the JSON report)")
	}
	_, err := fmt.Fprintln(w)
	return err
}

// writeLoad states the machine's load next to the figures: every round's
// 1-minute load average before and after it and the CPUs others used,
// flagging a round run under a load above the CPUs.
func (r *Report) writeLoad(w io.Writer) {
	fmt.Fprintf(w, "\nmachine: %s\n", r.loadSummary())
	for _, l := range r.Load {
		flag := ""
		if l.Busy {
			flag = fmt.Sprintf("  BUSY: load above %d CPUs", r.Machine.CPUs)
		}
		fmt.Fprintf(w, "  round %-3d %s%s\n", l.Round, loadCell(l), flag)
	}
}

// loadCell is "1-min load 0.52 → 2.10, others 0.30 CPUs".
func loadCell(l RoundLoad) string {
	avg := func(a *LoadAvg) string {
		if a == nil {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", a.Min1)
	}
	s := "1-min load " + avg(l.Before) + " → " + avg(l.After)
	if l.OthersCPU != nil {
		s += fmt.Sprintf(", others %.2f CPUs", *l.OthersCPU)
	}
	return s
}

func (r *Report) writeRates(w io.Writer, size int64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Numbers align right; the first column is padded to read left-aligned.
	row := func(tw *tabwriter.Writer, cells []string) {
		cells[0] = fmt.Sprintf("%-14s", cells[0])
		row(tw, cells)
	}
	head := []string{"op"}
	for _, t := range r.Targets {
		head = append(head, t.Name)
	}
	ratios := r.ratiosAt(size)
	for _, ra := range ratios {
		head = append(head, ra.Base+" ÷ "+ra.Other)
	}
	row(tw, head)
	for i, op := range r.Workload.Ops {
		cells := []string{op}
		for _, t := range r.Targets {
			s, _ := r.find(t.Name, size)
			cells = append(cells, rateCell(s.Ops[i]))
		}
		for _, ra := range ratios {
			cells = append(cells, ratioCell(ra.Ops[i].Ratio))
		}
		row(tw, cells)
	}
	cells := []string{"geometric mean"}
	for range r.Targets {
		cells = append(cells, "")
	}
	for _, ra := range ratios {
		cells = append(cells, ratioCell(ra.Geomean))
	}
	row(tw, cells)
	tw.Flush()

	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nMB/s, %s files\n", sizeName(size))
	row(tw, head[:1+len(r.Targets)])
	for i, op := range r.Workload.Ops {
		cells := []string{op}
		data := false
		for _, t := range r.Targets {
			s, _ := r.find(t.Name, size)
			c := "-"
			if v := s.Ops[i].MBPerSec; v != nil {
				c, data = fmt.Sprintf("%.1f", *v), true
			}
			cells = append(cells, c)
		}
		if data {
			row(tw, cells)
		}
	}
	tw.Flush()
}

// writeDaemons prints, for targets with a daemon, the FUSE round trips per
// file with the busiest opcodes, the daemon's CPU per 1000 files and its
// garbage collections in the step, and its memory per file after create.
func (r *Report) writeDaemons(w io.Writer, size int64) {
	for _, t := range r.Targets {
		s, _ := r.find(t.Name, size)
		if !s.hasDaemonFigures() {
			continue
		}
		fmt.Fprintf(w, "\n%s daemon, %s: memory per file after create %s (RSS ÷ files; growth during create %s)\n",
			t.Name, sizeName(size), bytesCell(s.MemPerFile), bytesCell(s.MemGrowthPerFile))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		row(tw, []string{"op", "round trips/file", "requests/file", "CPU s/1000 ops", "GC cycles"})
		for _, o := range s.Ops {
			row(tw, []string{o.Op, numCell(o.RoundTrips, 2), requestsCell(o.Requests), numCell(o.CPUPer1000, 3), numCell(o.GCs, 0)})
		}
		tw.Flush()
	}
}

func (s Summary) hasDaemonFigures() bool {
	if s.MemPerFile != nil {
		return true
	}
	for _, o := range s.Ops {
		if o.RoundTrips != nil || o.CPUPer1000 != nil {
			return true
		}
	}
	return false
}

func (r *Report) ratiosAt(size int64) []Ratio {
	var out []Ratio
	for _, ra := range r.Ratios {
		if ra.Size == size {
			out = append(out, ra)
		}
	}
	return out
}

func row(tw *tabwriter.Writer, cells []string) {
	fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
}

func rateCell(o OpSummary) string {
	if o.FilesPerSec == nil {
		return "n/a (" + o.Status + ")"
	}
	c := thousands(*o.FilesPerSec)
	if o.Spread != nil && o.Rounds > 1 {
		c += fmt.Sprintf(" ±%.0f%%", 100**o.Spread)
	}
	return c
}

func ratioCell(p *float64) string {
	if p == nil {
		return "n/a"
	}
	switch x := *p; {
	case x >= 10:
		return fmt.Sprintf("%.1f×", x)
	case x >= 0.1:
		return fmt.Sprintf("%.2f×", x)
	default:
		return fmt.Sprintf("%.2g×", x)
	}
}

func numCell(p *float64, prec int) string {
	if p == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*p, 'f', prec, 64)
}

func bytesCell(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.0f B", *p)
}

// requestsCell lists the opcodes of at least 0.05 requests per file,
// most frequent first: "LOOKUP 1, CREATE 1, ...".
func requestsCell(m map[string]float64) string {
	if m == nil {
		return "n/a"
	}
	type kv struct {
		k string
		v float64
	}
	var l []kv
	for k, v := range m {
		if v >= 0.05 {
			l = append(l, kv{k, v})
		}
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || l[i].v == l[j].v && l[i].k < l[j].k })
	var parts []string
	for _, e := range l {
		parts = append(parts, e.k+" "+strconv.FormatFloat(e.v, 'g', 3, 64))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// thousands prints a rate with thousands separators, no decimals.
func thousands(x float64) string {
	s := strconv.FormatInt(int64(math.Round(x)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// sizeName is "4 KiB", "64 KiB", "1 MiB", or bytes.
func sizeName(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
