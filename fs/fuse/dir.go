package fuse

import (
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/fs/volume"
)

// Directory offsets. The volume lists only real entries, with cookies from
// 3 up; the adapter adds "." at 1 and ".." at 2. An offset is the cookie of
// the entry before, so listing from offset c continues after c.
const (
	dotCookie    = 1
	dotdotCookie = 2
)

// dirListing is an open directory: where its listing ends. end is the
// cookie the directory gave its next entry when the listing started (its
// first READDIR, or one from offset 0 after a rewinddir), 0 before that;
// entries added later are not listed. Without the bound a name removed
// and added again behind the reader (a new cookie) would be listed
// twice, and a listing under constant churn would not end. btrfs bounds
// its listings the same way (the directory's last index at opendir).
type dirListing struct {
	end atomic.Uint64
}

func (fs *fileSystem) OpenDir(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	start := fs.begin(opOpenDir)
	out.Fh = fs.dirs.add(new(dirListing))
	return fs.done(opOpenDir, start, in.NodeId, nil)
}

func (fs *fileSystem) ReleaseDir(in *fuse.ReleaseIn) {
	start := fs.begin(opReleaseDir)
	fs.dirs.remove(in.Fh)
	fs.stats.end(opReleaseDir, start, served)
}

// listingEnd returns the bound of the listing READDIR in continues,
// fixing it when the listing starts, which also counts as an access of
// the directory; 0 (no bound) for a handle the adapter did not give.
func (fs *fileSystem) listingEnd(in *fuse.ReadIn) (uint64, error) {
	l := fs.dirs.get(in.Fh)
	if l == nil {
		return 0, nil
	}
	if end := l.end.Load(); end != 0 && in.Offset != 0 {
		return end, nil
	}
	end, err := fs.vol.DirEnd(volume.Ino(in.NodeId))
	if err != nil {
		return 0, err
	}
	l.end.Store(end)
	fs.accessed(in.NodeId, fs.dirAtime) // a listing starts: the directory is read
	return end, nil
}

func (fs *fileSystem) FsyncDir(_ <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	start := fs.begin(opFsyncDir)
	return fs.done(opFsyncDir, start, in.NodeId, fs.vol.Fsync(volume.Ino(in.NodeId), in.FsyncFlags&1 != 0))
}

// dots adds "." and ".." when the listing starts before them and reports
// whether both fitted.
func (fs *fileSystem) dots(in *fuse.ReadIn, add func(fuse.DirEntry) bool) bool {
	if in.Offset < dotCookie && !add(fuse.DirEntry{Name: ".", Ino: in.NodeId, Mode: syscall.S_IFDIR, Off: dotCookie}) {
		return false
	}
	if in.Offset < dotdotCookie && !add(fuse.DirEntry{Name: "..", Ino: fs.parent(in), Mode: syscall.S_IFDIR, Off: dotdotCookie}) {
		return false
	}
	return true
}

// parent returns the inode number of the listed directory's parent for
// the ".." entry (0, shown as unknown, if it vanished meanwhile).
func (fs *fileSystem) parent(in *fuse.ReadIn) uint64 {
	p, err := fs.vol.Parent(volume.Ino(in.NodeId))
	if err != nil {
		return 0
	}
	return uint64(p)
}

func (fs *fileSystem) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	start := fs.begin(opReadDir)
	if !fs.dots(in, out.AddDirEntry) {
		return fs.done(opReadDir, start, in.NodeId, nil)
	}
	end, err := fs.listingEnd(in)
	if err == nil {
		err = fs.vol.ReadDir(volume.Ino(in.NodeId), in.Offset, end, func(e volume.DirEntry) bool {
			return out.AddDirEntry(fuse.DirEntry{Name: e.Name, Ino: uint64(e.Ino), Mode: e.Mode, Off: e.Cookie})
		})
	}
	return fs.done(opReadDir, start, in.NodeId, err)
}

// ReadDirPlus lists like ReadDir and adds each entry's attributes, so the
// kernel needs no LOOKUP for them. The volume counts a kernel reference for
// every entry accepted here, and only for those: space is reserved in the
// reply before an entry is accepted. "." and ".." get no attributes (node
// ID 0), for which the kernel takes no reference.
func (fs *fileSystem) ReadDirPlus(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	start := fs.begin(opReadDirPlus)
	if !fs.dots(in, func(e fuse.DirEntry) bool { return out.AddDirLookupEntry(e) != nil }) {
		return fs.done(opReadDirPlus, start, in.NodeId, nil)
	}
	end, err := fs.listingEnd(in)
	if err == nil {
		err = fs.vol.ReadDirPlus(volume.Ino(in.NodeId), in.Offset, end, func(e volume.DirEntry, a volume.Attr) bool {
			eo := out.AddDirLookupEntry(fuse.DirEntry{Name: e.Name, Ino: uint64(e.Ino), Mode: e.Mode, Off: e.Cookie})
			if eo == nil {
				return false
			}
			fs.setEntry(eo, &a)
			return true
		})
	}
	return fs.done(opReadDirPlus, start, in.NodeId, err)
}
