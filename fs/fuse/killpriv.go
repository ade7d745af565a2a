package fuse

import (
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/fs/volume"
)

// Privilege clearing (FUSE_HANDLE_KILLPRIV_V2). Without it the kernel asks
// GETXATTR "security.capability" before every write(2) to learn whether
// there is a capability to drop. With it the kernel leaves the clearing to
// the filesystem and marks an inode it has checked once (S_NOSEC), so later
// writes to a cached inode cost no extra round trip; the first write to an
// inode is still preceded by the query (measured in docs/FUSE.md).
//
// The filesystem then does what the kernel would have done: a write,
// truncate or O_TRUNC open by a caller without CAP_FSETID (the kernel flags
// those requests) and every chown of a non-directory clear set-user-ID, and
// set-group-ID when the group may execute (without group execute it marks
// mandatory locking, which is kept), and drop a security.capability.
//
// The clearing reads the mode and then sets it: two volume calls, not one
// transaction, so a chmod racing with an unprivileged write may be lost.
// An atomic form needs a SetAttr bit in the volume (see docs/FUSE.md).

// privBits returns mode's permission bits without the privileges a write or
// chown removes.
func privBits(mode uint32) uint32 {
	m := mode & 0o7777 &^ syscall.S_ISUID
	if mode&syscall.S_IXGRP != 0 {
		m &^= syscall.S_ISGID
	}
	return m
}

// killPriv clears ino's privileges as a write by an unprivileged caller
// does.
func (fs *fileSystem) killPriv(ctx volume.Context, ino volume.Ino) error {
	if err := fs.dropCapability(ino); err != nil {
		return err
	}
	a, err := fs.vol.GetAttr(ino)
	if err != nil {
		return err
	}
	if m := privBits(a.Mode); m != a.Mode&0o7777 {
		_, err = fs.vol.SetAttr(ctx, ino, volume.SetAttrIn{Valid: volume.SetMode, Mode: m})
	}
	return err
}

// dropCapability removes a file capability; only labels passed through
// (Options.SecurityLabels) can have stored one.
func (fs *fileSystem) dropCapability(ino volume.Ino) error {
	if !fs.opts.SecurityLabels {
		return nil
	}
	err := fs.vol.RemoveXattr(ino, "security.capability")
	if errors.Is(err, syscall.ENODATA) {
		return nil
	}
	return err
}

// killPrivSetAttr folds the clearing into a SETATTR: truncates flagged by
// the kernel, and chown of a non-directory, which clears privileges
// whoever calls it.
func (fs *fileSystem) killPrivSetAttr(in *fuse.SetAttrIn, s *volume.SetAttrIn) error {
	chown := in.Valid&(fuse.FATTR_UID|fuse.FATTR_GID) != 0
	if in.Valid&fuse.FATTR_KILL_SUIDGID == 0 && !chown {
		return nil
	}
	ino := volume.Ino(in.NodeId)
	a, err := fs.vol.GetAttr(ino)
	if err != nil || (chown && a.Mode&syscall.S_IFMT == syscall.S_IFDIR) {
		return err
	}
	if err := fs.dropCapability(ino); err != nil {
		return err
	}
	mode := a.Mode
	if s.Valid&volume.SetMode != 0 {
		mode = a.Mode&syscall.S_IFMT | s.Mode
	}
	if m := privBits(mode); m != mode&0o7777 {
		s.Valid |= volume.SetMode
		s.Mode = m
	}
	return nil
}
