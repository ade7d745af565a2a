package bench

import (
	"fmt"
	"math"
	"strings"
)

// Geometry of the aging chart.
const (
	ageChartHeight = 520
	agePlotTop     = 90
	agePlotBottom  = ageChartHeight - 60
)

// SVG draws cold-read MB/s over the rounds: one colour per target, the
// aged filesystem as a solid line with dots, its fresh copies as a dashed
// line, on a linear scale from 0. Written with the standard library only.
func (r *AgeReport) SVG() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, ageChartHeight, chartWidth, ageChartHeight)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	c := r.Config
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="16" font-weight="bold">%s</text>`+"\n", plotLeft,
		esc(fmt.Sprintf("smallfs bench --age: cold read of the whole tree, MB/s, aged (solid) and a fresh copy (dashed), over %d rounds", c.Rounds)))
	fmt.Fprintf(&b, `<text x="%d" y="38" fill="#555">%s</text>`+"\n", plotLeft,
		esc(fmt.Sprintf("%s devices, tree at %d %% of the smallest free space (%s), %d %% of it written per round · sizes from %s · %s · %d CPUs, Linux %s · load %s → %s",
			humanBytes(c.DeviceSize), c.Fill, humanBytes(r.TreeBytes), c.Churn, r.Population.Tree, r.Date.Format("2006-01-02"),
			r.Machine.CPUs, r.Machine.Kernel, loadTriple(r.LoadBefore), loadTriple(r.LoadAfter))))
	// legend
	x := plotLeft
	for i, t := range r.Targets {
		fmt.Fprintf(&b, `<rect x="%d" y="50" width="12" height="12" fill="%s"/><text x="%d" y="60">%s</text>`+"\n", x, color(i), x+16, esc(t.Name))
		x += 40 + 7*len(t.Name)
	}
	lastRound := max(1, c.Rounds)
	hi := 0.0
	for _, cp := range r.Checkpoints {
		lastRound = max(lastRound, cp.Round)
		for _, m := range cp.Targets {
			for _, p := range []*float64{m.Aged.ColdMBps, m.Fresh.ColdMBps} {
				if p != nil {
					hi = max(hi, *p)
				}
			}
		}
	}
	top := niceCeil(hi)
	px := func(round int) float64 {
		return float64(plotLeft) + float64(round)/float64(lastRound)*float64(plotRight-plotLeft)
	}
	py := func(v float64) float64 {
		return agePlotBottom - v/top*float64(agePlotBottom-agePlotTop)
	}
	for i := 0; i <= 5; i++ {
		v := top * float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", plotLeft, plotRight, py(v), py(v))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" fill="#555">%g</text>`+"\n", plotLeft-6, py(v)+4, v)
	}
	fmt.Fprintf(&b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle" fill="#555">MB/s</text>`+"\n", (agePlotTop+agePlotBottom)/2)
	for _, cp := range r.Checkpoints {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%d</text>`+"\n", px(cp.Round), agePlotBottom+16, cp.Round)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#555">rounds of churn</text>`+"\n", (plotLeft+plotRight)/2, agePlotBottom+36)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`+"\n", plotLeft, plotRight, agePlotBottom, agePlotBottom)
	for i, t := range r.Targets {
		for _, aged := range []bool{true, false} {
			var pts []string
			for _, cp := range r.Checkpoints {
				m, ok := cp.find(t.Name)
				if !ok {
					continue
				}
				v := m.Fresh.ColdMBps
				if aged {
					v = m.Aged.ColdMBps
				}
				if v == nil {
					continue
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(cp.Round), py(*v)))
				if aged {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s aged, round %d: %.1f MB/s (÷ fresh %s)</title></circle>`+"\n",
						px(cp.Round), py(*v), color(i), esc(t.Name), cp.Round, *v, ratioCell(m.ColdRatio))
				}
			}
			if len(pts) == 0 {
				continue
			}
			dash := ""
			if !aged {
				dash = ` stroke-dasharray="6 4"`
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>`+"\n", strings.Join(pts, " "), color(i), dash)
		}
	}
	// The last checkpoint's ratios, under the legend.
	if last := r.lastFull(); last != nil {
		var parts []string
		for _, s := range r.Summary {
			parts = append(parts, fmt.Sprintf("%s aged ÷ fresh %s (median %s)", s.Target, ratioCell(s.LastRatio), ratioCell(s.MedianRatio)))
		}
		fmt.Fprintf(&b, `<text x="%d" y="78" fill="#333">%s</text>`+"\n", plotLeft, esc(fmt.Sprintf("round %d: ", last.Round)+strings.Join(parts, " · ")))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
