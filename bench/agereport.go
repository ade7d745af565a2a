package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// AgeSchema names the JSON layout of an aging report.
const AgeSchema = "smallfs-bench-age/1"

// AgeReport is everything one `smallfs bench --age` run measured; it is
// what --json writes.
type AgeReport struct {
	Schema     string        `json:"schema"`
	Date       time.Time     `json:"date"`
	Machine    Machine       `json:"machine"`
	LoadBefore *LoadAvg      `json:"loadavg_before"`
	LoadAfter  *LoadAvg      `json:"loadavg_after"`
	Config     AgeRunConfig  `json:"config"`
	Population AgePopulation `json:"population"`
	Targets    []TargetInfo  `json:"targets"`
	Skipped    []Skip        `json:"skipped,omitempty"`
	// FreeAtStart is each target's free bytes when empty (statfs); the
	// tree is held at Fill % of the smallest, TreeBytes (in 4 KiB blocks).
	FreeAtStart []int64         `json:"free_at_start"`
	TreeBytes   int64           `json:"tree_bytes"`
	Checkpoints []AgeCheckpoint `json:"checkpoints"`
	Summary     []AgeSummary    `json:"summary"`
	Errors      []string        `json:"errors,omitempty"`
	Failed      bool            `json:"failed"`
	Interrupted bool            `json:"interrupted,omitempty"` // stopped by SIGINT or SIGTERM before its last round
	Elapsed     time.Duration   `json:"elapsed_ns"`
}

// AgeRunConfig is the aging run as asked for.
type AgeRunConfig struct {
	DeviceSize  int64  `json:"device_size"`
	Fill        int    `json:"fill_percent"`
	Churn       int    `json:"churn_percent"`
	Every       int    `json:"every"`
	Rounds      int    `json:"rounds"`
	Seed        uint64 `json:"seed"`
	Batch       int    `json:"batch_files"`
	FilesPerDir int    `json:"files_per_dir"`
}

// AgePopulation is the tree the file sizes were drawn from.
type AgePopulation struct {
	Tree   string  `json:"tree"`
	Files  int     `json:"files"`
	Mean   float64 `json:"mean"`
	Median int64   `json:"median"`
	P90    int64   `json:"p90"`
	P99    int64   `json:"p99"`
	Max    int64   `json:"max"`
}

// AgeCheckpoint is every target measured after Round rounds (0: after the
// fill).
type AgeCheckpoint struct {
	Round     int   `json:"round"`
	Files     int   `json:"files"`      // in the model's tree
	TreeBytes int64 `json:"tree_bytes"` // the model's, in 4 KiB blocks
	// Ops counts the model's operations so far by kind (mkdir, create,
	// rewrite, append, rename, delete).
	Ops     [ageKinds]int64 `json:"ops"`
	Targets []AgeMeasure    `json:"targets"`
	Load    *RoundLoad      `json:"load,omitempty"` // over the rounds since the last checkpoint and this one
}

// AgeMeasure is one target at one checkpoint.
type AgeMeasure struct {
	Target string `json:"target"`
	// Files the target holds; ENOSPC counts operations the full device
	// cut short or refused so far, Skipped those of files a refused
	// create left absent.
	Files   int   `json:"files"`
	ENOSPC  int64 `json:"enospc"`
	Skipped int64 `json:"skipped"`
	// ChurnSeconds is the time the rounds since the last checkpoint took
	// on this target (ChurnOps operations), untimed figures for scale.
	ChurnSeconds float64 `json:"churn_seconds"`
	ChurnOps     int64   `json:"churn_ops"`
	Aged         AgeSide `json:"aged"`
	Fresh        AgeSide `json:"fresh"`
	// ColdRatio is aged over fresh cold-read MB/s.
	ColdRatio *float64 `json:"cold_ratio"`
	Error     string   `json:"error,omitempty"`
}

// AgeSide is the figures of the aged filesystem or of its fresh copy.
type AgeSide struct {
	Layout          *ageLayout `json:"layout"`
	ColdFiles       int64      `json:"cold_files"`
	ColdBytes       int64      `json:"cold_bytes"`
	ColdSeconds     float64    `json:"cold_seconds"`
	ColdMBps        *float64   `json:"cold_mb_per_sec"`
	ColdFilesPerSec *float64   `json:"cold_files_per_sec"`
	CreatePerSec    *float64   `json:"create_files_per_sec"`
	AppendPerSec    *float64   `json:"append_files_per_sec"`
	CopySeconds     *float64   `json:"copy_seconds,omitempty"` // writing the fresh copy
	// Transport is how a smallfs mount took its requests ("/dev/fuse",
	// "io_uring"): the kernel's enable_uring may change between mounts.
	Transport string   `json:"transport,omitempty"`
	Notes     []string `json:"notes,omitempty"`
}

// AgeSummary is one target over the run: the last checkpoint's figures
// and the median over the checkpoints after the fill.
type AgeSummary struct {
	Target string `json:"target"`
	// LastRatio is the last checkpoint's aged/fresh cold-read ratio;
	// MedianRatio the median over the checkpoints after round 0.
	LastRatio   *float64 `json:"last_cold_ratio"`
	MedianRatio *float64 `json:"median_cold_ratio"`
	// VsBase is this target's last aged and fresh cold-read MB/s over
	// the first target's (smallfs first on the command line).
	AgedVsFirst  *float64 `json:"aged_vs_first"`
	FreshVsFirst *float64 `json:"fresh_vs_first"`
	// Small is the last checkpoint's extents per small file, aged.
	SmallMedian *int  `json:"small_extents_median"`
	SmallP99    *int  `json:"small_extents_p99"`
	ENOSPC      int64 `json:"enospc"`
}

func intp(v int) *int { return &v }

// summarize fills the ratios and the summary.
func (r *AgeReport) summarize() {
	for i := range r.Checkpoints {
		for j := range r.Checkpoints[i].Targets {
			m := &r.Checkpoints[i].Targets[j]
			if m.Aged.ColdMBps != nil && m.Fresh.ColdMBps != nil && *m.Fresh.ColdMBps > 0 {
				m.ColdRatio = num(*m.Aged.ColdMBps / *m.Fresh.ColdMBps)
			}
		}
	}
	r.Summary = nil
	last := r.lastFull()
	for _, t := range r.Targets {
		s := AgeSummary{Target: t.Name}
		var ratios []float64
		for _, cp := range r.Checkpoints {
			m, ok := cp.find(t.Name)
			if !ok {
				continue
			}
			s.ENOSPC = m.ENOSPC
			if cp.Round > 0 && m.ColdRatio != nil {
				ratios = append(ratios, *m.ColdRatio)
			}
		}
		s.MedianRatio = num(median(ratios))
		if last != nil {
			if m, ok := last.find(t.Name); ok {
				s.LastRatio = m.ColdRatio
				if l := m.Aged.Layout; l != nil && l.Small.Files > 0 {
					s.SmallMedian, s.SmallP99 = intp(l.Small.Median), intp(l.Small.P99)
				}
				if first, ok := last.find(r.Targets[0].Name); ok {
					s.AgedVsFirst = ageRatio(m.Aged.ColdMBps, first.Aged.ColdMBps)
					s.FreshVsFirst = ageRatio(m.Fresh.ColdMBps, first.Fresh.ColdMBps)
				}
			}
		}
		r.Summary = append(r.Summary, s)
	}
}

// lastFull is the last checkpoint, or nil.
func (r *AgeReport) lastFull() *AgeCheckpoint {
	if len(r.Checkpoints) == 0 {
		return nil
	}
	return &r.Checkpoints[len(r.Checkpoints)-1]
}

func (cp AgeCheckpoint) find(name string) (AgeMeasure, bool) {
	for _, m := range cp.Targets {
		if m.Target == name {
			return m, true
		}
	}
	return AgeMeasure{}, false
}

func ageRatio(a, b *float64) *float64 {
	if a == nil || b == nil || *b == 0 {
		return nil
	}
	return num(*a / *b)
}

func readAgeReport(path string) (*AgeReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r AgeReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Schema != AgeSchema {
		return nil, fmt.Errorf("%s: schema %q, --age reads %q", path, r.Schema, AgeSchema)
	}
	return &r, nil
}

func (r *AgeReport) writeOutputs(c *config, stdout io.Writer) error {
	var errs []error
	errs = append(errs, r.WriteTable(stdout))
	if c.jsonPath != "" {
		b, err := json.MarshalIndent(r, "", "  ")
		if err == nil {
			err = os.WriteFile(c.jsonPath, append(b, '\n'), 0o644)
		}
		errs = append(errs, err)
	}
	if c.svgPath != "" {
		errs = append(errs, os.WriteFile(c.svgPath, r.SVG(), 0o644))
	}
	return errors.Join(errs...)
}

// WriteTable prints the aging report: the run, then a table per
// checkpoint, then the summary.
func (r *AgeReport) WriteTable(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "smallfs bench --age: %s devices, tree held at %d %% of %s (%s in 4 KiB blocks), %d %% of it written per round, %d rounds, measured every %d; seed %d\n",
		humanBytes(c.DeviceSize), c.Fill, humanBytes(minOf(r.FreeAtStart)), humanBytes(r.TreeBytes), c.Churn, c.Rounds, c.Every, c.Seed)
	p := r.Population
	fmt.Fprintf(w, "file sizes drawn from %s: %d files, mean %s, median %s, p90 %s, p99 %s, max %s; %d files per directory\n",
		p.Tree, p.Files, humanBytes(int64(p.Mean)), humanBytes(p.Median), humanBytes(p.P90), humanBytes(p.P99), humanBytes(p.Max), c.FilesPerDir)
	fmt.Fprintf(w, "%s; %d CPUs, Linux %s, %s; load %s → %s; took %s\n", r.Date.Format("2006-01-02 15:04 MST"),
		r.Machine.CPUs, r.Machine.Kernel, r.Machine.Go, loadTriple(r.LoadBefore), loadTriple(r.LoadAfter), r.Elapsed)
	for _, t := range r.Targets {
		fmt.Fprintf(w, "  %-14s %s\n", t.Name, t.Detail)
	}
	for _, cp := range r.Checkpoints {
		r.writeCheckpoint(w, cp)
	}
	r.writeSummary(w)
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "\nskipped %s: %s", s.Target, s.Reason)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "\nerror: %s", e)
	}
	if r.Interrupted {
		last := 0
		if cp := r.lastFull(); cp != nil {
			last = cp.Round
		}
		fmt.Fprintf(w, "\nINTERRUPTED: the last checkpoint is of round %d of %d", last, r.Config.Rounds)
	}
	if r.Failed {
		fmt.Fprintf(w, "\nFAILED: a target failed or left a corrupt image (see above and the JSON report)")
	}
	_, err := fmt.Fprintln(w)
	return err
}

func (r *AgeReport) writeCheckpoint(w io.Writer, cp AgeCheckpoint) {
	what := fmt.Sprintf("round %d", cp.Round)
	if cp.Round == 0 {
		what = "after the fill (round 0)"
	}
	load := ""
	if cp.Load != nil {
		load = "; " + loadCell(*cp.Load)
	}
	fmt.Fprintf(w, "\n%s: %s files, %s%s\n", what, thousands(float64(cp.Files)), humanBytes(cp.TreeBytes), load)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\t\tcold MB/s\tratio\tcold files/s\tcreate/s\tappend/s\text ≤64K med/p99/max\text all p99/max\tdir spread med/p90\tfree frag\tENOSPC\t")
	for _, m := range cp.Targets {
		for i, side := range []AgeSide{m.Aged, m.Fresh} {
			name, which, ratio, enospc := fmt.Sprintf("%-14s", m.Target), "aged", ratioCell(m.ColdRatio), fmt.Sprint(m.ENOSPC)
			if i == 1 {
				name, which, ratio, enospc = fmt.Sprintf("%-14s", ""), "fresh", "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, which,
				cell(side.ColdMBps, "%.1f"), ratio, cell(side.ColdFilesPerSec, "%.0f"), cell(side.CreatePerSec, "%.0f"),
				cell(side.AppendPerSec, "%.0f"), smallCell(side.Layout), allCell(side.Layout), spreadCell(side.Layout),
				scoreCell(side.Layout), enospc)
		}
		if m.Error != "" {
			fmt.Fprintf(tw, "%-14s\t%s\t\n", "", "error: "+m.Error)
		}
	}
	tw.Flush()
	for _, m := range cp.Targets {
		if a, f := m.Aged.Transport, m.Fresh.Transport; a != "" && f != "" && a != f {
			fmt.Fprintf(w, "  note: %s aged took its requests through %s, its fresh copy through %s (pin it with --smallfs-opts uring=off)\n", m.Target, a, f)
		}
	}
}

func (r *AgeReport) writeSummary(w io.Writer) {
	if len(r.Summary) == 0 {
		return
	}
	fmt.Fprintf(w, "\nsummary: cold-read MB/s aged ÷ fresh (last checkpoint, median over the checkpoints after the fill); last checkpoint's MB/s ÷ %s's\n", r.Targets[0].Name)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "target\taged÷fresh last\tmedian\taged ÷ %s\tfresh ÷ %s\text ≤64K median/p99\tENOSPC\t\n", r.Targets[0].Name, r.Targets[0].Name)
	for _, s := range r.Summary {
		ext := "n/a"
		if s.SmallMedian != nil {
			ext = fmt.Sprintf("%d/%d", *s.SmallMedian, *s.SmallP99)
		}
		fmt.Fprintf(tw, "%-14s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", s.Target, ratioCell(s.LastRatio), ratioCell(s.MedianRatio),
			ratioCell(s.AgedVsFirst), ratioCell(s.FreshVsFirst), ext, s.ENOSPC)
	}
	tw.Flush()
}

func cell(p *float64, f string) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf(f, *p)
}

func smallCell(l *ageLayout) string {
	if l == nil || l.Small.Files == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%d/%d/%d", l.Small.Median, l.Small.P99, l.Small.Max)
}

func allCell(l *ageLayout) string {
	if l == nil || l.Extents.Files == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%d/%d", l.Extents.P99, l.Extents.Max)
}

func spreadCell(l *ageLayout) string {
	if l == nil || l.Spread.Dirs == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f/%.2f", l.Spread.Median, l.Spread.P90)
}

func scoreCell(l *ageLayout) string {
	if l == nil {
		return "n/a"
	}
	return cell(l.FreeScore, "%.3f")
}

func loadTriple(a *LoadAvg) string {
	if a == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f %.2f %.2f", a.Min1, a.Min5, a.Min15)
}

func minOf(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	return slices.Min(v)
}

// humanBytes prints bytes in binary units.
func humanBytes(n int64) string {
	const u = "KMGT"
	v := float64(n)
	i := -1
	for v >= 1024 && i < len(u)-1 {
		v /= 1024
		i++
	}
	if i < 0 {
		return fmt.Sprintf("%d B", n)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + string(u[i]) + "iB"
}
