package volume

import (
	"sync"
	"time"
)

// The dirty queue: every file with data or attributes to write back, in the
// order it first became dirty, and the background write-back that keeps
// the dirty memory of the whole volume bounded (see "# Dirty memory" in
// doc.go). The queue links live in fileData; Volume.dirtyMu guards them.

// dirtyLink is fileData's place in the dirty queue.
type dirtyLink struct {
	ino        Ino
	prev, next *fileData
	queued     bool
	since      int64 // when it joined the queue, Unix ns
}

// dirtyQueue is a FIFO of dirty files with O(1) removal.
type dirtyQueue struct {
	head, tail *fileData
	n          int
}

func (q *dirtyQueue) push(fd *fileData) {
	fd.q.prev, fd.q.next, fd.q.queued = q.tail, nil, true
	if q.tail != nil {
		q.tail.q.next = fd
	} else {
		q.head = fd
	}
	q.tail = fd
	q.n++
}

func (q *dirtyQueue) remove(fd *fileData) {
	if !fd.q.queued {
		return
	}
	if fd.q.prev != nil {
		fd.q.prev.q.next = fd.q.next
	} else {
		q.head = fd.q.next
	}
	if fd.q.next != nil {
		fd.q.next.q.prev = fd.q.prev
	} else {
		q.tail = fd.q.prev
	}
	fd.q.prev, fd.q.next, fd.q.queued = nil, nil, false
	q.n--
}

// markDirty queues ino's fileData for write-back unless it is queued
// already (it keeps its place: the queue is ordered by first-dirty time).
func (v *Volume) markDirty(ino Ino, fd *fileData) {
	v.dirtyMu.Lock()
	if !fd.q.queued {
		fd.q.ino, fd.q.since = ino, v.now()
		v.dirty.push(fd)
	}
	v.dirtyMu.Unlock()
}

// unmarkDirty takes fd out of the queue (after its write-back, or when its
// dirty data is dropped).
func (v *Volume) unmarkDirty(fd *fileData) {
	v.dirtyMu.Lock()
	v.dirty.remove(fd)
	v.dirtyMu.Unlock()
}

// popDirty takes the oldest file out of the queue if the volume holds more
// dirty memory than over bytes, or if it became dirty before expired (Unix
// ns; 0: none is expired). It returns nil when neither holds.
func (v *Volume) popDirty(over int64, expired int64) (Ino, *fileData) {
	v.dirtyMu.Lock()
	defer v.dirtyMu.Unlock()
	fd := v.dirty.head
	if fd == nil || (v.dirtyMem.Load() <= over && fd.q.since >= expired) {
		return 0, nil
	}
	v.dirty.remove(fd)
	return fd.q.ino, fd
}

// DirtyBytes returns the memory held by dirty data buffers across the
// volume: what Options.DirtyLimit bounds.
func (v *Volume) DirtyBytes() int64 { return v.dirtyMem.Load() }

// writeBackAll writes back every file queued as dirty.
func (v *Volume) writeBackAll() error {
	type queued struct {
		ino Ino
		fd  *fileData
	}
	v.dirtyMu.Lock()
	files := make([]queued, 0, v.dirty.n)
	for fd := v.dirty.head; fd != nil; fd = fd.q.next {
		files = append(files, queued{fd.q.ino, fd})
	}
	for _, f := range files {
		v.dirty.remove(f.fd)
	}
	v.dirtyMu.Unlock()
	var first error
	for _, f := range files {
		if err := v.writeBackQueued(f.ino, f.fd); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// writeBackQueued writes back a file taken from the dirty queue. A file
// freed meanwhile has no dirty state left (Release drops it), so nothing
// is done for it. A failed write-back queues the file again, for the next
// commit to retry.
func (v *Volume) writeBackQueued(ino Ino, fd *fileData) error {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	v.mu.RLock()
	n := v.inodes.get(ino)
	v.mu.RUnlock()
	if n == nil || n.x == nil || n.x.data != fd {
		return nil
	}
	if fd.pinned && v.dropOrphan(ino, n, fd) {
		return nil
	}
	// Release cannot finish while fd.mu is held, and dirty data means a
	// handle or withData holds the inode: n stays valid.
	err := v.writeBack(ino, n, fd)
	if err != nil {
		v.markDirty(ino, fd)
	}
	return err
}

// dropOrphan drops the dirty data of a pinned file whose last name is gone
// when the pin is its last open: nobody can read that data, so it is not
// retried on a device that may keep failing. The check and the drop are
// one step under v.mu, so no open can come between (fd.mu held).
func (v *Volume) dropOrphan(ino Ino, n *inode, fd *fileData) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if n.nlink != 0 || n.opens != 1 {
		return false
	}
	v.dropDirty(fd)
	fd.ahead.Store(false)
	v.dropPin(ino, n, fd)
	return true
}

// flusher is the background write-back's state (see doc.go, "# Dirty
// memory").
type flusher struct {
	kick    chan struct{} // a pass is wanted; capacity 1
	stop    chan struct{} // closed by Close
	stopped chan struct{} // closed when the goroutine has ended

	mu      sync.Mutex
	cond    sync.Cond // broadcast when dirty memory drops or a pass ends
	running bool      // a pass is under way
	passes  uint64    // passes ended
	ended   bool      // no pass will run any more
	waits   uint64    // writers that waited (throttled), for tests and stats
	written uint64    // files written back by passes
}

// startFlusher starts the background write-back, unless DirtyLimit is
// negative (no limit).
func (v *Volume) startFlusher() {
	wb := &v.wb
	wb.cond.L = &wb.mu
	wb.kick, wb.stop, wb.stopped = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	if v.opts.DirtyLimit < 0 {
		wb.ended = true
		close(wb.stopped)
		return
	}
	go v.flushLoop()
}

func (v *Volume) stopFlusher() {
	close(v.wb.stop)
	<-v.wb.stopped
}

func (v *Volume) flushLoop() {
	wb := &v.wb
	defer close(wb.stopped)
	var tick <-chan time.Time
	if v.opts.DirtyExpire > 0 {
		t := time.NewTicker(v.opts.DirtyExpire / 2)
		defer t.Stop()
		tick = t.C
	}
	for {
		var expired int64
		select {
		case <-wb.stop:
			wb.mu.Lock()
			wb.ended = true
			wb.cond.Broadcast()
			wb.mu.Unlock()
			return
		case <-wb.kick:
		case <-tick:
			expired = v.now() - int64(v.opts.DirtyExpire)
		}
		wb.mu.Lock()
		wb.running = true
		wb.mu.Unlock()
		v.flushPass(expired)
		wb.mu.Lock()
		wb.running = false
		wb.passes++
		wb.cond.Broadcast()
		wb.mu.Unlock()
	}
}

// flushPass writes back the oldest dirty files until the volume holds at
// most DirtyBackground bytes of dirty memory and none became dirty before
// expired. It stops at the first failure: the file is queued again, and
// the periodic commit or Close reports the error.
func (v *Volume) flushPass(expired int64) {
	for v.failed.Load() == nil { // a stopped volume writes nothing back
		ino, fd := v.popDirty(v.opts.DirtyBackground, expired)
		if fd == nil {
			return
		}
		err := v.writeBackQueued(ino, fd)
		v.wb.mu.Lock()
		if err == nil {
			v.wb.written++
		}
		v.wb.cond.Broadcast()
		v.wb.mu.Unlock()
		if err != nil {
			v.opts.Logger.WithError(err).WithField("ino", ino).Warn("background write-back failed")
			return
		}
	}
}

// kickFlusher asks for a pass if dirty memory is past the background mark.
func (v *Volume) kickFlusher() {
	if v.opts.DirtyLimit >= 0 && v.dirtyMem.Load() > v.opts.DirtyBackground {
		select {
		case v.wb.kick <- struct{}{}:
		default: // a pass is wanted already
		}
	}
}

// throttle makes a writer wait while the volume holds DirtyLimit bytes of
// dirty memory or more, until the background write-back brings it under
// or ends a whole pass that started after the call without doing so (the
// queue ran dry, or a write-back failed): a writer is paced, never stuck.
// The caller holds no lock: the pass must be able to take any file's data
// lock.
func (v *Volume) throttle() {
	if v.opts.DirtyLimit < 0 || v.dirtyMem.Load() < v.opts.DirtyLimit {
		return
	}
	wb := &v.wb
	wb.mu.Lock()
	defer wb.mu.Unlock()
	// A pass already running may have looked at the queue before this
	// writer's data got there: wait for the one after it.
	target := wb.passes + 1
	if wb.running {
		target++
	}
	v.kickFlusher()
	wb.waits++
	for v.dirtyMem.Load() >= v.opts.DirtyLimit && wb.passes < target && !wb.ended {
		wb.cond.Wait()
	}
}

// Throttled returns how many writes have waited for the background
// write-back (Options.DirtyLimit).
func (v *Volume) Throttled() uint64 {
	v.wb.mu.Lock()
	defer v.wb.mu.Unlock()
	return v.wb.waits
}
