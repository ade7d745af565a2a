package volume

import (
	"errors"
	"io"
	"sync/atomic"
	"syscall"
)

// Handle is an open regular file. Its methods are safe for concurrent use;
// all handles of an inode share one fileData, so a read through one sees
// writes through another at once.
type Handle struct {
	v      *Volume
	ino    Ino
	n      *inode // stays valid: an open inode is never freed
	fd     *fileData
	read   bool
	write  bool
	closed atomic.Bool
}

// OpenFile opens regular file ino. flags are open(2)'s: the access mode,
// and O_TRUNC, which empties the file when it is opened for writing.
// Directories give EISDIR, symlinks ELOOP (as O_NOFOLLOW), other special
// files EINVAL (the kernel serves those itself).
func (v *Volume) OpenFile(ino Ino, flags uint32) (*Handle, error) {
	v.mu.Lock()
	h, err := v.open(ino, 0, flags)
	v.mu.Unlock()
	if err != nil {
		return nil, opErr("open", "", err)
	}
	if flags&syscall.O_TRUNC != 0 && h.write {
		if err := h.truncate(0); err != nil {
			h.Release()
			return nil, opErr("open", "", err)
		}
	}
	return h, nil
}

// Create makes regular file name in parent and opens it. If name exists
// the call fails with EEXIST under O_EXCL, and otherwise opens the
// existing file (with O_TRUNC applied) as open(2) with O_CREAT does.
func (v *Volume) Create(ctx Context, parent Ino, name string, mode uint32, flags uint32) (Attr, *Handle, error) {
	v.mu.Lock()
	ino, n, err := v.newChild(ctx, parent, name, syscall.S_IFREG|mode&^syscall.S_IFMT, 0)
	if errors.Is(err, ErrExist) && flags&syscall.O_EXCL == 0 {
		return v.openExisting(parent, name, flags)
	}
	if err != nil {
		v.mu.Unlock()
		return Attr{}, nil, opErr("create", name, err)
	}
	h, err := v.open(ino, parent, flags)
	a := v.attr(ino, n)
	v.mu.Unlock()
	if err != nil {
		return Attr{}, nil, opErr("create", name, err)
	}
	return a, h, nil
}

// openExisting is Create over an existing name: it opens the inode the
// name holds under the metadata lock (v.mu, held for writing, which it
// releases), so the handle is on that inode whatever happens to the name
// next, then applies O_TRUNC and counts the entry as Lookup does. On
// error no handle is left open.
func (v *Volume) openExisting(parent Ino, name string, flags uint32) (Attr, *Handle, error) {
	r, _ := v.inodes.get(parent).dirOf().lookup(name)
	h, err := v.open(r.ino, 0, flags)
	v.mu.Unlock()
	if err != nil {
		return Attr{}, nil, opErr("open", name, err)
	}
	if testHookOpenExisting != nil {
		testHookOpenExisting()
	}
	if flags&syscall.O_TRUNC != 0 && h.write {
		if err := h.truncate(0); err != nil {
			h.Release()
			return Attr{}, nil, opErr("open", name, err)
		}
	}
	v.mu.RLock()
	v.ref(h.n) // the open pins the inode: it is still live
	a := v.attr(h.ino, h.n)
	v.mu.RUnlock()
	return a, h, nil
}

// testHookOpenExisting, when set (tests), runs in Create over an existing
// name once the metadata lock is dropped.
var testHookOpenExisting func()

// open makes a handle on ino; home is the directory placing new data, 0 if
// unknown (v.mu held for writing).
func (v *Volume) open(ino, home Ino, flags uint32) (*Handle, error) {
	n, err := v.live(ino)
	if err != nil {
		return nil, err
	}
	switch {
	case n.isDir():
		return nil, ErrIsDir
	case n.isLink():
		return nil, ErrLoop
	case !n.isReg():
		return nil, ErrInvalid
	}
	if err := damagedData(ino, n); err != nil {
		return nil, err
	}
	acc := flags & syscall.O_ACCMODE
	if acc != syscall.O_RDONLY {
		if err := v.refuseChange(); err != nil { // as open(2) on a read-only mount
			return nil, err
		}
		if err := v.frozenErr(); err != nil {
			return nil, err
		}
	}
	h := &Handle{v: v, ino: ino, n: n, read: acc != syscall.O_WRONLY, write: acc != syscall.O_RDONLY}
	h.fd = v.attach(n, home)
	n.opens++
	if h.write {
		h.fd.writers.Add(1)
	}
	return h, nil
}

// Ino returns the inode the handle is open on.
func (h *Handle) Ino() Ino { return h.ino }

// ReadAt reads from the file at off. Holes read as zeros; at the end of
// the file it returns fewer bytes and io.EOF, as io.ReaderAt does.
func (h *Handle) ReadAt(p []byte, off int64) (int, error) {
	if h.closed.Load() || !h.read {
		return 0, opErr("read", "", ErrBadHandle)
	}
	if off < 0 {
		return 0, opErr("read", "", ErrInvalid)
	}
	h.fd.mu.RLock()
	defer h.fd.mu.RUnlock()
	size := h.fd.size.Load()
	if uint64(off) >= size {
		return 0, io.EOF
	}
	k := min(uint64(len(p)), size-uint64(off))
	if err := h.v.readAt(h.n, h.fd, p[:k], uint64(off)); err != nil {
		return 0, h.v.reportChecksum(h.ino, err)
	}
	if k < uint64(len(p)) {
		return int(k), io.EOF
	}
	return int(k), nil
}

// ReadPlan says how to answer a read of len(p) bytes at off without
// copying when it can: one contiguous device range when the bytes are
// committed in one extent on a volume that does not verify reads, else the
// bytes themselves, read into p (inline data, dirty data, holes, verified
// blocks, or a mix): Bytes is then p[:k]. p is the caller's, the reply
// buffer it will send, so a read copied into memory needs no buffer of its
// own. Short at the end of the file; Len 0 and no Bytes at or past it. The
// device range is read after the call returns, with no lock held: its
// blocks are pinned (readpin.go) until the caller calls the plan's Done.
func (h *Handle) ReadPlan(off int64, p []byte) (ReadPlan, error) {
	if h.closed.Load() || !h.read {
		return ReadPlan{}, opErr("read", "", ErrBadHandle)
	}
	if off < 0 {
		return ReadPlan{}, opErr("read", "", ErrInvalid)
	}
	n := len(p)
	h.fd.mu.RLock()
	defer h.fd.mu.RUnlock()
	size := h.fd.size.Load()
	if uint64(off) >= size {
		return ReadPlan{}, nil
	}
	k := min(uint64(n), size-uint64(off))
	if p, ok := h.v.devRange(h.n, h.fd, uint64(off), k); ok {
		// Pinned before the data lock goes: a free of these blocks
		// needs the lock for writing, so it comes after the pin.
		p.gate, p.pin = h.v.space, h.v.space.pinRead(h.ino)
		h.v.ra.read(p.DevOff, int64(p.Len), off == 0)
		return p, nil
	}
	b := p[:k]
	if err := h.v.readAt(h.n, h.fd, b, uint64(off)); err != nil {
		return ReadPlan{}, h.v.reportChecksum(h.ino, err)
	}
	return ReadPlan{Bytes: b}, nil
}

// devRange returns the device range of file bytes [off, off+k) if they are
// committed, not dirty, and in one extent, on a volume whose reads need
// no verifying: a range read after the call returns cannot be checked.
func (v *Volume) devRange(n *inode, fd *fileData, off, k uint64) (ReadPlan, bool) {
	if v.sums != nil {
		return ReadPlan{}, false
	}
	cs, bs := v.chunkSize(), uint64(v.blockSize)
	for c := off / cs; c*cs < off+k; c++ {
		if _, dirty := fd.chunks[c]; dirty {
			return ReadPlan{}, false
		}
	}
	if n.x.inline != nil {
		return ReadPlan{}, false
	}
	e, ok := n.findExtent(off / bs)
	if !ok || (e.Logical+e.Len)*bs < off+k {
		return ReadPlan{}, false
	}
	return ReadPlan{DevOff: int64(e.Physical*bs + off - e.Logical*bs), Len: int(k)}, true
}

// WriteAt writes p at off, extending the file as needed. The data is
// buffered; blocks are allocated at write-back (Flush, Release, Fsync, the
// periodic commit, once the inode holds Options.DirtyThreshold dirty
// bytes, or by the background write-back: see Options.DirtyLimit). A
// writer finding the volume at DirtyLimit waits for the background
// write-back first. ENOSPC is reported here, when the blocks cannot be
// promised; a write that meets the end of the space is short: it returns
// the bytes that fit (whole blocks) with ENOSPC, and the file grows by
// those only.
func (h *Handle) WriteAt(p []byte, off int64) (int, error) {
	n, _, err := h.WriteAtFlags(p, off, 0)
	return n, err
}

// WriteAtFlags is WriteAt with flags: WriteKillPriv clears the file's
// privileges (set-user-ID, set-group-ID when group-executable, a file
// capability) in one transaction under the metadata lock before the data
// is written, as the kernel does for a writer without CAP_FSETID; a file
// without privileges costs a read lock. cleared reports whether there was
// anything to clear, also when the write then fails: the caller tells
// the kernel, whose cached mode still has the bits. A write of nothing
// clears nothing.
func (h *Handle) WriteAtFlags(p []byte, off int64, flags WriteFlags) (n int, cleared bool, err error) {
	if h.closed.Load() || !h.write {
		return 0, false, opErr("write", "", ErrBadHandle)
	}
	if off < 0 {
		return 0, false, opErr("write", "", ErrInvalid)
	}
	if uint64(off)+uint64(len(p)) > MaxFileSize {
		return 0, false, opErr("write", "", ErrFileTooBig)
	}
	if len(p) == 0 {
		return 0, false, nil
	}
	v, fd := h.v, h.fd
	if err := v.refuseChange(); err != nil {
		return 0, false, opErr("write", "", err)
	}
	v.throttle() // before fd.mu: the write-back it waits for may need it
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if flags&WriteKillPriv != 0 {
		if cleared, err = v.killPrivNow(h.ino, h.n); err != nil {
			return 0, cleared, opErr("write", "", err)
		}
	}
	n, err = h.writeLocked(p, off)
	return n, cleared, v.reportChecksum(h.ino, err) // a partial block is read first
}

// writeLocked is WriteAtFlags after the clearing (fd.mu held).
func (h *Handle) writeLocked(p []byte, off int64) (int, error) {
	v, fd := h.v, h.fd
	n, err := v.writeSpace(h.n, fd, p, uint64(off))
	if n > 0 {
		fd.mtime.Store(v.now())
		fd.ahead.Store(true)
	}
	if n > 0 || len(fd.chunks) > 0 { // a refused write may have made the old last block dirty (growing)
		v.markDirty(h.ino, fd)
		v.kickFlusher()
	}
	if err != nil {
		return n, opErr("write", "", err)
	}
	if fd.dirty >= v.opts.DirtyThreshold {
		return n, v.writeBack(h.ino, h.n, fd)
	}
	return n, nil
}

// writeSpace is write that, on ENOSPC with frees waiting for a commit,
// commits once and retries: space freed by deletes becomes usable; then,
// if the log holds anything, checkpoints once and retries.
func (v *Volume) writeSpace(n *inode, fd *fileData, p []byte, off uint64) (int, error) {
	k, err := v.write(n, fd, p, off)
	if errors.Is(err, ErrNoSpace) && v.space.hasPending() {
		if serr := v.settleFrees(); serr != nil {
			return k, serr
		}
		var k2 int
		k2, err = v.write(n, fd, p[k:], off+uint64(k))
		k += k2
	}
	if errors.Is(err, ErrNoSpace) && v.logUsed() > 0 {
		// The checkpoint headroom counts the log since the newest
		// checkpoint; a checkpoint settles it to the metadata's size.
		v.mu.Lock()
		cerr := v.roomCheckpoint()
		v.mu.Unlock()
		if cerr != nil {
			return k, err
		}
		var k2 int
		k2, err = v.write(n, fd, p[k:], off+uint64(k))
		k += k2
	}
	return k, err
}

// Flush is called at each close(2) of the file: the last writer's flush
// writes the data back (delayed allocation happens here at the latest).
func (h *Handle) Flush() error {
	if h.closed.Load() {
		return opErr("flush", "", ErrBadHandle)
	}
	if !h.write {
		return nil
	}
	h.fd.mu.Lock()
	defer h.fd.mu.Unlock()
	if h.fd.writers.Load() > 1 {
		return nil
	}
	return h.v.writeBack(h.ino, h.n, h.fd)
}

// Fsync makes the file's data and attributes durable (datasync: the data
// and the size; here both cost the same). It fails while data written to
// the file before was lost (ErrLost, see Release).
func (h *Handle) Fsync(datasync bool) error {
	if h.closed.Load() {
		return opErr("fsync", "", ErrBadHandle)
	}
	h.fd.mu.Lock()
	err := h.v.fsyncWriteBack(h.ino, h.n, h.fd)
	h.fd.mu.Unlock()
	if err != nil {
		return err
	}
	if err := h.v.syncLog(); err != nil {
		return err
	}
	return h.v.lost(h.ino)
}

// Release closes the handle. The last writer writes the data back; the
// last handle of an unlinked file frees it. Using the handle afterwards
// gives EBADF.
func (h *Handle) Release() error {
	if h.closed.Swap(true) {
		return opErr("release", "", ErrBadHandle)
	}
	v, fd := h.v, h.fd
	fd.mu.Lock()
	defer fd.mu.Unlock()
	var err error
	if h.write {
		last := fd.writers.Add(-1) == 0
		v.mu.RLock()
		linked := h.n.nlink > 0
		v.mu.RUnlock()
		if last && linked {
			err = v.writeBack(h.ino, h.n, fd)
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil && !errors.Is(err, ErrNoSpace) && h.n.nlink > 0 && !fd.pinned {
		// The kernel sends RELEASE after close(2) has returned: nobody
		// hears this error. Keep the data and this open of the inode
		// for the commit to retry; an fsync meanwhile reports it. A
		// refused map (ErrNoSpace: free space too fragmented for the
		// file) would fail the same way again: it is dropped below.
		fd.pinned = true
		v.markDirty(h.ino, fd)
		return err
	}
	h.n.opens--
	if h.n.opens == 0 {
		if err != nil || h.n.nlink == 0 { // nothing will write it back now
			if err != nil && h.n.nlink > 0 {
				h.n.flags |= inodeLost // no later fsync may succeed
			}
			v.dropDirty(fd)
			fd.ahead.Store(false)
		}
		v.detach(h.n)
		v.freeIfUnused(h.ino, h.n)
	}
	return err
}

// truncate sets the file size through the handle's data.
func (h *Handle) truncate(size uint64) error {
	h.fd.mu.Lock()
	defer h.fd.mu.Unlock()
	return h.v.resize(h.ino, h.n, h.fd, size)
}

// resize cuts or extends the file to size and commits it (fd.mu held).
func (v *Volume) resize(ino Ino, n *inode, fd *fileData, size uint64) error {
	if err := v.refuseChange(); err != nil {
		return err
	}
	if size < fd.size.Load() {
		v.truncateDirty(fd, size)
	} else if err := v.extendTo(n, fd, size); err != nil {
		return err
	}
	fd.mtime.Store(v.now())
	fd.ahead.Store(true)
	return v.writeBack(ino, n, fd)
}
