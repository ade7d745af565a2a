package bench

import (
	"os"
	"testing"
	"time"
)

func TestMeasureCountsRoundTripsAndCPU(t *testing.T) {
	before := Sample{Pid: 7, CPU: time.Second, RSS: 1 << 20,
		Requests: map[string]uint64{"LOOKUP": 10, "CREATE": 5, "FORGET": 3}, GCs: 4, HasGCs: true}
	after := Sample{Pid: 7, CPU: 3 * time.Second, RSS: 2 << 20,
		Requests: map[string]uint64{"LOOKUP": 110, "CREATE": 105, "FORGET": 53, "WRITE": 100}, GCs: 9, HasGCs: true}
	m := measure(Result{Op: "create", Files: 100, Bytes: 409600, Elapsed: time.Second / 2}, before, after)
	if m.FilesPerSec != 200 || m.MBPerSec != 409600/1e6*2 {
		t.Errorf("rates %v files/s %v MB/s, want 200 and %v", m.FilesPerSec, m.MBPerSec, 409600/1e6*2)
	}
	// FORGET gets no answer: it is counted per opcode, not as a round trip
	if val(m.RoundTrips) != 3 || m.Requests["FORGET"] != 0.5 || m.Requests["WRITE"] != 1 {
		t.Errorf("round trips %v, requests %v; want 3, FORGET 0.5, WRITE 1", val(m.RoundTrips), m.Requests)
	}
	if val(m.CPUPer1000) != 20 {
		t.Errorf("CPU per 1000 ops %v, want 20 (2 s over 100 files)", val(m.CPUPer1000))
	}
	if val(m.GCs) != 5 {
		t.Errorf("GC cycles %v, want 5", val(m.GCs))
	}
	before.HasGCs = false // a daemon that does not report them
	if m := measure(Result{Op: "create", Files: 100, Elapsed: time.Second}, before, after); m.GCs != nil {
		t.Errorf("GC cycles %v from a daemon that does not report them, want none", val(m.GCs))
	}
	before.HasGCs = true
	// a daemon that restarted between samples, or one without counters
	after.Pid, after.Requests = 8, nil
	m = measure(Result{Op: "create", Files: 100, Elapsed: time.Second}, before, after)
	if m.RoundTrips != nil || m.Requests != nil || m.CPUPer1000 != nil || m.GCs != nil {
		t.Errorf("figures across another daemon or without counters: %+v", m)
	}
}

func TestProcReadsThisProcess(t *testing.T) {
	s := Sample{Pid: os.Getpid()}
	readProc(&s)
	if s.Err != nil || s.RSS < 1<<20 || s.CPU < 0 {
		t.Fatalf("own figures: RSS %d CPU %v err %v", s.RSS, s.CPU, s.Err)
	}
	if !alive(os.Getpid()) || alive(1<<30) {
		t.Error("alive is wrong about this process or a pid that cannot exist")
	}
	s = Sample{Pid: 1 << 30}
	readProc(&s)
	if s.Err == nil || s.hasProc() {
		t.Error("figures of a missing process were not an error")
	}
}
