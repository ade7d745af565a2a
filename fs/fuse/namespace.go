package fuse

import (
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/fs/volume"
)

// entryDone finishes a request that created or found a name: on success the
// reply carries the inode, and the volume has counted the kernel's new
// reference to it.
func (fs *fileSystem) entryDone(op opcode, start time.Time, parent uint64, out *fuse.EntryOut, a volume.Attr, err error) fuse.Status {
	if err == nil {
		fs.setEntry(out, &a)
	}
	return fs.done(op, start, parent, err)
}

// Mknod makes special files, and in no-open mode the regular files of
// open(O_CREAT) too (CREATE answers ENOSYS there): a regular file is then
// created open, so that its data is placed near its directory, and kept
// as the inode's file (inodefiles.go).
func (fs *fileSystem) Mknod(_ <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	start := fs.begin(opMknod)
	ctx, parent := caller(&in.InHeader), volume.Ino(in.NodeId)
	if fs.opts.NoOpen && in.Mode&syscall.S_IFMT == syscall.S_IFREG {
		a, h, err := fs.vol.Create(ctx, parent, name, in.Mode&^syscall.S_IFMT, syscall.O_RDWR|syscall.O_EXCL)
		if err == nil {
			fs.keepOpen(a.Ino, h)
		}
		return fs.entryDone(opMknod, start, in.NodeId, out, a, err)
	}
	a, err := fs.vol.Mknod(ctx, parent, name, in.Mode, in.Rdev)
	return fs.entryDone(opMknod, start, in.NodeId, out, a, err)
}

func (fs *fileSystem) Mkdir(_ <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	start := fs.begin(opMkdir)
	a, err := fs.vol.Mkdir(caller(&in.InHeader), volume.Ino(in.NodeId), name, in.Mode)
	return fs.entryDone(opMkdir, start, in.NodeId, out, a, err)
}

func (fs *fileSystem) Symlink(_ <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	start := fs.begin(opSymlink)
	a, err := fs.vol.Symlink(caller(h), volume.Ino(h.NodeId), name, target)
	return fs.entryDone(opSymlink, start, h.NodeId, out, a, err)
}

func (fs *fileSystem) Link(_ <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	start := fs.begin(opLink)
	a, err := fs.vol.Link(caller(&in.InHeader), volume.Ino(in.Oldnodeid), volume.Ino(in.NodeId), name)
	return fs.entryDone(opLink, start, in.NodeId, out, a, err)
}

func (fs *fileSystem) Unlink(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	start := fs.begin(opUnlink)
	return fs.done(opUnlink, start, h.NodeId, fs.vol.Unlink(caller(h), volume.Ino(h.NodeId), name))
}

func (fs *fileSystem) Rmdir(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	start := fs.begin(opRmdir)
	return fs.done(opRmdir, start, h.NodeId, fs.vol.Rmdir(caller(h), volume.Ino(h.NodeId), name))
}

// opcodeRename2 is FUSE_RENAME2, the kernel's rename with flags.
const opcodeRename2 = 45

// Rename serves RENAME and RENAME2. Only RENAME2 carries flags
// (RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT, which overlayfs
// needs in its upper layer): the kernel sends a plain rename as
// RENAME, whose shorter input go-fuse still presents as a RenameIn, with
// Flags overlapping the first name's bytes.
func (fs *fileSystem) Rename(_ <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	start := fs.begin(opRename)
	var flags uint32
	if in.Opcode == opcodeRename2 {
		flags = in.Flags
	}
	err := fs.vol.Rename(caller(&in.InHeader), volume.Ino(in.NodeId), oldName, volume.Ino(in.Newdir), newName, flags)
	return fs.done(opRename, start, in.NodeId, err)
}

func (fs *fileSystem) Readlink(_ <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	start := fs.begin(opReadlink)
	target, err := fs.vol.Readlink(volume.Ino(h.NodeId))
	return []byte(target), fs.done(opReadlink, start, h.NodeId, err)
}
