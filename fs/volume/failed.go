package volume

import (
	"errors"
	"fmt"

	"github.com/smallfs/smallfs/fs/journal"
)

// A device error writing metadata stops the volume (doc.go, "# Device
// errors"): what reached the disk is unknown until a replay, so the
// volume takes no more changes and writes nothing more, as ext4 mounted
// errors=remount-ro; reads go on from memory and the device.

// failure is why the volume stopped: where the device failed, and how.
type failure struct {
	where string // "log", "checkpoint", "superblock", or "apply"
	err   error
}

// Failed returns nil while the volume takes changes, and once a device
// error writing metadata (a log commit, a checkpoint, a superblock) has
// stopped it, an error naming where and how the device failed. It stays
// stopped until closed; a new Open replays what the log holds.
func (v *Volume) Failed() error {
	f := v.failed.Load()
	if f == nil {
		return nil
	}
	return fmt.Errorf("device error writing metadata: %w", f.err)
}

// fail stops the volume after the device failed a metadata write or
// flush in where. The first failure is kept and logged; the journal is
// failed too, so that nothing more is appended or written.
func (v *Volume) fail(where string, err error) {
	if !v.failed.CompareAndSwap(nil, &failure{where: where, err: err}) {
		return
	}
	if v.j != nil {
		v.j.Fail(err)
	}
	what := "cannot write metadata to the device"
	if where == "apply" {
		what = "a logged transaction does not apply to the metadata in memory"
	}
	v.opts.Logger.WithError(err).WithField("in", where).
		Error(what + ": the volume is read-only from now on (changes get EROFS, fsync EIO) and writes nothing more; " +
			"reads go on; what was committed before is on the device: unmount, check the device (smallfs fsck), and mount again")
}

// failOnLog stops the volume if err says the journal failed (a device
// error in a commit), and returns err.
func (v *Volume) failOnLog(err error) error {
	if errors.Is(err, journal.ErrFailed) {
		v.fail("log", err)
	}
	return err
}

// failOnCheckpoint stops the volume if a checkpoint failed for anything
// but want of space (the allocator's ErrNoSpace, which a later one may
// not meet), and returns err.
func (v *Volume) failOnCheckpoint(err error) error {
	if err != nil && !errors.Is(err, ErrNoSpace) {
		v.fail("checkpoint", err)
	}
	return err
}

// refuseChange returns ErrReadOnly, with the cause, once the volume has
// stopped; nil while it takes changes.
func (v *Volume) refuseChange() error {
	if f := v.failed.Load(); f != nil {
		return fmt.Errorf("%w (%v)", ErrReadOnly, f.err)
	}
	return nil
}

// refuseSync returns ErrNotDurable, with the cause, once the volume has
// stopped; nil while it takes changes.
func (v *Volume) refuseSync() error {
	if f := v.failed.Load(); f != nil {
		return fmt.Errorf("%w (%v)", ErrNotDurable, f.err)
	}
	return nil
}

// closeStopped is Close of a stopped volume: no write-back, no
// checkpoint, no clean flag; the journal, failed, writes nothing either.
// The device keeps what it held when the volume stopped, and the next
// Open replays the log from the last checkpoint.
func (v *Volume) closeStopped() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	_ = v.j.Close() // fails: the journal failed with the volume
	v.acct.release(v)
	v.space.close()
	return opErr("close", "", fmt.Errorf("%w; nothing more was written: the next mount replays the log", v.refuseSync()))
}
