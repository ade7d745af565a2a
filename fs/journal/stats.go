package journal

import "github.com/smallfs/smallfs/accounting"

// stats is a journal's accounting, in the registry Options.Accounting
// names (layer "journal"): the chunk buffers are its only long-lived
// memory; the counters show how well group commit shares flushes
// (syncs-waited / commits is callers served per commit).
type stats struct {
	buffers *accounting.Record
	commits *accounting.Counter // group commits (each: barrier flush unless skipped, write, flush)
	flushes *accounting.Counter // device flushes issued
	// commits whose data barrier was skipped: nothing written since the
	// last flush
	barriersSkipped *accounting.Counter
	chunks          *accounting.Counter // chunks written, wrap chunks included
	bytes           *accounting.Counter // bytes written to the log
	waited          *accounting.Counter // Sync calls that found their sequence not yet durable
	appends         *accounting.Counter // transactions appended
}

func newStats(reg *accounting.Registry) *stats {
	l := reg.Layer("journal")
	return &stats{
		buffers:         l.Type("chunk-buffer"),
		commits:         l.Counter("commits"),
		flushes:         l.Counter("flushes"),
		barriersSkipped: l.Counter("barriers-skipped"),
		chunks:          l.Counter("chunks"),
		bytes:           l.Counter("bytes"),
		waited:          l.Counter("syncs-waited"),
		appends:         l.Counter("appends"),
	}
}
