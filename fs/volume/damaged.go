package volume

import (
	"fmt"
	"strings"
)

// Metadata that loads but fails metaCheck — a checkpoint whose checksums
// are right over records that are not (a bug, a forged image, damage
// before the checksum was computed) — is refused by Open with an
// *inconsistentError: serving it would let the code that relies on those
// invariants panic, give a freed inode's number to a new file under a
// stale name, and write checkpoints that no longer load. fsck --repair
// mends it (Repair). With Options.OpenDamaged, Open loads it anyway for a
// look or a repair: each file whose data is damaged answers EIO (inode
// flag inodeDamaged), an entry naming a missing inode answers EIO, every
// other file reads as it was, and the volume takes no change but Repair's
// (frozen) until Repair has made it pass; no checkpoint is written
// meanwhile.

// inconsistentError is metadata that fails metaCheck: at Open, or in a
// checkpoint the guard refused to make current.
type inconsistentError struct {
	what     string // "metadata" or "checkpoint"
	findings []finding
}

// shownProblems is how many problems an inconsistentError names.
const shownProblems = 5

func (e *inconsistentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s fails its checks (%d problem(s)): ", e.what, len(e.findings))
	for i, f := range e.findings {
		if i == shownProblems {
			fmt.Fprintf(&b, "; and %d more", len(e.findings)-shownProblems)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.String())
	}
	return b.String()
}

func (e *inconsistentError) Unwrap() []error { return []error{ErrInconsistent, ErrCorrupt} }

// freeze is why a volume opened damaged takes no change (Volume.frozen).
type freeze struct{ err error }

// frozenErr returns the error a change gets while the volume holds
// damaged metadata and Repair is not running, nil otherwise (v.mu held).
func (v *Volume) frozenErr() error {
	if f := v.frozen.Load(); f != nil && !v.repairing {
		return f.err
	}
	return nil
}

// damagedOpen reports whether the volume holds damaged metadata and
// Repair is not running: no checkpoint is written then, and Close writes
// nothing (v.mu held).
func (v *Volume) damagedOpen() bool { return v.frozen.Load() != nil && !v.repairing }

// openDamaged keeps metadata that fails metaCheck (Options.OpenDamaged):
// it marks the files whose data is damaged, notes the findings in
// Recovery.Inconsistent and freezes the volume until Repair mends it.
func (v *Volume) openDamaged(findings []finding) {
	v.isolate(findings)
	v.recovery.Inconsistent = make([]Problem, len(findings))
	for i, f := range findings {
		v.recovery.Inconsistent[i] = f.Problem
	}
	err := &inconsistentError{what: "metadata", findings: findings}
	v.frozen.Store(&freeze{err: fmt.Errorf("volume opened damaged, read-only until repaired: %w", err)})
	v.opts.Logger.WithField("problems", len(findings)).WithError(err).
		Warn("the metadata fails its checks: opened anyway, read-only; damaged files answer EIO")
}

// isolate marks the inodes whose data findings damage: their data
// answers EIO. Others' flags are cleared (v.mu held for writing).
func (v *Volume) isolate(findings []finding) {
	v.inodes.all(func(_ Ino, n *inode) bool {
		n.flags &^= inodeDamaged
		return true
	})
	for _, f := range findings {
		if n := v.inodes.get(f.Ino); n != nil && f.Ino != 0 && f.damagesFile() {
			n.flags |= inodeDamaged
		}
	}
}

// damagedData returns the error for a use of a file whose data is
// damaged, nil for any other.
func damagedData(ino Ino, n *inode) error {
	if n.flags&inodeDamaged != 0 {
		return corruptf("inode %d: its data is damaged", ino)
	}
	return nil
}

// thaw lets a volume opened damaged take changes again once metaCheck
// passes (after Repair; v.mu held for writing). It reports whether the
// volume takes changes.
func (v *Volume) thaw() bool {
	if v.frozen.Load() == nil {
		return v.failed.Load() == nil
	}
	m := v.checkMeta(true)
	m.finishBlocks(v.ckptExtents())
	v.isolate(m.findings)
	if len(m.findings) > 0 {
		return false
	}
	v.frozen.Store(nil)
	return true
}
