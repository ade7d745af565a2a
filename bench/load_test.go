package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadLoadAvgAndMachineBusy(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if a := readLoadAvg(write("loadavg", "0.52 1.50 3.25 2/467 12345\n")); a == nil || *a != (LoadAvg{0.52, 1.5, 3.25}) {
		t.Errorf("loadavg = %+v, want 0.52 1.50 3.25", a)
	}
	for _, bad := range []string{"", "0.5 x 1", "0.5 0.6"} {
		if a := readLoadAvg(write("bad", bad)); a != nil {
			t.Errorf("loadavg of %q = %+v, want unknown", bad, a)
		}
	}
	// user nice system idle iowait irq softirq steal: idle and iowait
	// are not busy, steal is (the CPU was not ours to use)
	stat := write("stat", "cpu  100 20 30 5000 400 6 4 40 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
	if d, ok := machineBusy(stat); !ok || d != 2*time.Second {
		t.Errorf("busy = %v %v, want 2s (200 ticks)", d, ok)
	}
	if _, ok := machineBusy(write("stat2", "cpu0 1 2 3 4 5 6 7 8\n")); ok {
		t.Error("a /proc/stat without the total line was read")
	}
	if _, ok := machineBusy("/proc/stat"); !ok {
		t.Error("this machine's /proc/stat was not read")
	}
}

// A round is flagged when the load average before or after it exceeds the
// CPUs; the CPU of a detached daemon is the bench's own, not others'.
func TestLoadMeterFlagsBusyRounds(t *testing.T) {
	m := startLoad(1)
	m.before = &LoadAvg{Min1: 3}
	if l := m.end(2); !l.Busy || l.Round != 1 || l.OthersCPU == nil || *l.OthersCPU < 0 || l.After == nil {
		t.Errorf("load 3 on 2 CPUs: %+v, want busy with the readings", l)
	}
	m.before = &LoadAvg{Min1: 3}
	if l := m.end(1 << 20); l.Busy {
		t.Errorf("load 3 on 2^20 CPUs flagged busy: %+v", l)
	}

	r := &runner{load: m}
	first := Sample{Pid: 9, CPU: time.Second, Detached: true}
	r.countDaemon(first, Sample{Pid: 9, CPU: 3 * time.Second, Detached: true})
	r.countDaemon(first, Sample{Pid: 10, CPU: 5 * time.Second, Detached: true}) // another daemon
	r.countDaemon(Sample{Pid: 9, CPU: time.Second}, Sample{Pid: 9, CPU: 9 * time.Second})
	if m.daemons != 2*time.Second {
		t.Errorf("daemon CPU %v, want 2s: only a detached daemon's own samples count", m.daemons)
	}
}

func TestTableStatesTheLoad(t *testing.T) {
	r := fakeReport()
	others := 0.75
	r.Load = []RoundLoad{
		{Round: 1, Before: &LoadAvg{Min1: 0.5}, After: &LoadAvg{Min1: 1.9}, OthersCPU: &others},
		{Round: 2, Before: &LoadAvg{Min1: 1.9}, After: &LoadAvg{Min1: 2.6}, Busy: true},
	}
	var out bytes.Buffer
	if err := r.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"machine: load 0.50–2.60, others up to 0.75 CPUs; 1 of 2 round(s) under load > 2 CPUs\n",
		"round 1   1-min load 0.50 → 1.90, others 0.75 CPUs\n",
		"round 2   1-min load 1.90 → 2.60  BUSY: load above 2 CPUs\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(string(r.SVG()), "1 of 2 round(s) under load") {
		t.Error("chart does not state the load")
	}
	r.Load = nil // a report from before the load was recorded
	out.Reset()
	_ = r.WriteTable(&out)
	if !strings.Contains(out.String(), "machine: load not recorded") {
		t.Errorf("an old report's table:\n%s", out.String())
	}
}
