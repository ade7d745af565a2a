package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedianSpreadGeomean(t *testing.T) {
	cases := []struct {
		xs             []float64
		median, spread float64
	}{
		{[]float64{5}, 5, 0},
		{[]float64{3, 1, 2}, 2, 1},        // (3-1)/2
		{[]float64{4, 1, 3, 2}, 2.5, 1.2}, // mean of the middle two; (4-1)/2.5
		{[]float64{10, 10, 10}, 10, 0},
	}
	for _, c := range cases {
		in := slices.Clone(c.xs)
		if got := median(c.xs); got != c.median {
			t.Errorf("median(%v) = %v, want %v", in, got, c.median)
		}
		if got := spread(c.xs); math.Abs(got-c.spread) > 1e-12 {
			t.Errorf("spread(%v) = %v, want %v", in, got, c.spread)
		}
		if !slices.Equal(in, c.xs) {
			t.Errorf("median reordered its input: %v", c.xs)
		}
	}
	if !math.IsNaN(median(nil)) || !math.IsNaN(spread(nil)) {
		t.Error("median or spread of nothing is not NaN")
	}
	if got := geomean([]float64{2, 8}); math.Abs(got-4) > 1e-12 {
		t.Errorf("geomean(2, 8) = %v, want 4", got)
	}
	if got := geomean([]float64{2, math.NaN(), 8, 0, math.Inf(1)}); math.Abs(got-4) > 1e-12 {
		t.Errorf("geomean skipping unknowns = %v, want 4", got)
	}
	if !math.IsNaN(geomean([]float64{math.NaN()})) || !math.IsNaN(ratio(1, 0)) || ratio(6, 3) != 2 {
		t.Error("geomean of nothing or ratio wrong")
	}
}

// fakeReport is two targets over three rounds at one size, two steps,
// with one failure and one unsupported step.
func fakeReport() *Report {
	r := &Report{
		Schema: Schema, Date: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		Machine:  Machine{CPUs: 2, Kernel: "6.18", Go: "go1.26"},
		Workload: ReportConfig{Threads: 2, Files: 10, Sizes: []int64{4096}, FilesPerDir: 5, Rounds: 3, Ops: []string{"create", "setxattr"}},
		Base:     "smallfs",
		Targets:  []TargetInfo{{"smallfs", "s"}, {"loopback", "l"}},
	}
	rt := 6.0
	add := func(target string, round int, create float64, x Measure) {
		r.Runs = append(r.Runs, RunRecord{Target: target, Size: 4096, Round: round, Ops: []Measure{
			{Op: "create", Status: StatusOK, Files: 20, FilesPerSec: create, MBPerSec: create * 4096 / 1e6, RoundTrips: &rt},
			x,
		}})
	}
	ok := func(v float64) Measure { return Measure{Op: "setxattr", Status: StatusOK, FilesPerSec: v} }
	add("smallfs", 1, 900, ok(100))
	add("smallfs", 2, 1000, ok(300))
	add("smallfs", 3, 1200, Measure{Op: "setxattr", Status: StatusFailed})
	add("loopback", 1, 400, Measure{Op: "setxattr", Status: StatusUnsupported})
	add("loopback", 2, 500, Measure{Op: "setxattr", Status: StatusUnsupported})
	add("loopback", 3, 250, Measure{Op: "setxattr", Status: StatusUnsupported})
	r.summarize()
	return r
}

func TestSummarizeTakesMediansAndRatios(t *testing.T) {
	r := fakeReport()
	s, _ := r.find("smallfs", 4096)
	c := s.Ops[0]
	if val(c.FilesPerSec) != 1000 || val(c.Min) != 900 || val(c.Max) != 1200 || c.Rounds != 3 {
		t.Errorf("smallfs create: median %v min %v max %v rounds %d, want 1000 900 1200 3",
			val(c.FilesPerSec), val(c.Min), val(c.Max), c.Rounds)
	}
	if math.Abs(val(c.Spread)-0.3) > 1e-12 || val(c.RoundTrips) != 6 {
		t.Errorf("smallfs create: spread %v round trips %v, want 0.3 and 6", val(c.Spread), val(c.RoundTrips))
	}
	// a failed round is left out of the median, not counted as zero
	if x := s.Ops[1]; val(x.FilesPerSec) != 200 || x.Rounds != 2 {
		t.Errorf("smallfs setxattr: median %v over %d rounds, want 200 over 2", val(x.FilesPerSec), x.Rounds)
	}
	l, _ := r.find("loopback", 4096)
	if x := l.Ops[1]; x.FilesPerSec != nil || x.Status != StatusUnsupported {
		t.Errorf("loopback setxattr: %v %s, want no figure, unsupported", val(x.FilesPerSec), x.Status)
	}
	if len(r.Ratios) != 1 {
		t.Fatalf("%d ratios, want 1", len(r.Ratios))
	}
	ra := r.Ratios[0]
	if ra.Base != "smallfs" || ra.Other != "loopback" || val(ra.Ops[0].Ratio) != 2.5 || ra.Ops[1].Ratio != nil {
		t.Errorf("ratio %+v, want smallfs/loopback create 2.5, setxattr null", ra)
	}
	if val(ra.Geomean) != 2.5 {
		t.Errorf("geomean %v, want 2.5 (the only step both ran)", val(ra.Geomean))
	}
}

func TestJSONSchema(t *testing.T) {
	r := fakeReport()
	b, err := r.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"schema", "date", "machine", "workload", "base", "targets", "runs", "summary", "ratios", "failed"} {
		if _, ok := m[key]; !ok {
			t.Errorf("report has no %q", key)
		}
	}
	if m["schema"] != Schema {
		t.Errorf("schema %v, want %s", m["schema"], Schema)
	}
	op := m["summary"].([]any)[1].(map[string]any)["ops"].([]any)[1].(map[string]any)
	if v, ok := op["files_per_sec"]; !ok || v != nil {
		t.Errorf("an unsupported step's files_per_sec is %v, want null", v)
	}
	ratio := m["ratios"].([]any)[0].(map[string]any)
	if ratio["geomean"] != 2.5 {
		t.Errorf("geomean in JSON %v, want 2.5", ratio["geomean"])
	}
	// what --json wrote, --replay reads back unchanged
	path := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := back.MarshalIndent()
	if !bytes.Equal(b, b2) {
		t.Error("the report changed through JSON")
	}
	m["schema"] = "smallfs-bench/0"
	old, _ := json.Marshal(m)
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReport(path); err == nil {
		t.Error("a report of another schema was read")
	}
}

func TestTableAndChart(t *testing.T) {
	r := fakeReport()
	var out bytes.Buffer
	if err := r.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"smallfs ÷ loopback", "1,000 ±30%", "2.50×", "n/a (unsupported)", "round trips/file"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	svg := r.SVG()
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Fatalf("chart is not well-formed XML: %v", err)
	}
	bars := strings.Count(string(svg), "<rect x=") - len(r.Targets) // minus the legend swatches
	if bars != 3 {
		t.Errorf("%d bars, want 3 (two creates and smallfs's setxattr)", bars)
	}
	if !strings.Contains(string(svg), "2.50×") {
		t.Error("chart lacks the ratio label")
	}
}

// TestNoRequestsIsNone: a step that cost the daemon no request reads
// "none", also after a JSON round trip; a target without counters n/a.
func TestNoRequestsIsNone(t *testing.T) {
	r := fakeReport()
	for i := range r.Runs {
		if r.Runs[i].Target == "smallfs" {
			r.Runs[i].Ops[1].Requests = map[string]float64{}
		}
	}
	r.summarize()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	back.summarize()
	s, _ := back.find("smallfs", 4096)
	if got := requestsCell(s.Ops[1].Requests); got != "none" {
		t.Errorf("smallfs setxattr with no requests: %q, want none", got)
	}
	l, _ := back.find("loopback", 4096)
	if got := requestsCell(l.Ops[0].Requests); got != "n/a" {
		t.Errorf("loopback: %q, want n/a", got)
	}
}
