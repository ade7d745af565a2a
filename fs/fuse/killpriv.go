package fuse

import (
	"bytes"
	"os"
	"strconv"
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
// those requests), a fallocate by such a caller (not flagged: the adapter
// decides, see callerHasFsetid) and every chown of a non-directory clear
// set-user-ID, and set-group-ID when the group may execute, and drop a
// security.capability. The volume does it under its metadata lock in the
// same transaction as the change or just before it (volume.WriteKillPriv,
// volume.SetKillPriv, Volume.KillPriv), so a chmod racing with an
// unprivileged write is never undone.
//
// The kernel caches the mode for the attribute timeout and does not learn
// of the clearing by itself: after a WRITE, an O_TRUNC OPEN or a
// FALLOCATE it marks only times and size stale, and exec takes the
// set-user-ID bit from the cached mode. So when the volume cleared
// something on a request whose reply carries no attributes, the adapter
// sends FUSE_NOTIFY_INVAL_INODE (attributes only) before it replies: once
// the caller's call returns, every stat, access and exec of the inode,
// under any of its names, fetches the new mode. A SETATTR (truncate,
// chown) needs none: its reply carries the attributes, which the kernel
// applies whatever it holds. The notification costs one write(2) to
// /dev/fuse, also when requests come through io_uring, and only when
// something was cleared.

// inodeNotifier is what the adapter tells the kernel through: go-fuse's
// server (fuse.Server.InodeNotify), handed over by Init.
type inodeNotifier interface {
	InodeNotify(node uint64, off, length int64) fuse.Status
}

// Init is called by go-fuse once INIT is answered, before any other
// request is served.
func (fs *fileSystem) Init(srv *fuse.Server) { fs.notifier = srv }

// killPrivSetAttr adds the clearing to a SETATTR: truncates flagged by the
// kernel, and chown, which clears privileges whoever calls it. The volume
// leaves a directory's alone.
//
// A SETATTR that sets nothing is a request to clear them too. The kernel
// sends one where its own setattr carried only ATTR_KILL_SUID,
// ATTR_KILL_SGID or ATTR_KILL_PRIV, which it leaves to a HANDLE_KILLPRIV_V2
// filesystem and does not pass on: chown(f, -1, -1), which on ext4 clears
// them as any chown does, and the privilege check before a write or a
// fallocate by a caller without CAP_FSETID whose cached mode is set-id.
// Nothing else sends one (utimensat with both times UTIME_OMIT returns
// before any setattr).
func killPrivSetAttr(in *fuse.SetAttrIn, s *volume.SetAttrIn) {
	if in.Valid&(fuse.FATTR_KILL_SUIDGID|fuse.FATTR_UID|fuse.FATTR_GID) != 0 ||
		in.Valid&^(fuse.FATTR_FH|fuse.FATTR_LOCKOWNER) == 0 {
		s.Valid |= volume.SetKillPriv
	}
}

// killPriv clears ino's privileges, if it has any, for a request whose
// reply carries no attributes (an O_TRUNC open, a fallocate), and tells
// the kernel when it did.
func (fs *fileSystem) killPriv(ino volume.Ino) (bool, error) {
	cleared, err := fs.vol.KillPriv(ino)
	if cleared {
		fs.privCleared(ino)
	}
	return cleared, err
}

// privCleared makes the kernel drop its cached attributes of ino after
// the volume cleared its privileges (off -1: attributes only; the kernel
// then takes no inode or page lock, so this cannot wait on the request
// being served). ENOENT means the kernel holds no such inode: nothing to
// drop. Sent before the reply, so the caller returns to a kernel that
// knows.
func (fs *fileSystem) privCleared(ino volume.Ino) {
	if fs.notifier == nil { // not mounted (unit tests)
		return
	}
	switch st := fs.notifier.InodeNotify(uint64(ino), -1, 0); st {
	case fuse.OK, fuse.ENOENT:
	case fuse.Status(syscall.ENODEV), fuse.Status(syscall.ENOTCONN):
		// The connection is gone, and with it the cache.
	default:
		fs.log.WithField("ino", ino).WithError(syscall.Errno(st)).Error("telling the kernel that privileges were cleared")
	}
}

// capFsetid is CAP_FSETID's bit in a capability set (linux/capability.h).
const capFsetid = 4

// callerHasFsetid reports whether the caller of a request holds
// CAP_FSETID, for the requests the kernel does not flag (FALLOCATE): with
// HANDLE_KILLPRIV_V2 it neither clears privileges on a fallocate nor says
// whether the caller could keep them. It errs towards clearing: a caller
// other than uid 0 counts as without (the capability outside uid 0 is
// rare, and its holder loses bits ext4 would keep, which gives nobody
// anything); uid 0 has it when its thread's effective set in
// /proc/PID/status holds it and it is in this daemon's user namespace
// (the kernel asks the initial one). An unknown pid (0: the caller is
// outside the daemon's pid namespace) or an unreadable /proc counts as
// without. The caller waits in its system call while the daemon reads
// (the kernel lets a fatal signal end the wait only before the daemon
// has read the request), so the pid cannot have been reused.
func callerHasFsetid(h *fuse.InHeader) bool {
	if h.Uid != 0 || h.Pid == 0 {
		return false
	}
	dir := "/proc/" + strconv.FormatUint(uint64(h.Pid), 10)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return false
	}
	eff, ok := capEff(status)
	if !ok || eff&(1<<capFsetid) == 0 {
		return false
	}
	theirs, err := os.Readlink(dir + "/ns/user")
	if err != nil {
		return false
	}
	ours, err := os.Readlink("/proc/self/ns/user")
	return err == nil && theirs == ours
}

// capEff returns the CapEff field of a /proc/PID/status.
func capEff(status []byte) (uint64, bool) {
	for line := range bytes.Lines(status) {
		if rest, ok := bytes.CutPrefix(line, []byte("CapEff:")); ok {
			v, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 16, 64)
			return v, err == nil
		}
	}
	return 0, false
}
