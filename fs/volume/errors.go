package volume

import (
	"errors"
	"io/fs"
	"syscall"
)

// errnoError is a sentinel that unwraps to the errno the FUSE edge returns,
// so errors.Is(err, syscall.ENOENT) and errors.As(err, &errno) both work.
type errnoError struct {
	errno syscall.Errno
	what  string
}

func (e *errnoError) Error() string { return e.what }
func (e *errnoError) Unwrap() error { return e.errno }

func sentinel(errno syscall.Errno, what string) error { return &errnoError{errno, what} }

// Sentinel errors. Every error a Volume returns wraps exactly one of them.
var (
	// ErrNotFound is returned when a name, inode, xattr-less lookup target or
	// handle's inode does not exist (ENOENT).
	ErrNotFound = sentinel(syscall.ENOENT, "no such file or directory")
	// ErrExist is returned when a name to be created already exists (EEXIST).
	ErrExist = sentinel(syscall.EEXIST, "file exists")
	// ErrNotDir is returned when a directory was required and the inode is
	// not one (ENOTDIR).
	ErrNotDir = sentinel(syscall.ENOTDIR, "not a directory")
	// ErrIsDir is returned when a non-directory was required and the inode is
	// a directory (EISDIR).
	ErrIsDir = sentinel(syscall.EISDIR, "is a directory")
	// ErrNotEmpty is returned when removing or replacing a directory that
	// still has entries (ENOTEMPTY).
	ErrNotEmpty = sentinel(syscall.ENOTEMPTY, "directory not empty")
	// ErrInvalid is returned when an argument is malformed: a bad name, bad
	// flags, a directory moved below itself, an xattr namespace prefix
	// without a name after it (EINVAL).
	ErrInvalid = sentinel(syscall.EINVAL, "invalid argument")
	// ErrNameTooLong is returned when a name exceeds MaxNameLen bytes or a
	// symlink target exceeds MaxSymlinkLen bytes (ENAMETOOLONG).
	ErrNameTooLong = sentinel(syscall.ENAMETOOLONG, "file name too long")
	// ErrLoop is returned when opening a symlink as a file, as open(2) does
	// with O_NOFOLLOW (ELOOP).
	ErrLoop = sentinel(syscall.ELOOP, "too many levels of symbolic links")
	// ErrTooManyLinks is returned when a link would push an inode's link
	// count past MaxLinks (EMLINK).
	ErrTooManyLinks = sentinel(syscall.EMLINK, "too many links")
	// ErrPerm is returned when an operation is not permitted whatever the
	// mode bits: hard links to directories, the sticky-bit rule (EPERM).
	ErrPerm = sentinel(syscall.EPERM, "operation not permitted")
	// ErrNoData is returned when an extended attribute does not exist
	// (ENODATA).
	ErrNoData = sentinel(syscall.ENODATA, "no such attribute")
	// ErrRange is returned when an xattr name is empty or longer than
	// MaxXattrNameLen (ERANGE).
	ErrRange = sentinel(syscall.ERANGE, "attribute name out of range")
	// ErrTooBig is returned when an xattr value exceeds MaxXattrValueLen
	// (E2BIG).
	ErrTooBig = sentinel(syscall.E2BIG, "attribute value too large")
	// ErrNoSpace is returned when the device, the inode table or an inode's
	// xattr space is full (ENOSPC). The volume stays consistent and accepts
	// writes again once space is freed.
	ErrNoSpace = sentinel(syscall.ENOSPC, "no space left on device")
	// ErrFileTooBig is returned when a write or truncate goes past MaxFileSize
	// (EFBIG).
	ErrFileTooBig = sentinel(syscall.EFBIG, "file too large")
	// ErrNotSupported is returned for flags or modes the volume does not
	// implement, and for xattr names in no namespace the kernel knows
	// (EOPNOTSUPP).
	ErrNotSupported = sentinel(syscall.EOPNOTSUPP, "operation not supported")
	// ErrNoOffset is returned by Lseek when no data or hole lies at or
	// after the offset (ENXIO).
	ErrNoOffset = sentinel(syscall.ENXIO, "no such offset")
	// ErrBadHandle is returned when a released handle is used or a handle
	// lacks the access mode an operation needs (EBADF).
	ErrBadHandle = sentinel(syscall.EBADF, "bad file handle")
	// ErrClosed is returned by every call on a volume after Close (EIO).
	ErrClosed = sentinel(syscall.EIO, "volume is closed")
	// ErrCorrupt is returned when on-disk metadata is inconsistent: it tells a
	// bad disk apart from a bad call (EIO). Open refuses such a volume.
	ErrCorrupt = sentinel(syscall.EIO, "volume is corrupt")
	// ErrReadOnly is returned by every change once a device error writing
	// metadata, or a logged transaction that did not apply, has stopped
	// the volume (Volume.Failed): EROFS, as a
	// filesystem the kernel remounted read-only after an error.
	ErrReadOnly = sentinel(syscall.EROFS, "read-only file system: an error stopped the volume")
	// ErrNotDurable is returned by Fsync, Sync and write-back once the
	// volume has stopped (ErrReadOnly): nothing can be
	// made durable any more, data written before included (EIO).
	ErrNotDurable = sentinel(syscall.EIO, "input/output error: an error stopped the volume")
	// ErrLost is returned by Fsync of a file whose data a failed
	// write-back could neither write nor keep (a map refused at the last
	// close), until the file is emptied or removed (EIO): no fsync says
	// that data is durable.
	ErrLost = sentinel(syscall.EIO, "input/output error: data written to the file was lost")
	// ErrChecksum is returned, in a *ChecksumError, by a read of file data
	// whose bytes on the device do not match their checksum: damaged data
	// (EIO). Only that read fails; the volume goes on.
	ErrChecksum = sentinel(syscall.EIO, "data checksum mismatch")
	// ErrNoChecksums is returned by Scrub on a volume without block
	// checksums (format.FeatureBlockSums): there is nothing to check data
	// against (EOPNOTSUPP).
	ErrNoChecksums = sentinel(syscall.EOPNOTSUPP, "the volume keeps no checksums of file data")
)

// opErr adds the operation and name to a sentinel, as *fs.PathError does for
// the os package: one small allocation, no formatting until Error is called.
func opErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// IsCorrupt reports whether err says the volume's metadata is inconsistent.
func IsCorrupt(err error) bool { return errors.Is(err, ErrCorrupt) }
