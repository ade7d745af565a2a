package fuse

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// readOnlyFS serves a mount made read-only (Options.ReadOnly): every
// change is refused with EROFS here too, not only by the kernel. The
// kernel's check ends at a remount,rw, and one that bypasses smallfs's
// helper (mount -i) would let changes reach a volume whose device the
// daemon opened read-only: they would live in memory and vanish at
// unmount, with every write having reported success.
type readOnlyFS struct{ *fileSystem }

// rawFileSystem is what the transports serve for fs.
func (fs *fileSystem) rawFileSystem() fuse.RawFileSystem {
	if fs.opts.ReadOnly {
		return readOnlyFS{fs}
	}
	return fs
}

const erofs = fuse.Status(syscall.EROFS)

func (readOnlyFS) Create(<-chan struct{}, *fuse.CreateIn, string, *fuse.CreateOut) fuse.Status {
	return erofs
}

// Open refuses only what would write: a read-only open is served.
func (r readOnlyFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if in.Flags&syscall.O_ACCMODE != syscall.O_RDONLY || in.Flags&syscall.O_TRUNC != 0 {
		return erofs
	}
	return r.fileSystem.Open(cancel, in, out)
}

func (readOnlyFS) Write(<-chan struct{}, *fuse.WriteIn, []byte) (uint32, fuse.Status) {
	return 0, erofs
}

func (readOnlyFS) Fallocate(<-chan struct{}, *fuse.FallocateIn) fuse.Status { return erofs }

func (readOnlyFS) Mknod(<-chan struct{}, *fuse.MknodIn, string, *fuse.EntryOut) fuse.Status {
	return erofs
}

func (readOnlyFS) Mkdir(<-chan struct{}, *fuse.MkdirIn, string, *fuse.EntryOut) fuse.Status {
	return erofs
}

func (readOnlyFS) Symlink(<-chan struct{}, *fuse.InHeader, string, string, *fuse.EntryOut) fuse.Status {
	return erofs
}

func (readOnlyFS) Link(<-chan struct{}, *fuse.LinkIn, string, *fuse.EntryOut) fuse.Status {
	return erofs
}

func (readOnlyFS) Unlink(<-chan struct{}, *fuse.InHeader, string) fuse.Status { return erofs }

func (readOnlyFS) Rmdir(<-chan struct{}, *fuse.InHeader, string) fuse.Status { return erofs }

func (readOnlyFS) Rename(<-chan struct{}, *fuse.RenameIn, string, string) fuse.Status {
	return erofs
}

func (readOnlyFS) SetAttr(<-chan struct{}, *fuse.SetAttrIn, *fuse.AttrOut) fuse.Status {
	return erofs
}

func (readOnlyFS) Tmpfile(<-chan struct{}, *fuse.CreateIn, *fuse.CreateOut) fuse.Status {
	return erofs
}

func (readOnlyFS) SetXAttr(<-chan struct{}, *fuse.SetXAttrIn, string, []byte) fuse.Status {
	return erofs
}

func (readOnlyFS) RemoveXAttr(<-chan struct{}, *fuse.InHeader, string) fuse.Status { return erofs }
