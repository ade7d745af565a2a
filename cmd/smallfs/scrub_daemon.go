package main

import (
	"context"
	"errors"
	"time"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/fs/volume"
)

// errScrubRunning refuses a second scrub while one runs.
var errScrubRunning = errors.New("a scrub is already running on this mount")

// scrub runs a scrub for a client of the control socket: one at a time,
// from the start or, with req.Resume, from where the last one stopped.
// Damage goes to the log as well as to the client.
func (m *mounted) scrub(ctx context.Context, req control.ScrubRequest, progress func(control.ScrubStatus)) (control.ScrubStatus, error) {
	if !m.scrubbing.TryLock() {
		return control.ScrubStatus{}, errScrubRunning
	}
	defer m.scrubbing.Unlock()
	var from uint64
	if req.Resume {
		from = m.scrubNext
	}
	start := time.Now()
	log := m.log.WithField("from_block", from).WithField("rate", req.Rate)
	log.Info("scrub started")
	rep, err := m.sess.Scrub(ctx, volume.ScrubOptions{From: from, Rate: req.Rate, Progress: func(r volume.ScrubReport) {
		progress(scrubStatus(r, time.Since(start)))
	}})
	st := scrubStatus(rep, time.Since(start))
	m.scrubNext = rep.Next
	switch {
	case errors.Is(err, context.Canceled):
		st.Stopped = true
		log.WithField("next_block", rep.Next).WithField("blocks", rep.Blocks).Info("scrub stopped; smallfs scrub --resume goes on from here")
		return st, err
	case err != nil:
		log.WithError(err).Error("scrub failed")
		return st, err
	}
	for _, d := range rep.Damaged {
		m.log.WithField("path", d.Path).WithField("ino", d.Ino).WithField("offset", d.Off).WithField("block", d.Block).
			Error("scrub: file data does not match its checksum (restore the file from a backup)")
	}
	log.WithField("blocks", rep.Blocks).WithField("damaged", len(rep.Damaged)).WithField("unverified", rep.Unverified).
		WithField("took", st.Took.Round(time.Millisecond)).Info("scrub done")
	return st, nil
}

// scrubStatus is what the client is told of r.
func scrubStatus(r volume.ScrubReport, took time.Duration) control.ScrubStatus {
	st := control.ScrubStatus{Blocks: r.Blocks, Bytes: r.Bytes, Total: r.Total, Unverified: r.Unverified, Took: took}
	for _, d := range r.Damaged {
		st.Damaged = append(st.Damaged, control.DamagedBlock{Ino: uint64(d.Ino), Path: d.Path, Off: d.Off, Len: d.Len, Block: d.Block, Want: d.Want, Got: d.Got})
	}
	return st
}
