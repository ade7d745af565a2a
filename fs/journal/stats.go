package journal

import "github.com/smallfs/smallfs/accounting"

// Accounting: the chunk buffers are the journal's only long-lived memory;
// the counters show how well group commit shares flushes
// (syncs-waited / commits is callers served per commit).
var (
	layer       = accounting.Default.Layer("journal")
	acctBuffers = layer.Type("chunk-buffer")
	ctrCommits  = layer.Counter("commits") // group commits (each: barrier flush unless skipped, write, flush)
	ctrFlushes  = layer.Counter("flushes") // device flushes issued
	// commits whose data barrier was skipped: nothing written since the last flush
	ctrBarriersSkipped = layer.Counter("barriers-skipped")
	ctrChunks          = layer.Counter("chunks")       // chunks written, wrap chunks included
	ctrBytes           = layer.Counter("bytes")        // bytes written to the log
	ctrWaited          = layer.Counter("syncs-waited") // Sync calls that found their sequence not yet durable
	ctrAppends         = layer.Counter("appends")      // transactions appended
)
