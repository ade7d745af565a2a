package volume

import (
	"errors"
	"time"
)

// Sync writes back every dirty file and makes the whole log durable. A
// file whose write-back fails does not hold back the others: the log is
// made durable all the same, and the first write-back error returned.
// Once a device error has stopped the volume it fails with ErrNotDurable,
// writing nothing (it still drops the data of unlinked files nobody can
// read any more, writeBackQueued).
func (v *Volume) Sync() error {
	errWB := v.writeBackAll()
	if err := v.syncLog(); err != nil {
		return err
	}
	return errWB
}

// syncLog makes every transaction appended so far durable. A device
// error in the commit stops the volume (the caller gets that error, later
// ones ErrNotDurable).
func (v *Volume) syncLog() error {
	if err := v.refuseSync(); err != nil {
		return opErr("sync", "", err)
	}
	if err := v.j.Sync(v.j.Last()); err != nil {
		return opErr("sync", "", v.failOnLog(err))
	}
	v.acct.syncs.Inc()
	return nil
}

// settleFrees makes the blocks waiting for a commit allocatable
// (durableFrees), then waits, up to readWait, for the reads pinned before
// those frees (readpin.go). No lock but a file's data lock is held.
func (v *Volume) settleFrees() error {
	if err := v.durableFrees(); err != nil {
		return err
	}
	v.space.awaitReads(readWait)
	return nil
}

// durableFrees makes the frees waiting for a commit durable: it syncs the
// log and, with data sums (where a commit's frees also wait for the next
// commit, see onDurable), commits once more a transaction that changes
// nothing, the root's inode record as it stands.
func (v *Volume) durableFrees() error {
	if err := v.syncLog(); err != nil {
		return err
	}
	if !v.dataSums || !v.space.hasPending() {
		return nil
	}
	v.mu.Lock()
	_, err := v.commit(v.inodes.get(RootIno).record(RootIno))
	v.mu.Unlock()
	if err != nil {
		return opErr("sync", "", err)
	}
	return v.syncLog()
}

// startCommitter starts the periodic commit: every CommitInterval it
// writes back dirty files, makes the log durable, and checkpoints once the
// log is half full; it does the same at once when a commit finds the log
// half full (ckptKick). A volume a device error stopped is left alone.
func (v *Volume) startCommitter() {
	v.stop, v.stopped = make(chan struct{}), make(chan struct{})
	v.syncKick = make(chan struct{}, 1)
	v.ckptKick = make(chan struct{}, 1)
	if v.opts.CommitInterval < 0 {
		close(v.stopped)
		return
	}
	go func() {
		defer close(v.stopped)
		t := time.NewTicker(v.opts.CommitInterval)
		defer t.Stop()
		for {
			select {
			case <-v.stop:
				return
			case <-t.C:
				// A stopped volume refuses at once; fail said so.
				if err := v.commitNow(); err != nil && v.failed.Load() == nil {
					v.opts.Logger.WithError(err).Error("periodic commit failed")
				}
			case <-v.syncKick: // maxUnsynced written back since the last commit
				if err := v.syncLog(); err != nil && v.failed.Load() == nil {
					v.opts.Logger.WithError(err).Error("early commit failed")
				}
			case <-v.ckptKick: // the log is half full before the tick
				if err := v.commitNow(); err != nil && v.failed.Load() == nil {
					v.opts.Logger.WithError(err).Error("early checkpoint failed")
				}
			}
		}
	}()
}

func (v *Volume) stopCommitter() {
	close(v.stop)
	<-v.stopped
}

// commitNow is one periodic commit. It checkpoints once the log is half
// full, and also while both superblock slots name one checkpoint, as after
// Open: until a second one is written a damaged checkpoint has nothing to
// fall back to (openOlder), and on a quiet mount the log takes days to
// fill half. So the first periodic commit of a mount writes one.
//
// A file whose write-back failed does not hold back the checkpoint
// either; a volume a device error stopped writes none.
func (v *Volume) commitNow() error {
	if v.frozen.Load() != nil { // opened damaged: takes no changes, writes nothing
		return nil
	}
	err := v.Sync()
	if v.failed.Load() != nil {
		return err
	}
	if used, capacity := v.j.Usage(); used*2 < capacity && !v.oneCheckpoint() {
		return err
	}
	return errors.Join(err, v.checkpointConcurrent())
}

// oneCheckpoint reports whether both superblock slots name the same
// checkpoint.
func (v *Volume) oneCheckpoint() bool {
	v.ckptMu.Lock()
	defer v.ckptMu.Unlock()
	return v.refs[0].block == v.refs[1].block
}

// Fsync makes ino durable: a file's dirty data is written back first; for
// a directory (fsyncdir) the log holds everything already. Fsync of the
// root directory is Sync: every dirty file written back, then the log
// made durable. It is the one request that reaches the daemon for a
// whole mount (the kernel sends FUSE's SYNCFS to virtiofs only, so
// sync(1) and syncfs(2) do not): `smallfs sync MOUNTPOINT` and coreutils'
// `sync MOUNTPOINT` send it. It fails while data written to the file
// before was lost (ErrLost, see Release).
func (v *Volume) Fsync(ino Ino, datasync bool) error {
	if ino == RootIno {
		return v.Sync()
	}
	err := v.withData(ino, func(n *inode, fd *fileData) error {
		return v.fsyncWriteBack(ino, n, fd)
	})
	if err != nil && !errors.Is(err, ErrIsDir) && !errors.Is(err, ErrInvalid) {
		return opErr("fsync", "", err)
	}
	if err := v.syncLog(); err != nil {
		return err
	}
	return v.lost(ino)
}

// lost returns ErrLost if a write-back of ino dropped data it could not
// write (Release): an fsync of the file must not succeed after that,
// through any open, until the file is emptied or removed.
func (v *Volume) lost(ino Ino) error {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if n := v.inodes.get(ino); n != nil && n.flags&inodeLost != 0 {
		return opErr("fsync", "", ErrLost)
	}
	return nil
}

// withData runs fn on regular file ino with its data lock held, keeping
// the inode alive meanwhile. It returns ErrIsDir for a directory and
// ErrInvalid for other non-regular inodes without calling fn.
func (v *Volume) withData(ino Ino, fn func(*inode, *fileData) error) error {
	v.mu.Lock()
	n, err := v.live(ino)
	switch {
	case err != nil:
	case n.isDir():
		err = ErrIsDir
	case !n.isReg():
		err = ErrInvalid
	}
	if err != nil {
		v.mu.Unlock()
		return err
	}
	fd := v.attach(n, 0)
	n.opens++ // pins the inode like a handle
	v.mu.Unlock()

	fd.mu.Lock()
	err = fn(n, fd)
	fd.mu.Unlock()

	v.mu.Lock()
	n.opens--
	if n.opens == 0 {
		v.detach(n)
		v.freeIfUnused(ino, n)
	}
	v.mu.Unlock()
	return err
}
