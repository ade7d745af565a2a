package volume

import "syscall"

// ReadDir calls fn for each entry of directory dir after cookie, in cookie
// order, until fn returns false. Pass 0 to start; cookies 1 and 2 are free
// for the caller's "." and ".." (see dir.go). fn runs under the metadata
// read lock and must not call back into the volume.
func (v *Volume) ReadDir(dir Ino, cookie uint64, fn func(DirEntry) bool) error {
	return v.entries("readdir", dir, cookie, func(e DirEntry, _ *inode) bool { return fn(e) })
}

// ReadDirPlus is ReadDir with each entry's attributes, for FUSE
// READDIRPLUS. An entry for which fn returns true was accepted and counts
// as a kernel lookup (Options.TrackLookups); iteration stops at the first
// entry fn refuses, which is not counted. fn must not call the volume.
func (v *Volume) ReadDirPlus(dir Ino, cookie uint64, fn func(DirEntry, Attr) bool) error {
	return v.entries("readdirplus", dir, cookie, func(e DirEntry, c *inode) bool {
		if !fn(e, v.attr(e.Ino, c)) {
			return false
		}
		v.ref(c)
		return true
	})
}

// entries walks dir's entries after cookie under the read lock.
func (v *Volume) entries(op string, dir Ino, cookie uint64, fn func(DirEntry, *inode) bool) error {
	v.mu.RLock()
	defer v.mu.RUnlock()
	d, err := v.liveDir(dir)
	if err != nil {
		return opErr(op, "", err)
	}
	ents := d.dirOf().ents
	for i := d.dirOf().from(cookie); i < len(ents); i++ {
		e := &ents[i]
		if e.name == "" {
			continue
		}
		c := v.inodes.get(e.ino)
		if !fn(DirEntry{Name: e.name, Ino: e.ino, Mode: c.mode & syscall.S_IFMT, Cookie: e.cookie}, c) {
			break
		}
	}
	return nil
}
