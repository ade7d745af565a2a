package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"
)

// Schema names the JSON layout; it changes when a field changes meaning.
const Schema = "smallfs-bench/1"

// Report is everything one `smallfs bench` run measured; it is what
// --json writes.
type Report struct {
	Schema   string        `json:"schema"`
	Date     time.Time     `json:"date"`
	Machine  Machine       `json:"machine"`
	Workload ReportConfig  `json:"workload"`
	Base     string        `json:"base"` // the target the ratios are of
	Targets  []TargetInfo  `json:"targets"`
	Skipped  []Skip        `json:"skipped,omitempty"`
	Runs     []RunRecord   `json:"runs"`
	Load     []RoundLoad   `json:"load,omitempty"` // per round; absent in reports before it was recorded
	Summary  []Summary     `json:"summary"`
	Ratios   []Ratio       `json:"ratios"`
	Failed   bool          `json:"failed"` // a run failed or left a corrupt image
	Elapsed  time.Duration `json:"elapsed_ns"`
}

// Machine says where the figures come from.
type Machine struct {
	CPUs   int    `json:"cpus"`
	Kernel string `json:"kernel"`
	Go     string `json:"go"`
	Note   string `json:"note,omitempty"`
}

// ReportConfig is the workload as run.
type ReportConfig struct {
	Threads     int      `json:"threads"`
	Files       int      `json:"files_per_thread"`
	Sizes       []int64  `json:"sizes"`
	FilesPerDir int      `json:"files_per_dir"`
	Fsync       bool     `json:"fsync"`
	XattrSize   int      `json:"xattr_size"`
	Rounds      int      `json:"rounds"`
	Verify      bool     `json:"verify"`
	Ops         []string `json:"ops"`
}

// TargetInfo names a target that ran.
type TargetInfo struct {
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

// Skip is a target that could not run here, and why.
type Skip struct {
	Target string `json:"target"`
	Reason string `json:"reason"`
}

// RunRecord is one target, one file size, one round.
type RunRecord struct {
	Target string    `json:"target"`
	Size   int64     `json:"size"`
	Round  int       `json:"round"`
	Ops    []Measure `json:"ops"`
	// RSSAfterCreate is the daemon's resident bytes after create, and
	// MemPerFile that divided by the files created; MemGrowthPerFile is
	// the growth of RSS during create divided by the files, which leaves
	// out the daemon's fixed cost. Null for a kernel filesystem or when
	// unknown.
	RSSAfterCreate   *int64   `json:"rss_after_create,omitempty"`
	MemPerFile       *float64 `json:"memory_per_file,omitempty"`
	MemGrowthPerFile *float64 `json:"memory_growth_per_file,omitempty"`
	Error            string   `json:"error,omitempty"`
}

// Status of a Measure.
const (
	StatusOK          = "ok"
	StatusUnsupported = "unsupported"
	StatusFailed      = "failed"
	StatusNotRun      = "not-run"
)

// Measure is one step of one run.
type Measure struct {
	Op          string  `json:"op"`
	Status      string  `json:"status"`
	Error       string  `json:"error,omitempty"`
	Files       int64   `json:"files"`
	Bytes       int64   `json:"bytes"`
	Seconds     float64 `json:"seconds"`
	FilesPerSec float64 `json:"files_per_sec"`
	MBPerSec    float64 `json:"mb_per_sec"`
	// RoundTrips is FUSE requests per file (FORGETs excluded: they get no
	// answer), and Requests the same per opcode; CPUPer1000 is the
	// daemon's CPU seconds per 1000 files. Null when not known.
	RoundTrips *float64           `json:"round_trips_per_file,omitempty"`
	Requests   map[string]float64 `json:"requests_per_file"`
	CPUPer1000 *float64           `json:"cpu_sec_per_1000_ops,omitempty"`
	// GCs is the daemon's garbage collections during the step; null
	// when the daemon does not report them (all but smallfs).
	GCs *float64 `json:"gc_cycles,omitempty"`
}

// Summary is one target at one file size over the rounds.
type Summary struct {
	Target           string      `json:"target"`
	Size             int64       `json:"size"`
	Ops              []OpSummary `json:"ops"`
	MemPerFile       *float64    `json:"memory_per_file,omitempty"`        // median
	MemGrowthPerFile *float64    `json:"memory_growth_per_file,omitempty"` // median
}

// OpSummary is one step over the rounds that ran it.
type OpSummary struct {
	Op          string             `json:"op"`
	Rounds      int                `json:"rounds"`               // rounds that ran it fully
	FilesPerSec *float64           `json:"files_per_sec"`        // median
	Min         *float64           `json:"min_files_per_sec"`    // slowest round
	Max         *float64           `json:"max_files_per_sec"`    // fastest round
	Spread      *float64           `json:"spread"`               // (max-min)/median
	MBPerSec    *float64           `json:"mb_per_sec,omitempty"` // median, data steps
	RoundTrips  *float64           `json:"round_trips_per_file,omitempty"`
	Requests    map[string]float64 `json:"requests_per_file"`
	CPUPer1000  *float64           `json:"cpu_sec_per_1000_ops,omitempty"`
	GCs         *float64           `json:"gc_cycles,omitempty"` // median
	Status      string             `json:"status"`              // ok, or why there is no figure
}

// Ratio is Base's median files/s over Other's, per step, at one size.
type Ratio struct {
	Size    int64     `json:"size"`
	Base    string    `json:"base"`
	Other   string    `json:"other"`
	Ops     []OpRatio `json:"ops"`
	Geomean *float64  `json:"geomean"` // over the steps both ran
}

// OpRatio is one step's ratio; null when either side has no figure.
type OpRatio struct {
	Op    string   `json:"op"`
	Ratio *float64 `json:"ratio"`
}

// num turns NaN into null for JSON.
func num(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// val is the inverse of num: NaN for null.
func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// ReadReport reads a report --json wrote.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%s: schema %q, this bench reads %q", path, r.Schema, Schema)
	}
	return &r, nil
}

// MarshalIndent is the --json form.
func (r *Report) MarshalIndent() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }
