package volume

import (
	"sync/atomic"
	"syscall"

	"github.com/smallfs/smallfs/fs/format"
)

// Lookup finds name in directory parent. "." and ".." name the directory
// itself and its parent.
func (v *Volume) Lookup(ctx Context, parent Ino, name string) (Attr, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	p, err := v.liveDir(parent)
	if err != nil {
		return Attr{}, opErr("lookup", name, err)
	}
	var ino Ino
	switch name {
	case ".":
		ino = parent
	case "..":
		ino = p.dirOf().parent
	default:
		if len(name) > MaxNameLen {
			return Attr{}, opErr("lookup", name, ErrNameTooLong)
		}
		r, ok := p.dirOf().lookup(name)
		if !ok {
			return Attr{}, opErr("lookup", name, ErrNotFound)
		}
		if _, err := v.child(r); err != nil {
			return Attr{}, opErr("lookup", name, err)
		}
		ino = r.ino
	}
	n := v.inodes.get(ino)
	if n == nil { // ".." of a directory removed while in use
		return Attr{}, opErr("lookup", name, ErrNotFound)
	}
	v.ref(n)
	return v.attr(ino, n), nil
}

// Parent returns the inode number of directory dir's parent (the root is
// its own), for a listing's "..": unlike Lookup it counts no kernel
// reference and takes only the read lock.
func (v *Volume) Parent(dir Ino) (Ino, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	p, err := v.liveDir(dir)
	if err != nil {
		return 0, opErr("lookup", "..", err)
	}
	return p.dirOf().parent, nil
}

// child returns the inode entry r names. An entry naming a missing inode
// is damaged metadata, which Open refuses and only a volume opened with
// Options.OpenDamaged serves: it answers EIO.
func (v *Volume) child(r dref) (*inode, error) {
	n := v.inodes.get(r.ino)
	if n == nil {
		return nil, corruptf("entry names missing inode %d", r.ino)
	}
	return n, nil
}

// ref counts one kernel reference to n when lookups are tracked.
func (v *Volume) ref(n *inode) {
	if v.opts.TrackLookups {
		atomic.AddUint32(&n.lookups, 1)
	}
}

// Forget drops n kernel references to ino (FUSE FORGET); an inode with no
// links, handles or references left is freed. Unknown inodes are ignored.
func (v *Volume) Forget(ino Ino, n uint64) {
	if !v.opts.TrackLookups {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	in := v.inodes.get(ino)
	if in == nil || v.closed {
		return
	}
	left := atomic.LoadUint32(&in.lookups)
	left -= uint32(min(n, uint64(left)))
	atomic.StoreUint32(&in.lookups, left)
	v.freeIfUnused(ino, in)
}

// unused reports whether nothing keeps n alive any more.
func (v *Volume) unused(n *inode) bool {
	return n.nlink == 0 && n.opens == 0 && atomic.LoadUint32(&n.lookups) == 0
}

// freeIfUnused frees ino once nothing keeps it (v.mu held for writing).
// Failing to log the free only delays it: the inode stays an orphan, which
// the next Open frees.
func (v *Volume) freeIfUnused(ino Ino, n *inode) {
	if !v.unused(n) {
		return
	}
	if _, err := v.commit(format.InodeFreeRec{Ino: uint64(ino)}); err != nil && v.failed.Load() == nil {
		v.opts.Logger.WithError(err).WithField("ino", ino).Warn("cannot log inode free; left as orphan")
	}
}

// GetAttr returns the attributes of ino.
func (v *Volume) GetAttr(ino Ino) (Attr, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	n, err := v.live(ino)
	if err != nil {
		return Attr{}, opErr("getattr", "", err)
	}
	return v.attr(ino, n), nil
}

// Readlink returns the target of symlink ino.
func (v *Volume) Readlink(ino Ino) (string, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	n, err := v.live(ino)
	if err != nil {
		return "", opErr("readlink", "", err)
	}
	if !n.isLink() {
		return "", opErr("readlink", "", ErrInvalid)
	}
	if n.x == nil || n.x.target == "" { // damaged: no target was loaded
		return "", opErr("readlink", "", corruptf("symlink %d has no target", ino))
	}
	return n.x.target, nil
}

// Mknod creates a regular file, fifo, socket or device node. A mode without
// type bits makes a regular file, as mknod(2) does.
func (v *Volume) Mknod(ctx Context, parent Ino, name string, mode, rdev uint32) (Attr, error) {
	switch mode & syscall.S_IFMT {
	case 0:
		mode |= syscall.S_IFREG
	case syscall.S_IFREG, syscall.S_IFIFO, syscall.S_IFSOCK:
		rdev = 0
	case syscall.S_IFCHR, syscall.S_IFBLK:
	default:
		return Attr{}, opErr("mknod", name, ErrInvalid)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	ino, n, err := v.newChild(ctx, parent, name, mode, rdev)
	if err != nil {
		return Attr{}, opErr("mknod", name, err)
	}
	return v.attr(ino, n), nil
}

// Mkdir creates a directory.
func (v *Volume) Mkdir(ctx Context, parent Ino, name string, mode uint32) (Attr, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ino, n, err := v.newChild(ctx, parent, name, syscall.S_IFDIR|mode&^syscall.S_IFMT, 0)
	if err != nil {
		return Attr{}, opErr("mkdir", name, err)
	}
	return v.attr(ino, n), nil
}

// Symlink creates a symbolic link to target.
func (v *Volume) Symlink(ctx Context, parent Ino, name, target string) (Attr, error) {
	switch {
	case target == "":
		return Attr{}, opErr("symlink", name, ErrNotFound)
	case len(target) > MaxSymlinkLen:
		return Attr{}, opErr("symlink", name, ErrNameTooLong)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	ino, n, err := v.newChild(ctx, parent, name, syscall.S_IFLNK|0o777, 0,
		format.SymlinkRec{Target: target})
	if err != nil {
		return Attr{}, opErr("symlink", name, err)
	}
	return v.attr(ino, n), nil
}

// newChild creates inode name in parent with the given mode (type and
// permission bits) in one transaction; extra records about the new inode
// (their Ino field is filled in) follow its InodeRec. v.mu is held for
// writing.
func (v *Volume) newChild(ctx Context, parent Ino, name string, mode, rdev uint32, extra ...format.Record) (Ino, *inode, error) {
	p, pd, err := v.entryFree(parent, name)
	if err != nil {
		return 0, nil, err
	}
	isDir := mode&syscall.S_IFMT == syscall.S_IFDIR
	if isDir && p.nlink >= MaxLinks {
		return 0, nil, ErrTooManyLinks
	}
	ino := v.inodes.allocIno()
	if ino == 0 {
		return 0, nil, ErrNoSpace
	}
	now := v.now()
	child := v.childRec(ctx, p, ino, mode, now)
	child.Nlink, child.Rdev = 1, rdev
	pr := p.record(parent)
	touchDir(&pr, now)
	if isDir {
		child.Nlink = 2
		pr.Nlink++
	}
	txn := make([]format.Record, 0, 3+len(extra))
	txn = append(txn, child)
	for _, r := range extra {
		switch r := r.(type) {
		case format.SymlinkRec:
			r.Ino = uint64(ino)
			child.Size = uint64(len(r.Target))
			txn[0] = child
			txn = append(txn, r)
		}
	}
	txn = append(txn, format.DirentRec{Parent: uint64(parent), Ino: uint64(ino), Cookie: pd.next, Name: name}, pr)
	if _, err := v.commit(txn...); err != nil {
		return 0, nil, err
	}
	n := v.inodes.get(ino)
	v.ref(n)
	return ino, n, nil
}

// childRec is the record of a new inode ino of mode made in directory p,
// without links (v.mu held).
func (v *Volume) childRec(ctx Context, p *inode, ino Ino, mode uint32, now int64) format.InodeRec {
	r := format.InodeRec{
		Ino: uint64(ino), Gen: v.nextGen, Mode: mode,
		UID: ctx.UID, GID: ctx.GID, Atime: now, Mtime: now, Ctime: now,
	}
	if p.mode&syscall.S_ISGID != 0 { // BSD group semantics of setgid directories
		r.GID = p.gid
		if mode&syscall.S_IFMT == syscall.S_IFDIR {
			r.Mode |= syscall.S_ISGID
		}
	}
	return r
}

// entryFree checks that name may be added to directory parent and returns
// the directory (v.mu held).
func (v *Volume) entryFree(parent Ino, name string) (*inode, *dir, error) {
	if err := checkName(name); err != nil {
		return nil, nil, err
	}
	p, err := v.liveDir(parent)
	if err != nil {
		return nil, nil, err
	}
	if p.nlink == 0 { // removed while still referenced
		return nil, nil, ErrNotFound
	}
	pd := p.dirOf()
	if _, ok := pd.lookup(name); ok {
		return nil, nil, ErrExist
	}
	// A new name and perhaps an inode: about a name's worth of records.
	if err := v.metaRoom(len(name) + 128); err != nil {
		return nil, nil, err
	}
	return p, pd, nil
}

// Link adds newName in newParent as a hard link to ino.
func (v *Volume) Link(ctx Context, ino, newParent Ino, newName string) (Attr, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n, err := v.live(ino)
	if err != nil {
		return Attr{}, opErr("link", newName, err)
	}
	switch {
	case n.isDir():
		return Attr{}, opErr("link", newName, ErrPerm)
	case n.nlink == 0 && n.flags&inodeLinkable == 0: // unlinked, or O_TMPFILE|O_EXCL
		return Attr{}, opErr("link", newName, ErrNotFound)
	case n.nlink >= MaxLinks:
		return Attr{}, opErr("link", newName, ErrTooManyLinks)
	}
	p, pd, err := v.entryFree(newParent, newName)
	if err != nil {
		return Attr{}, opErr("link", newName, err)
	}
	now := v.now()
	nr := n.record(ino)
	nr.Nlink++
	nr.Ctime = now
	pr := p.record(newParent)
	touchDir(&pr, now)
	if _, err := v.commit(nr, format.DirentRec{Parent: uint64(newParent), Ino: uint64(ino), Cookie: pd.next, Name: newName}, pr); err != nil {
		return Attr{}, opErr("link", newName, err)
	}
	n.flags &^= inodeLinkable // named now: no longer a tmpfile
	v.ref(n)
	return v.attr(ino, n), nil
}

// Unlink removes name, which is not a directory, from parent.
func (v *Volume) Unlink(ctx Context, parent Ino, name string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return opErrOrNil("unlink", name, v.remove(ctx, parent, name, false))
}

// Rmdir removes the empty directory name from parent.
func (v *Volume) Rmdir(ctx Context, parent Ino, name string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return opErrOrNil("rmdir", name, v.remove(ctx, parent, name, true))
}

func opErrOrNil(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return opErr(op, name, err)
}

// remove implements Unlink and Rmdir (v.mu held for writing).
func (v *Volume) remove(ctx Context, parent Ino, name string, wantDir bool) error {
	if err := checkName(name); err != nil {
		if wantDir && name == "." {
			return ErrInvalid
		}
		if wantDir && name == ".." {
			return ErrNotEmpty
		}
		return err
	}
	p, err := v.liveDir(parent)
	if err != nil {
		return err
	}
	r, ok := p.dirOf().lookup(name)
	if !ok {
		return ErrNotFound
	}
	c, err := v.child(r)
	if err != nil {
		return err
	}
	switch {
	case wantDir && !c.isDir():
		return ErrNotDir
	case !wantDir && c.isDir():
		return ErrIsDir
	case wantDir && !c.dirOf().empty():
		return ErrNotEmpty
	}
	if !mayDelete(ctx, p, c) {
		return ErrPerm
	}
	now := v.now()
	pr := p.record(parent)
	touchDir(&pr, now)
	cr := dropLink(r.ino, c, &pr, now)
	_, err = v.commit(format.DirentDelRec{Parent: uint64(parent), Name: name}, pr, cr)
	return err
}

// dropLink returns the record for removing one name of inode ino from the
// directory whose record is pr: the inode loses a link (a directory all of
// them, and pr its ".." link), and is freed if nothing else keeps it.
func dropLink(ino Ino, c *inode, pr *format.InodeRec, now int64) format.Record {
	cr := c.record(ino)
	cr.Ctime = now
	if c.isDir() {
		cr.Nlink = 0
		pr.Nlink--
	} else {
		cr.Nlink--
	}
	if cr.Nlink == 0 && c.opens == 0 && atomic.LoadUint32(&c.lookups) == 0 {
		return format.InodeFreeRec{Ino: uint64(ino)}
	}
	return cr
}

// mayDelete applies the sticky-bit rule: in a sticky directory only the
// owner of the entry or of the directory, or root, removes or renames it.
func mayDelete(ctx Context, p, c *inode) bool {
	return p.mode&syscall.S_ISVTX == 0 || ctx.UID == 0 || ctx.UID == p.uid || ctx.UID == c.uid
}
