package fuse

import (
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/fs/volume"
)

// Tmpfile serves open(2) with O_TMPFILE: an unnamed regular file in the
// directory's region, answered like CREATE with an entry (counted as one
// lookup, so FORGET frees it) and an open file. A later linkat(2) of it
// (AT_EMPTY_PATH or /proc/self/fd) arrives as LINK. Answering ENOSYS would
// make the kernel report EOPNOTSUPP for the rest of the mount.
//
// In no-open mode there is no CREATE fallback for it (MKNOD needs a name),
// so TMPFILE is served there too; its handle is kept as the inode's file
// (inodefiles.go), as the kernel sends no RELEASE once it has learnt
// no-open, and the file handle in the reply is 0.
func (fs *fileSystem) Tmpfile(_ <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	start := fs.begin(opTmpfile)
	a, h, err := fs.vol.Tmpfile(caller(&in.InHeader), volume.Ino(in.NodeId), in.Mode, in.Flags)
	if err == nil {
		fs.setEntry(&out.EntryOut, &a)
		if fs.opts.NoOpen {
			fs.keepOpen(a.Ino, h)
		} else {
			out.Fh = fs.files.add(h)
			out.OpenFlags = fs.openFlags(in.Flags)
		}
	}
	return fs.done(opTmpfile, start, in.NodeId, err)
}
