package fuse

import (
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/fs/volume"
)

func (fs *fileSystem) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	start := fs.begin(opLookup)
	a, err := fs.vol.Lookup(caller(h), volume.Ino(h.NodeId), name)
	if errors.Is(err, syscall.ENOENT) && fs.negTO != (timeout{}) {
		// A reply with node ID 0 is a negative entry the kernel caches for
		// EntryValid; a plain ENOENT would be asked again next time.
		*out = fuse.EntryOut{EntryValid: fs.negTO.sec, EntryValidNsec: fs.negTO.nsec}
		fs.stats.end(opLookup, start, absent)
		return fuse.OK
	}
	if err == nil {
		fs.setEntry(out, &a)
	}
	return fs.done(opLookup, start, h.NodeId, err)
}

// Forget serves FORGET and, one by one, BATCH_FORGET (go-fuse splits it).
// The kernel forgets an inode only once no file on it is open, so in
// no-open mode the inode's file is closed here.
func (fs *fileSystem) Forget(nodeid, nlookup uint64) {
	start := fs.begin(opForget)
	if fs.inodes != nil {
		if f := fs.inodes.remove(volume.Ino(nodeid)); f != nil {
			fs.closeInodeFiles([]*inodeFile{f})
		}
	}
	fs.vol.Forget(volume.Ino(nodeid), nlookup)
	fs.stats.end(opForget, start, served)
}

func (fs *fileSystem) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	start := fs.begin(opGetAttr)
	a, err := fs.vol.GetAttr(volume.Ino(in.NodeId))
	if err == nil {
		fs.setAttrOut(out, &a)
	}
	return fs.done(opGetAttr, start, in.NodeId, err)
}

func (fs *fileSystem) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	start := fs.begin(opSetAttr)
	s := setAttrIn(in)
	killPrivSetAttr(in, &s)
	a, err := fs.vol.SetAttr(caller(&in.InHeader), volume.Ino(in.NodeId), s)
	if err == nil {
		fs.setAttrOut(out, &a)
	}
	return fs.done(opSetAttr, start, in.NodeId, err)
}

// setAttrIn translates the kernel's SETATTR into the volume's. FATTR_FH and
// FATTR_LOCKOWNER only say which open file asked; FATTR_CTIME comes only
// with the writeback cache, which smallfs does not negotiate;
// FATTR_KILL_SUIDGID is killPrivSetAttr's.
func setAttrIn(in *fuse.SetAttrIn) volume.SetAttrIn {
	var s volume.SetAttrIn
	v := in.Valid
	if v&fuse.FATTR_MODE != 0 {
		s.Valid |= volume.SetMode
		s.Mode = in.Mode & 07777
	}
	if v&fuse.FATTR_UID != 0 {
		s.Valid |= volume.SetUID
		s.UID = in.Uid
	}
	if v&fuse.FATTR_GID != 0 {
		s.Valid |= volume.SetGID
		s.GID = in.Gid
	}
	if v&fuse.FATTR_SIZE != 0 {
		s.Valid |= volume.SetSize
		s.Size = in.Size
	}
	switch {
	case v&fuse.FATTR_ATIME_NOW != 0:
		s.Valid |= volume.SetAtimeNow
	case v&fuse.FATTR_ATIME != 0:
		s.Valid |= volume.SetAtime
		s.Atime = joinTime(in.Atime, in.Atimensec)
	}
	switch {
	case v&fuse.FATTR_MTIME_NOW != 0:
		s.Valid |= volume.SetMtimeNow
	case v&fuse.FATTR_MTIME != 0:
		s.Valid |= volume.SetMtime
		s.Mtime = joinTime(in.Mtime, in.Mtimensec)
	}
	return s
}

// Access answers access(2) when the kernel asks, which it does only without
// default_permissions. It checks the owner, group and other bits against
// the caller's uid and primary gid; root passes everything but execute on a
// file with no execute bit at all, as in the kernel's own check.
func (fs *fileSystem) Access(_ <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	start := fs.begin(opAccess)
	a, err := fs.vol.GetAttr(volume.Ino(in.NodeId))
	if err == nil && !permitted(&a, in.Uid, in.Gid, in.Mask&7) {
		err = syscall.EACCES
	}
	return fs.done(opAccess, start, in.NodeId, err)
}

func permitted(a *volume.Attr, uid, gid, mask uint32) bool {
	if uid == 0 {
		return mask&1 == 0 || a.Mode&0o111 != 0 || a.Mode&syscall.S_IFMT == syscall.S_IFDIR
	}
	perm := a.Mode & 7
	switch {
	case uid == a.UID:
		perm = a.Mode >> 6 & 7
	case gid == a.GID:
		perm = a.Mode >> 3 & 7
	}
	return mask&^perm == 0
}

func (fs *fileSystem) StatFs(_ <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	start := fs.begin(opStatFs)
	s := fs.vol.StatFS()
	*out = fuse.StatfsOut{
		Blocks:  s.Blocks,
		Bfree:   s.BlocksFree,
		Bavail:  s.BlocksAvail,
		Files:   s.Files,
		Ffree:   s.FilesFree,
		Bsize:   s.BlockSize,
		Frsize:  s.BlockSize,
		NameLen: s.NameMax,
	}
	return fs.done(opStatFs, start, h.NodeId, nil)
}
