package fuse

import (
	"syscall"

	"github.com/smallfs/smallfs/fs/volume"
)

// fileRef is the volume handle a READ or WRITE uses: from the open-file
// table (f nil, own false), the inode's file in no-open mode (f set), or
// opened for this one read (own true).
type fileRef struct {
	h   *volume.Handle
	f   *inodeFile
	own bool
}

// acquire finds the handle for a request on open file fh of ino. File
// handle 0 is no-open mode's: a write uses the inode's file, opened on
// first use; a read uses it when there is one and otherwise a read-only
// handle of its own, so that reading does not make the adapter keep
// state per inode. Pair with let.
func (fs *fileSystem) acquire(fh uint64, ino volume.Ino, write bool) (fileRef, error) {
	if fh != 0 || !fs.opts.NoOpen {
		if h := fs.files.get(fh); h != nil {
			return fileRef{h: h}, nil
		}
		return fileRef{}, errBadHandle
	}
	if f := fs.inodes.get(ino); f != nil {
		return fileRef{h: f.h, f: f}, nil
	}
	if !write {
		h, err := fs.vol.OpenFile(ino, syscall.O_RDONLY)
		return fileRef{h: h, own: true}, err
	}
	h, err := fs.vol.OpenFile(ino, syscall.O_RDWR)
	if err != nil {
		return fileRef{}, err
	}
	return fs.hold(ino, h), nil
}

// hold lists h as ino's file and returns it in use, or, when another
// request listed one first, closes h and returns that one.
func (fs *fileSystem) hold(ino volume.Ino, h *volume.Handle) fileRef {
	f, spare := fs.inodes.add(ino, h)
	if spare != nil {
		fs.closeHandle(ino, spare)
	}
	return fileRef{h: f.h, f: f}
}

// let ends a request's use of r.
func (fs *fileSystem) let(r fileRef) {
	switch {
	case r.own:
		fs.closeHandle(r.h.Ino(), r.h)
	case r.f != nil:
		fs.closeInodeFiles(fs.inodes.done(r.f))
	}
}

// keepOpen lists h, the handle of a file just created, as ino's file.
func (fs *fileSystem) keepOpen(ino volume.Ino, h *volume.Handle) {
	fs.let(fs.hold(ino, h))
}

// closeInodeFiles writes back and closes files taken out of the table. A
// file whose write-back fails is listed again, outside the write-back
// queue, so that its data is not dropped: the periodic commit and fsync
// retry it, and the error is logged here because no close(2) will see it.
func (fs *fileSystem) closeInodeFiles(files []*inodeFile) {
	for _, f := range files {
		if err := f.h.Flush(); err != nil {
			fs.log.WithField("ino", f.ino).WithError(err).Error("write-back failed; the data stays for fsync and the next commit")
			if fs.inodes.park(f) {
				continue
			}
		}
		fs.closeHandle(f.ino, f.h)
	}
}

// closeHandle releases a volume handle nothing waits on; a write-back
// failure there is logged, as no close(2) will see it.
func (fs *fileSystem) closeHandle(ino volume.Ino, h *volume.Handle) {
	if err := h.Release(); err != nil {
		fs.log.WithField("ino", ino).WithError(err).Error("release")
	}
}
