package fuse

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/fs/volume"
)

// openFlags chooses the kernel's caching for a new open file. The page
// cache is kept across opens because nothing but this mount changes the
// file. close(2) sends no FLUSH unless FlushOnClose asks for write-back
// there; a read-only open never needs one: it has nothing to write, so
// the round trip could only ever answer OK.
func (fs *fileSystem) openFlags(flags uint32) uint32 {
	var f uint32
	if !fs.opts.DropCache {
		f |= fuse.FOPEN_KEEP_CACHE
	}
	if !fs.opts.FlushOnClose || flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		f |= fuse.FOPEN_NOFLUSH
	}
	return f
}

// Create answers ENOSYS in no-open mode: the kernel then creates with
// MKNOD and opens without a request, and sends no RELEASE at close. A
// CREATE would bring a RELEASE per file until the kernel has learnt
// no-open from its first OPEN of an existing file.
func (fs *fileSystem) Create(_ <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	start := fs.begin(opCreate)
	if fs.opts.NoOpen {
		fs.stats.end(opCreate, start, served)
		return fuse.ENOSYS
	}
	ctx := caller(&in.InHeader)
	a, h, err := fs.vol.Create(ctx, volume.Ino(in.NodeId), name, in.Mode, in.Flags)
	if err == nil && in.OpenFlags&fuse.OPEN_KILL_SUIDGID != 0 {
		// An existing file opened with O_TRUNC. The entry carries the
		// new mode, but the kernel may drop it (a write to the inode
		// under another name in flight): the notification is not
		// skipped.
		var cleared bool
		if cleared, err = fs.killPriv(a.Ino); cleared && err == nil {
			a, err = fs.vol.GetAttr(a.Ino)
		}
		if err != nil {
			h.Release()
		}
	}
	if err == nil {
		fs.setEntry(&out.EntryOut, &a)
		out.Fh = fs.files.add(h)
		out.OpenFlags = fs.openFlags(in.Flags)
	}
	return fs.done(opCreate, start, in.NodeId, err)
}

// Open answers ENOSYS in no-open mode: the kernel stops sending OPEN and
// RELEASE for the rest of the mount (see inodefiles.go).
func (fs *fileSystem) Open(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	start := fs.begin(opOpen)
	if fs.opts.NoOpen {
		fs.stats.end(opOpen, start, served)
		return fuse.ENOSYS
	}
	h, err := fs.vol.OpenFile(volume.Ino(in.NodeId), in.Flags)
	if err == nil && in.Mode&fuse.OPEN_KILL_SUIDGID != 0 {
		// O_TRUNC by a caller without CAP_FSETID.
		if _, err = fs.killPriv(volume.Ino(in.NodeId)); err != nil {
			h.Release()
		}
	}
	if err == nil {
		out.Fh = fs.files.add(h)
		out.OpenFlags = fs.openFlags(in.Flags)
	}
	return fs.done(opOpen, start, in.NodeId, err)
}

// errBadHandle answers a request naming a file handle the adapter never
// gave out or already released, which the kernel does not do.
var errBadHandle = fmt.Errorf("unknown file handle: %w", syscall.EBADF)

// Read answers from the device without copying when the range is one
// contiguous extent on a volume that does not verify reads (the kernel
// splices it from the device fd); otherwise the volume reads the bytes
// into buf, the request's reply buffer (on io_uring, the ring's payload
// buffer itself), checking them where it keeps checksums. A device range
// goes out as a devRead, which holds the range's blocks until the reply is
// written; bytes as a bytesRead.
func (fs *fileSystem) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	start := fs.begin(opRead)
	r, err := fs.acquire(in.Fh, volume.Ino(in.NodeId), false)
	if err != nil {
		return nil, fs.done(opRead, start, in.NodeId, err)
	}
	defer fs.let(r)
	// A read the kernel's page cache answers never gets here: only
	// those that reach the volume move the access time.
	fs.accessed(in.NodeId, fs.fileAtime)
	off, n := int64(in.Offset), min(int(in.Size), len(buf))
	if fs.devFd >= 0 {
		p, err := r.h.ReadPlan(off, buf[:n])
		if err != nil {
			return nil, fs.done(opRead, start, in.NodeId, err)
		}
		if p.Bytes == nil && p.Len > 0 {
			return fs.newDevRead(in.NodeId, uintptr(fs.devFd), p), fs.done(opRead, start, in.NodeId, nil)
		}
		return newBytesRead(p.Bytes), fs.done(opRead, start, in.NodeId, nil)
	}
	m, err := r.h.ReadAt(buf[:n], off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err != nil {
		return nil, fs.done(opRead, start, in.NodeId, err)
	}
	return newBytesRead(buf[:m]), fs.done(opRead, start, in.NodeId, nil)
}

func (fs *fileSystem) Write(_ <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	start := fs.begin(opWrite)
	var flags volume.WriteFlags
	if in.WriteFlags&fuse.WRITE_KILL_SUIDGID != 0 {
		flags |= volume.WriteKillPriv
	}
	r, err := fs.acquire(in.Fh, volume.Ino(in.NodeId), true)
	if err != nil {
		return 0, fs.done(opWrite, start, in.NodeId, err)
	}
	n, cleared, err := r.h.WriteAtFlags(data, int64(in.Offset), flags)
	fs.let(r)
	if cleared {
		fs.privCleared(volume.Ino(in.NodeId))
	}
	if n > 0 && n < len(data) {
		// A short write (the space ran out): the n bytes are in the file,
		// so write(2) must report them; an error reply would report none.
		// The next write, at the offset after them, gets the error.
		err = nil
	}
	return uint32(n), fs.done(opWrite, start, in.NodeId, err)
}

// Flush runs at every close(2) of a writable open file under
// FlushOnClose (other opens carry FOPEN_NOFLUSH): delayed allocation
// happens here at the latest, so I/O errors reach close(2).
// In no-open mode it answers ENOSYS, and the kernel stops sending it:
// space is reserved at write(2), which reports ENOSPC.
func (fs *fileSystem) Flush(_ <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	start := fs.begin(opFlush)
	if fs.opts.NoOpen {
		fs.stats.end(opFlush, start, served)
		return fuse.ENOSYS
	}
	h := fs.files.get(in.Fh)
	if h == nil {
		return fs.done(opFlush, start, in.NodeId, errBadHandle)
	}
	return fs.done(opFlush, start, in.NodeId, h.Flush())
}

// Release closes an open file. In no-open mode the kernel sends none for
// regular files (once it has learnt no-open it drops them, even those of
// files opened by CREATE); a RELEASE of file handle 0 closes nothing.
func (fs *fileSystem) Release(_ <-chan struct{}, in *fuse.ReleaseIn) {
	start := fs.begin(opRelease)
	var err error
	if h := fs.files.remove(in.Fh); h != nil {
		err = h.Release()
	} else if in.Fh != 0 || !fs.opts.NoOpen {
		err = errBadHandle
	}
	fs.done(opRelease, start, in.NodeId, err)
}

// Fsync serves fsync and fdatasync; FUSE_FSYNC_FDATASYNC is bit 0.
func (fs *fileSystem) Fsync(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	start := fs.begin(opFsync)
	datasync := in.FsyncFlags&1 != 0
	var err error
	if h := fs.files.get(in.Fh); h != nil {
		err = h.Fsync(datasync)
	} else {
		err = fs.vol.Fsync(volume.Ino(in.NodeId), datasync)
	}
	return fs.done(opFsync, start, in.NodeId, err)
}

// Fallocate passes the mode through: the volume serves 0, KEEP_SIZE,
// PUNCH_HOLE|KEEP_SIZE and ZERO_RANGE (volume.Fallocate). The kernel has
// checked the combination (vfs_fallocate) and drops its cached pages of a
// punched range itself once the reply says it is done. A caller without
// CAP_FSETID clears the file's privileges first, as ext4's fallocate does;
// the kernel leaves that to the adapter without flagging the request
// (killpriv.go).
func (fs *fileSystem) Fallocate(_ <-chan struct{}, in *fuse.FallocateIn) fuse.Status {
	start := fs.begin(opFallocate)
	ino := volume.Ino(in.NodeId)
	var err error
	if !callerHasFsetid(&in.InHeader) {
		_, err = fs.killPriv(ino)
	}
	if err == nil {
		err = fs.vol.Fallocate(ino, in.Mode, int64(in.Offset), int64(in.Length))
	}
	return fs.done(opFallocate, start, in.NodeId, err)
}

// Lseek serves SEEK_DATA and SEEK_HOLE; the kernel does the other whences
// itself.
func (fs *fileSystem) Lseek(_ <-chan struct{}, in *fuse.LseekIn, out *fuse.LseekOut) fuse.Status {
	start := fs.begin(opLseek)
	off, err := fs.vol.Lseek(volume.Ino(in.NodeId), int64(in.Offset), int(in.Whence))
	out.Offset = uint64(off)
	return fs.done(opLseek, start, in.NodeId, err)
}
