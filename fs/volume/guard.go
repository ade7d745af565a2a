package volume

import (
	"fmt"
	"slices"

	"github.com/smallfs/smallfs/alloc"
)

// # The checkpoint guard
//
// A checkpoint is the only copy of the metadata once the log before it is
// released, and the superblock flip makes it current: a checkpoint that
// its own Open would refuse (metaCheck) turns a bug in memory into a
// volume nothing can open, and the older checkpoint goes at the next
// flip. So every checkpoint is checked as it is encoded: the encoder
// feeds metaCheck what it writes (the locked checkpoint the live
// metadata, the periodic one its snapshot), and before the superblock is
// written verifyCheckpoint finishes the check, with the blocks the
// checkpoint and the one the other slot keeps naming hold. A checkpoint
// that fails is not made current: its blocks are given back, the error
// names the problems, and the volume stops as after a device error
// writing metadata (failOnCheckpoint, failed.go: no more changes, nothing
// more written), so nothing is acknowledged that could only be lost; the
// log still holds every transaction since the last good checkpoint, and
// the next Open refuses that state in turn, pointing at fsck --repair.
//
// Cost: one more look at each inode and entry the checkpoint encodes,
// flat arrays of 9 bytes per inode number and a sort of 8 bytes per
// extent (BenchmarkCheckpointEncode, guard=true; docs/PERFORMANCE.md).

// verifyCheckpoint finishes the check c of a checkpoint written and not
// yet current; draft is its blocks when they may be compared with the
// files' (the locked checkpoint: the same state), nil for a snapshot,
// whose files are as they were at its start and may have given blocks
// to it since. v.ckptMu is held.
func (v *Volume) verifyCheckpoint(c *metaCheck, draft []alloc.Extent) error {
	c.finish()
	extra := append(slices.Clone(v.refs[v.sb.Slot].extents), draft...)
	c.finishBlocks(extra)
	if len(c.findings) == 0 {
		return nil
	}
	return fmt.Errorf("checkpoint: %w", &inconsistentError{what: "checkpoint", findings: c.findings})
}
