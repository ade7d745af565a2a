package main

import (
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/fs/volume"
)

// progressLogEvery is how often a mount that is not on a terminal logs how
// far opening its volume has got, and how long the open must have taken
// before it logs at all: a small volume opens in well under that and logs
// nothing.
const progressLogEvery = 10 * time.Second

// openProgress chooses where a mount shows the volume's open progress
// (checkpoint, replay, free-space rebuild, orphans): the status line of a
// foreground mount on a terminal, else the log at a low rate. done clears
// the status line once the volume is open.
func (a *app) openProgress(log logrus.FieldLogger) (progress func(volume.Progress), done func()) {
	if f, ok := a.stderr.(*os.File); ok && a.notifier == nil && isTerminal(f) {
		show := a.status("mount")
		return progressLine(show), func() { show("") }
	}
	return progressLog(log, progressLogEvery, time.Now), func() {}
}

// progressLog logs Open's progress at most once per every, starting once
// Open has run for every.
func progressLog(log logrus.FieldLogger, every time.Duration, now func() time.Time) func(volume.Progress) {
	next := now().Add(every)
	return func(p volume.Progress) {
		t := now()
		if t.Before(next) {
			return
		}
		next = t.Add(every)
		e := log.WithFields(logrus.Fields{"phase": p.Phase, "done": p.Done})
		if p.Total > 0 {
			e = e.WithField("total", p.Total)
		}
		e.Info("opening the volume")
	}
}
