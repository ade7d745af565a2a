package volume

import (
	"maps"
	"time"
)

// markDirty records that ino has data or attributes to write back, for
// Sync and the periodic commit.
func (v *Volume) markDirty(ino Ino, fd *fileData) {
	v.dirtyMu.Lock()
	if v.dirty == nil {
		v.dirty = make(map[Ino]*fileData)
	}
	v.dirty[ino] = fd
	v.dirtyMu.Unlock()
}

// unmarkDirty forgets ino after its write-back.
func (v *Volume) unmarkDirty(ino Ino, fd *fileData) {
	v.dirtyMu.Lock()
	if v.dirty[ino] == fd {
		delete(v.dirty, ino)
	}
	v.dirtyMu.Unlock()
}

// Sync writes back every dirty file and makes the whole log durable.
func (v *Volume) Sync() error {
	if err := v.writeBackAll(); err != nil {
		return err
	}
	return v.syncLog()
}

// writeBackAll writes back every file marked dirty. A file freed meanwhile
// has no dirty state left (Release drops it), so its write-back does
// nothing.
func (v *Volume) writeBackAll() error {
	v.dirtyMu.Lock()
	files := v.dirty
	v.dirty = nil
	v.dirtyMu.Unlock()
	var first error
	for ino, fd := range maps.All(files) {
		fd.mu.Lock()
		v.mu.RLock()
		n := v.inodes.get(ino)
		v.mu.RUnlock()
		var err error
		if n != nil && n.x != nil && n.x.data == fd {
			err = v.writeBack(ino, n, fd)
		}
		fd.mu.Unlock()
		if err != nil && first == nil {
			first = err
			v.markDirty(ino, fd) // try again at the next commit
		}
	}
	return first
}

// syncLog makes every transaction appended so far durable.
func (v *Volume) syncLog() error {
	if err := v.j.Sync(v.j.Last()); err != nil {
		return opErr("sync", "", err)
	}
	v.acct.syncs.Inc()
	return nil
}

// startCommitter starts the periodic commit: every CommitInterval it
// writes back dirty files, makes the log durable, and checkpoints once the
// log is half full.
func (v *Volume) startCommitter() {
	v.stop, v.stopped = make(chan struct{}), make(chan struct{})
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
				if err := v.commitNow(); err != nil {
					v.opts.Logger.WithError(err).Error("periodic commit failed")
				}
			}
		}
	}()
}

func (v *Volume) stopCommitter() {
	close(v.stop)
	<-v.stopped
}

// commitNow is one periodic commit.
func (v *Volume) commitNow() error {
	if err := v.Sync(); err != nil {
		return err
	}
	if used, capacity := v.j.Usage(); used*2 < capacity {
		return nil
	}
	return v.checkpointConcurrent()
}

// Fsync makes ino durable: a file's dirty data is written back first; for
// a directory (fsyncdir) the log holds everything already.
func (v *Volume) Fsync(ino Ino, datasync bool) error {
	err := v.withData(ino, func(n *inode, fd *fileData) error {
		return v.writeBack(ino, n, fd)
	})
	if err != nil && err != ErrIsDir && err != ErrInvalid {
		return opErr("fsync", "", err)
	}
	return v.syncLog()
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
