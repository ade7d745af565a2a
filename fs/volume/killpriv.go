package volume

import (
	"syscall"

	"github.com/smallfs/smallfs/fs/format"
)

// Privilege clearing, as the kernel does on a write, truncate or chown by
// a caller without CAP_FSETID when the filesystem handles it
// (FUSE_HANDLE_KILLPRIV_V2): set-user-ID goes, set-group-ID goes when the
// group may execute (without group execute it marks mandatory locking and
// stays), and so does a file capability (the xattr security.capability).
// Done under the metadata lock in one transaction with the change that
// causes it, so a chmod racing with the write is never undone.

// capabilityXattr is the xattr holding a file capability (VFS_CAP).
const capabilityXattr = "security.capability"

// WriteFlags modify Handle.WriteAtFlags.
type WriteFlags uint32

const (
	// WriteKillPriv clears privileges before the write (FUSE's
	// FUSE_WRITE_KILL_SUIDGID: the writer lacks CAP_FSETID).
	WriteKillPriv WriteFlags = 1 << iota
)

// killPrivBits returns mode without the privileges a write removes.
func killPrivBits(mode uint32) uint32 {
	mode &^= syscall.S_ISUID
	if mode&syscall.S_IXGRP != 0 {
		mode &^= syscall.S_ISGID
	}
	return mode
}

// killPriv clears n's privileges in r (n's record being changed) and
// returns the records dropping its capability, if it has one, and whether
// anything changes (v.mu held). Directories keep theirs: the kernel never
// clears a directory's (its set-group-ID is inherited group semantics).
func killPriv(ino Ino, n *inode, r *format.InodeRec) ([]format.Record, bool) {
	if n.isDir() {
		return nil, false
	}
	m := killPrivBits(r.Mode)
	changed := m != r.Mode
	r.Mode = m
	if n.xattrIndex(capabilityXattr) >= 0 {
		return []format.Record{format.XattrDelRec{Ino: uint64(ino), Name: capabilityXattr}}, true
	}
	return nil, changed
}

// KillPriv clears ino's privileges as a write by a caller without
// CAP_FSETID does, in a transaction of its own, and reports whether there
// was anything to clear; a file without privileges costs a read lock. It
// serves the changes for which the kernel does not flag the clearing
// (fallocate) and the O_TRUNC open. A directory keeps its own.
func (v *Volume) KillPriv(ino Ino) (bool, error) {
	v.mu.RLock()
	n, err := v.live(ino)
	changed := false
	if err == nil {
		r := n.record(ino)
		_, changed = killPriv(ino, n, &r)
	}
	v.mu.RUnlock()
	if err != nil || !changed { // the common case: no write lock taken
		return false, opErrOrNil("killpriv", "", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if n, err = v.live(ino); err != nil {
		return false, opErr("killpriv", "", err)
	}
	changed, err = v.killPrivLocked(ino, n)
	return changed, opErrOrNil("killpriv", "", err)
}

// killPrivNow clears ino's privileges in a transaction of its own, if it
// has any, and reports whether it had (fd.mu held, so n is pinned; v.mu
// not held). A write calls it before writing.
func (v *Volume) killPrivNow(ino Ino, n *inode) (bool, error) {
	v.mu.RLock()
	r := n.record(ino)
	_, changed := killPriv(ino, n, &r)
	v.mu.RUnlock()
	if !changed { // the common case: nothing to clear, no write lock taken
		return false, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.killPrivLocked(ino, n)
}

// killPrivLocked clears n's privileges, read again under v.mu (held for
// writing): a chmod since the caller looked is kept, and one that took
// them away leaves nothing to do.
func (v *Volume) killPrivLocked(ino Ino, n *inode) (bool, error) {
	r := n.record(ino)
	extra, changed := killPriv(ino, n, &r)
	if !changed {
		return false, nil
	}
	r.Ctime = v.now()
	_, err := v.commit(append(extra, r)...)
	return true, err
}
