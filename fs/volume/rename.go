package volume

import (
	"syscall"

	"github.com/smallfs/smallfs/fs/format"
)

// Rename flags, as renameat2(2).
const (
	RenameNoReplace uint32 = 1 << 0 // fail with EEXIST if newName exists
	RenameExchange  uint32 = 1 << 1 // swap oldName and newName atomically
	RenameWhiteout  uint32 = 1 << 2 // leave a whiteout at oldName (overlayfs)
)

// Rename moves oldName in oldParent to newName in newParent, replacing a
// compatible newName (a file by a file, a directory by an empty directory)
// in the same transaction, so a crash shows the old or the new state. With
// RenameExchange both names must exist and swap inodes (keeping their
// readdir cookies). Renaming a name onto another link of the same inode does
// nothing, as POSIX says. RenameWhiteout (alone or with RenameNoReplace)
// leaves a whiteout at oldName in the same transaction: a new character
// device 0/0 without permission bits, owned by ctx as a new file is
// (overlayfs marks a name deleted in its upper layer with one).
func (v *Volume) Rename(ctx Context, oldParent Ino, oldName string, newParent Ino, newName string, flags uint32) error {
	if flags&^(RenameNoReplace|RenameExchange|RenameWhiteout) != 0 ||
		flags&RenameExchange != 0 && flags != RenameExchange {
		return opErr("rename", oldName, ErrInvalid)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return opErrOrNil("rename", oldName, v.rename(ctx, oldParent, oldName, newParent, newName, flags))
}

func (v *Volume) rename(ctx Context, oldParent Ino, oldName string, newParent Ino, newName string, flags uint32) error {
	if err := checkName(oldName); err != nil {
		return err
	}
	if err := checkName(newName); err != nil {
		return err
	}
	op, err := v.liveDir(oldParent)
	if err != nil {
		return err
	}
	np, err := v.liveDir(newParent)
	if err != nil {
		return err
	}
	src, ok := op.dirOf().lookup(oldName)
	if !ok {
		return ErrNotFound
	}
	tgt, exists := np.dirOf().lookup(newName)
	switch {
	case np.nlink == 0:
		return ErrNotFound
	case flags&RenameExchange != 0 && !exists:
		return ErrNotFound
	case flags&RenameNoReplace != 0 && exists:
		return ErrExist
	case exists && tgt.ino == src.ino:
		return nil
	}
	s := v.inodes.get(src.ino)
	var t *inode
	if exists {
		t = v.inodes.get(tgt.ino)
	}
	if !mayDelete(ctx, op, s) || exists && !mayDelete(ctx, np, t) {
		return ErrPerm
	}
	// A longer name grows the metadata the next checkpoint must hold;
	// replacing a name or exchanging two does not.
	if grow := len(newName) - len(oldName); grow > 0 && !exists {
		if err := v.metaRoom(grow); err != nil {
			return err
		}
	}

	// Parent records: one when both names are in the same directory.
	now := v.now()
	opr := op.record(oldParent)
	touchDir(&opr, now)
	npr := &opr
	if newParent != oldParent {
		r := np.record(newParent)
		touchDir(&r, now)
		npr = &r
	}
	sr := s.record(src.ino)
	sr.Ctime = now

	if flags&RenameExchange != 0 {
		return v.exchange(oldParent, oldName, src, s, &sr, &opr, newParent, newName, tgt, t, npr, now)
	}
	if s.isDir() {
		if exists && !t.isDir() {
			return ErrNotDir
		}
		if exists && !t.dirOf().empty() {
			return ErrNotEmpty
		}
		if err := v.moveDir(src.ino, &opr, newParent, npr, exists); err != nil {
			return err
		}
	} else if exists && t.isDir() {
		return ErrIsDir
	}
	txn := make([]format.Record, 0, 8)
	if flags&RenameWhiteout != 0 {
		wo, err := v.whiteout(ctx, op, oldName, now)
		if err != nil {
			return err
		}
		// The whiteout takes the old name's place and its cookie.
		txn = append(txn, wo, format.DirentRec{Parent: uint64(oldParent), Ino: wo.Ino, Cookie: src.cookie, Name: oldName})
	} else {
		txn = append(txn, format.DirentDelRec{Parent: uint64(oldParent), Name: oldName})
	}
	txn = append(txn,
		format.DirentRec{Parent: uint64(newParent), Ino: uint64(src.ino), Cookie: np.dirOf().next, Name: newName},
		sr)
	if exists {
		txn = append(txn, dropLink(tgt.ino, t, npr, now))
	}
	txn = append(txn, opr)
	if npr != &opr {
		txn = append(txn, *npr)
	}
	_, err = v.commit(txn...)
	return err
}

// whiteout returns the record of a new whiteout to be named name in
// directory p: a character device 0/0 with no permission bits (the
// kernel's WHITEOUT_MODE and WHITEOUT_DEV), one link (v.mu held).
func (v *Volume) whiteout(ctx Context, p *inode, name string, now int64) (format.InodeRec, error) {
	if err := v.metaRoom(len(name) + 128); err != nil {
		return format.InodeRec{}, err
	}
	ino := v.inodes.allocIno()
	if ino == 0 {
		return format.InodeRec{}, ErrNoSpace
	}
	r := v.childRec(ctx, p, ino, syscall.S_IFCHR, now)
	r.Nlink = 1
	return r, nil
}

// moveDir checks that directory ino may move to newParent and adjusts the
// parents' link counts for its ".." entry (replacing reports that it takes
// the place of a directory, whose ".." link dropLink removes).
func (v *Volume) moveDir(ino Ino, opr *format.InodeRec, newParent Ino, npr *format.InodeRec, replacing bool) error {
	if npr == opr {
		return nil
	}
	if v.isAncestor(ino, newParent) {
		return ErrInvalid
	}
	if !replacing && npr.Nlink >= MaxLinks {
		return ErrTooManyLinks
	}
	opr.Nlink--
	npr.Nlink++
	return nil
}

// isAncestor reports whether directory a is d or one of d's ancestors.
func (v *Volume) isAncestor(a, d Ino) bool {
	for {
		if d == a {
			return true
		}
		if d == RootIno || d == 0 {
			return false
		}
		d = v.inodes.get(d).dirOf().parent
	}
}

// exchange completes a RenameExchange: each name takes the other's inode
// and keeps its own cookie.
func (v *Volume) exchange(oldParent Ino, oldName string, src dref, s *inode, sr, opr *format.InodeRec,
	newParent Ino, newName string, tgt dref, t *inode, npr *format.InodeRec, now int64) error {
	if s.isDir() != t.isDir() {
		// The directory changes parent, the other inode moves the other way.
		var err error
		if s.isDir() {
			err = v.moveDir(src.ino, opr, newParent, npr, false)
		} else {
			err = v.moveDir(tgt.ino, npr, oldParent, opr, false)
		}
		if err != nil {
			return err
		}
	} else if s.isDir() && oldParent != newParent {
		if v.isAncestor(src.ino, newParent) || v.isAncestor(tgt.ino, oldParent) {
			return ErrInvalid
		}
	}
	tr := t.record(tgt.ino)
	tr.Ctime = now
	txn := make([]format.Record, 0, 6)
	txn = append(txn,
		format.DirentRec{Parent: uint64(oldParent), Ino: uint64(tgt.ino), Cookie: src.cookie, Name: oldName},
		format.DirentRec{Parent: uint64(newParent), Ino: uint64(src.ino), Cookie: tgt.cookie, Name: newName},
		*sr, tr, *opr)
	if npr != opr {
		txn = append(txn, *npr)
	}
	_, err := v.commit(txn...)
	return err
}
