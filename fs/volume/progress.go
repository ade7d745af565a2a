package volume

import "github.com/smallfs/smallfs/fs/format"

// progressEvery is how many records, transactions or inodes Open handles
// between two Options.Progress calls: often enough for a terminal line,
// rarely enough to cost nothing.
const progressEvery = 1 << 16

// progress counts the work of one phase of Open for Options.Progress; the
// zero value (no callback) does nothing.
type progress struct {
	fn func(Progress)
	p  Progress
}

// progress begins a phase of total steps (0: not known).
func (v *Volume) progress(phase string, total uint64) *progress {
	pr := &progress{fn: v.opts.Progress, p: Progress{Phase: phase, Total: total}}
	if pr.fn != nil {
		pr.fn(pr.p)
	}
	return pr
}

// step counts one step done.
func (pr *progress) step() {
	pr.p.Done++
	if pr.fn != nil && pr.p.Done%progressEvery == 0 {
		pr.fn(pr.p)
	}
}

// end reports the phase done.
func (pr *progress) end() {
	if pr.fn != nil && (pr.p.Done%progressEvery != 0 || pr.p.Done == 0) {
		pr.fn(pr.p)
	}
}

// checkpointRecords returns how many records the checkpoint sb names
// holds, from its header, or 0 when that cannot be read (ScanCheckpoint
// then reports why).
func (v *Volume) checkpointRecords(sb *format.Superblock) uint64 {
	hb := make([]byte, sb.BlockSize)
	if _, err := v.dev.ReadAt(hb, int64(sb.Checkpoint)*int64(sb.BlockSize)); err != nil {
		return 0
	}
	h, err := format.DecodeCheckpointHead(hb, 0)
	if err != nil {
		return 0
	}
	return h.Records
}
