package fuse

import (
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
// set-group-ID when the group may execute, and drop a security.capability.
// The volume does it under its metadata lock in the same transaction as
// the change (volume.WriteKillPriv, volume.SetKillPriv), so a chmod racing
// with an unprivileged write is never undone; the adapter only passes the
// kernel's flags on.

// killPrivSetAttr adds the clearing to a SETATTR: truncates flagged by the
// kernel, and chown, which clears privileges whoever calls it. The volume
// leaves a directory's alone.
func killPrivSetAttr(in *fuse.SetAttrIn, s *volume.SetAttrIn) {
	if in.Valid&(fuse.FATTR_KILL_SUIDGID|fuse.FATTR_UID|fuse.FATTR_GID) != 0 {
		s.Valid |= volume.SetKillPriv
	}
}

// killPrivOpen clears ino's privileges after an O_TRUNC open by a caller
// without CAP_FSETID (OPEN_KILL_SUIDGID), and returns its attributes.
func (fs *fileSystem) killPrivOpen(ctx volume.Context, ino volume.Ino) (volume.Attr, error) {
	return fs.vol.SetAttr(ctx, ino, volume.SetAttrIn{Valid: volume.SetKillPriv})
}
