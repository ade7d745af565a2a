package fuse

import (
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// status converts an error from the volume into the status the kernel gets.
// It is the only place errors become errnos: volume errors wrap a
// syscall.Errno (possibly under several layers of %w), which errors.As finds.
// go-fuse's own ToStatus is not used because it does not unwrap and turns
// unknown errors into ENOSYS, which makes the kernel stop sending that
// operation for the rest of the mount.
//
// EIO and errors that carry no errno are logged here, once, with the
// operation and inode: they mean a broken device or a bug, and nothing above
// this edge can report them.
func (fs *fileSystem) status(op opcode, ino uint64, err error) fuse.Status {
	if err == nil {
		return fuse.OK
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) || errno == 0 {
		fs.log.WithField("op", op.String()).WithField("ino", ino).WithError(err).
			Error("unexpected error; answering EIO")
		return fuse.EIO
	}
	if errno == syscall.EIO {
		fs.log.WithField("op", op.String()).WithField("ino", ino).WithError(err).
			Error("i/o error")
	}
	return fuse.Status(errno)
}
