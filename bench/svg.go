package bench

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Chart geometry, in SVG user units (pixels at 100%).
const (
	chartWidth   = 1200
	panelHeight  = 450
	plotLeft     = 70
	plotRight    = chartWidth - 20
	plotTop      = 96                // room for the legend and the ratio labels
	plotBottom   = panelHeight - 100 // room for slanted step names above the geometric means
	headerHeight = 54
)

// palette colours the targets in order; the base target is always first.
var palette = []string{"#c0392b", "#2e86c1", "#27ae60", "#8e44ad", "#d68910", "#5d6d7e"}

// SVG draws the report as grouped bars: one panel per file size, one
// group per step, one bar per target with its median files/s on a log
// scale and a whisker from the slowest to the fastest round. Above each
// group, the base target's ratio to each other target, in that target's
// colour. Written with the standard library only.
func (r *Report) SVG() []byte {
	targets := r.orderedTargets()
	height := headerHeight + panelHeight*len(r.Workload.Sizes)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="16" font-weight="bold">%s</text>`+"\n", plotLeft,
		esc(fmt.Sprintf("smallfs bench: files/s per operation (log scale), %d threads × %s files, median of %d round(s)",
			r.Workload.Threads, thousands(float64(r.Workload.Files)), r.Workload.Rounds)))
	fmt.Fprintf(&b, `<text x="%d" y="36" fill="#555">%s</text>`+"\n", plotLeft,
		esc(fmt.Sprintf("%s · %d CPUs, Linux %s · %s · fsync %s",
			r.Date.Format("2006-01-02"), r.Machine.CPUs, r.Machine.Kernel, r.loadSummary(), onOff(r.Workload.Fsync))))
	fmt.Fprintf(&b, `<text x="%d" y="50" fill="#555">%s</text>`+"\n", plotLeft,
		esc(fmt.Sprintf("whiskers: slowest to fastest round · labels above each step: %s ÷ each target, in its colour", r.Base)))
	for i, size := range r.Workload.Sizes {
		r.panel(&b, targets, size, headerHeight+i*panelHeight)
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// orderedTargets puts the base target first, so it has the first colour
// and the leftmost bar of every group.
func (r *Report) orderedTargets() []string {
	out := []string{r.Base}
	for _, t := range r.Targets {
		if t.Name != r.Base {
			out = append(out, t.Name)
		}
	}
	return out
}

func (r *Report) panel(b *strings.Builder, targets []string, size int64, y0 int) {
	lo, hi := r.decades(size)
	y := func(v float64) float64 {
		f := (math.Log10(v) - lo) / (hi - lo)
		return float64(y0+plotBottom) - f*float64(plotBottom-plotTop)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s files</text>`+"\n", plotLeft, y0+22, esc(sizeName(size)))
	// legend
	x := plotLeft + 110
	for i, t := range targets {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			x, y0+12, color(i), x+16, y0+22, esc(t))
		x += 30 + 7*len(t)
	}
	// grid and axis labels at each power of ten
	for d := lo; d <= hi; d++ {
		gy := y(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", plotLeft, plotRight, gy, gy)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%s</text>`+"\n", plotLeft-6, gy+4, decadeLabel(d))
	}
	fmt.Fprintf(b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle" fill="#555">files/s</text>`+"\n",
		y0+(plotTop+plotBottom)/2)

	ops := r.Workload.Ops
	groupW := float64(plotRight-plotLeft) / float64(len(ops))
	barW := (groupW - 10) / float64(len(targets))
	ratios := r.ratiosAt(size)
	for g, op := range ops {
		gx := float64(plotLeft) + float64(g)*groupW + 5
		for i, t := range targets {
			s, _ := r.find(t, size)
			o := s.Ops[g]
			bx := gx + float64(i)*barW
			if o.FilesPerSec == nil {
				fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="8" text-anchor="middle" fill="#999" transform="rotate(-90 %.1f %d)">n/a</text>`+"\n",
					bx+barW/2, y0+plotBottom-4, bx+barW/2, y0+plotBottom-4)
				continue
			}
			top := y(*o.FilesPerSec)
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s files/s</title></rect>`+"\n",
				bx, top, barW-1, float64(y0+plotBottom)-top, color(i), esc(t), esc(op), thousands(*o.FilesPerSec))
			if o.Min != nil && o.Max != nil && o.Rounds > 1 {
				cx := bx + (barW-1)/2
				fmt.Fprintf(b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#222" stroke-width="1"/>`+"\n",
					cx, cx, y(*o.Min), y(*o.Max))
			}
		}
		// ratio labels, one line per other target, in its colour
		for k, ra := range ratios {
			ci := indexOf(targets, ra.Other)
			fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="11" fill="%s">%s</text>`+"\n",
				gx+groupW/2-5, y0+plotTop-8-12*(len(ratios)-1-k), color(ci), ratioCell(ra.Ops[g].Ratio))
		}
		lx, ly := gx+groupW/2-5, y0+plotBottom+14
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="end" transform="rotate(-35 %.1f %d)">%s</text>`+"\n", lx, ly, lx, ly, esc(op))
	}
	fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`+"\n", plotLeft, plotRight, y0+plotBottom, y0+plotBottom)
	// geometric means
	var gm []string
	for _, ra := range ratios {
		gm = append(gm, fmt.Sprintf("%s ÷ %s %s", ra.Base, ra.Other, ratioCell(ra.Geomean)))
	}
	if len(gm) > 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d" fill="#333">geometric mean over operations: %s</text>`+"\n",
			plotLeft, y0+panelHeight-12, esc(strings.Join(gm, " · ")))
	}
}

// decades is the log10 range of the axis: whole powers of ten around
// every bar and whisker at this size.
func (r *Report) decades(size int64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range r.Summary {
		if s.Size != size {
			continue
		}
		for _, o := range s.Ops {
			for _, p := range []*float64{o.FilesPerSec, o.Min, o.Max} {
				if p != nil && *p > 0 {
					lo, hi = min(lo, math.Log10(*p)), max(hi, math.Log10(*p))
				}
			}
		}
	}
	if math.IsInf(lo, 1) {
		return 0, 1
	}
	lo, hi = math.Floor(lo), math.Ceil(hi)
	if hi == lo {
		hi++
	}
	return lo, hi
}

func decadeLabel(d float64) string {
	switch {
	case d >= 6:
		return fmt.Sprintf("%gM", math.Pow(10, d-6))
	case d >= 3:
		return fmt.Sprintf("%gk", math.Pow(10, d-3))
	}
	return fmt.Sprintf("%g", math.Pow(10, d))
}

func color(i int) string { return palette[i%len(palette)] }

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return 0
}

func esc(s string) string { return html.EscapeString(s) }
