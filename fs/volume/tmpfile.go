package volume

import (
	"syscall"
)

// Tmpfile makes an unnamed regular file for open(2) with O_TMPFILE: an
// inode with no link, open through the returned handle, whose data is
// placed in directory dir's region. It is freed when its last handle is
// released (and, with Options.TrackLookups, the kernel forgets it) unless
// Link names it first, which open without O_EXCL allows (linkat(2)); with
// O_EXCL it can never be linked. A crash frees it like any inode without
// links (Recovery.Orphans). flags are open(2)'s: the access mode must
// allow writing, as O_TMPFILE requires.
func (v *Volume) Tmpfile(ctx Context, dir Ino, mode uint32, flags uint32) (Attr, *Handle, error) {
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		return Attr{}, nil, opErr("tmpfile", "", ErrInvalid)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	ino, n, err := v.newTmpfile(ctx, dir, mode)
	if err != nil {
		return Attr{}, nil, opErr("tmpfile", "", err)
	}
	if flags&syscall.O_EXCL == 0 {
		n.flags |= inodeLinkable
	}
	h, err := v.open(ino, dir, flags)
	if err != nil { // cannot happen: a fresh regular inode
		v.freeIfUnused(ino, n)
		return Attr{}, nil, opErr("tmpfile", "", err)
	}
	v.ref(n)
	return v.attr(ino, n), h, nil
}

// newTmpfile logs a new regular inode without links for Tmpfile (v.mu
// held for writing). Like a create it needs metadata room and a live
// directory, whose group a setgid directory passes on.
func (v *Volume) newTmpfile(ctx Context, dir Ino, mode uint32) (Ino, *inode, error) {
	p, err := v.liveDir(dir)
	if err != nil {
		return 0, nil, err
	}
	if p.nlink == 0 {
		return 0, nil, ErrNotFound
	}
	if err := v.metaRoom(128); err != nil {
		return 0, nil, err
	}
	ino := v.inodes.allocIno()
	if ino == 0 {
		return 0, nil, ErrNoSpace
	}
	r := v.childRec(ctx, p, ino, syscall.S_IFREG|mode&^syscall.S_IFMT, v.now())
	if _, err := v.commit(r); err != nil {
		return 0, nil, err
	}
	return ino, v.inodes.get(ino), nil
}
