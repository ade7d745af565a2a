package main

import (
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/smallfs/smallfs/fs/volume"
)

// TestProgressLog: a mount's open progress reaches the log only once the
// open has run for the interval, then at most once per interval.
func TestProgressLog(t *testing.T) {
	log, hook := test.NewNullLogger()
	clock := time.Unix(0, 0)
	show := progressLog(log, 10*time.Second, func() time.Time { return clock })
	step := func(d time.Duration, p volume.Progress) {
		clock = clock.Add(d)
		show(p)
	}
	step(0, volume.Progress{Phase: volume.PhaseCheckpoint, Total: 100})
	step(9*time.Second, volume.Progress{Phase: volume.PhaseCheckpoint, Done: 90, Total: 100})
	if n := len(hook.AllEntries()); n != 0 {
		t.Fatalf("%d lines logged in the first 9 s, want none", n)
	}
	step(2*time.Second, volume.Progress{Phase: volume.PhaseReplay, Done: 7})
	step(5*time.Second, volume.Progress{Phase: volume.PhaseReplay, Done: 8})
	step(5*time.Second, volume.Progress{Phase: volume.PhaseSpace, Done: 3, Total: 4})
	got := hook.AllEntries()
	if len(got) != 2 {
		t.Fatalf("%d lines logged, want 2 (at 11 s and 21 s)", len(got))
	}
	if got[0].Level != logrus.InfoLevel || got[0].Data["phase"] != volume.PhaseReplay || got[0].Data["done"] != uint64(7) || got[0].Data["total"] != nil {
		t.Errorf("first line: %v %v", got[0].Level, got[0].Data)
	}
	if got[1].Data["phase"] != volume.PhaseSpace || got[1].Data["total"] != uint64(4) {
		t.Errorf("second line: %v", got[1].Data)
	}
}
