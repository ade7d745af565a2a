package bench

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RoundLoad is how busy the machine was around one round: shared machines
// are noisy, and a figure taken while others ran is not a figure of the
// filesystem alone.
type RoundLoad struct {
	Round int `json:"round"`
	// Before and After are /proc/loadavg's 1-, 5- and 15-minute averages
	// as the round started and ended; null when unreadable. They count
	// the bench's own threads and daemons too.
	Before *LoadAvg `json:"loadavg_before"`
	After  *LoadAvg `json:"loadavg_after"`
	// OthersCPU is how many CPUs, on average over the round, were busy
	// with anything but the bench: the machine's busy time (/proc/stat,
	// steal included) less the bench's own (its threads, its children,
	// its detached daemons). Kernel threads count as others, including
	// the ones working for a kernel target (loop device, journal).
	OthersCPU *float64 `json:"others_cpu"`
	// Busy is set when the 1-minute load average before or after the
	// round exceeded the machine's CPUs.
	Busy bool `json:"busy"`
}

// LoadAvg is the kernel's run-queue averages.
type LoadAvg struct {
	Min1  float64 `json:"1m"`
	Min5  float64 `json:"5m"`
	Min15 float64 `json:"15m"`
}

// loadMeter takes the machine's readings at a round's edges; the runner
// adds the CPU of the detached daemons it sampled in between.
type loadMeter struct {
	round     int
	start     time.Time
	before    *LoadAvg
	busy, own time.Duration // at start
	okBusy    bool
	daemons   time.Duration // CPU of detached daemons during the round
}

func startLoad(round int) *loadMeter {
	m := &loadMeter{round: round, start: time.Now(), before: readLoadAvg("/proc/loadavg")}
	m.busy, m.okBusy = machineBusy("/proc/stat")
	m.own = ownCPU()
	return m
}

// end takes the closing readings; cpus is the machine's CPU count.
func (m *loadMeter) end(cpus int) RoundLoad {
	l := RoundLoad{Round: m.round, Before: m.before, After: readLoadAvg("/proc/loadavg")}
	busy, ok := machineBusy("/proc/stat")
	if wall := time.Since(m.start); ok && m.okBusy && wall > 0 {
		others := (busy - m.busy) - (ownCPU() - m.own) - m.daemons
		l.OthersCPU = num(max(0, others.Seconds()/wall.Seconds()))
	}
	for _, a := range []*LoadAvg{l.Before, l.After} {
		if a != nil && a.Min1 > float64(cpus) {
			l.Busy = true
		}
	}
	return l
}

// readLoadAvg parses /proc/loadavg ("0.52 0.58 0.59 1/467 12345").
func readLoadAvg(path string) *LoadAvg {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return nil
	}
	var v [3]float64
	for i := range v {
		if v[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return nil
		}
	}
	return &LoadAvg{v[0], v[1], v[2]}
}

// machineBusy is the CPU time all CPUs spent not idle since boot, from
// the "cpu" line of /proc/stat: user nice system idle iowait irq softirq
// steal ... in USER_HZ ticks (guest time is already inside user).
func machineBusy(path string) (time.Duration, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var ticks uint64
	for i, s := range f[1:9] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, false
		}
		if i != 3 && i != 4 { // idle, iowait
			ticks += v
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks, true
}

// ownCPU is the CPU time of the bench and of the children it has waited
// for (mkfs, fsck, the loopback and fuse2fs servers).
func ownCPU() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

// loadSummary is one line on the load of all rounds, for the table and
// the chart: the range of the 1-minute averages, others' CPU at most,
// and how many rounds ran under a load above the CPUs.
func (r *Report) loadSummary() string {
	if len(r.Load) == 0 {
		return "load not recorded"
	}
	lo, hi, others := math.Inf(1), math.Inf(-1), math.NaN()
	busy := 0
	for _, l := range r.Load {
		for _, a := range []*LoadAvg{l.Before, l.After} {
			if a != nil {
				lo, hi = min(lo, a.Min1), max(hi, a.Min1)
			}
		}
		if l.OthersCPU != nil && (math.IsNaN(others) || *l.OthersCPU > others) {
			others = *l.OthersCPU
		}
		if l.Busy {
			busy++
		}
	}
	s := "load n/a"
	if lo <= hi {
		s = fmt.Sprintf("load %.2f–%.2f", lo, hi)
	}
	if !math.IsNaN(others) {
		s += fmt.Sprintf(", others up to %.2f CPUs", others)
	}
	return s + fmt.Sprintf("; %d of %d round(s) under load > %d CPUs", busy, len(r.Load), r.Machine.CPUs)
}
