package volume

import "syscall"

// ReadDir calls fn for each entry of directory dir with a cookie above
// cookie and below end, in cookie order, until fn returns false. Pass
// cookie 0 to start; cookies 1 and 2 are free for the caller's "." and ".."
// (see dir.go). End 0 is no bound; a listing that passes DirEnd's answer
// from its start sees no entry added after it started, so a name removed
// and added again meanwhile is not listed twice and a listing under
// constant churn ends. fn runs under the metadata read lock and must not
// call back into the volume.
func (v *Volume) ReadDir(dir Ino, cookie, end uint64, fn func(DirEntry) bool) error {
	return v.entries("readdir", dir, cookie, end, func(e DirEntry, _ *inode) bool { return fn(e) })
}

// DirEnd returns the cookie directory dir will give its next entry: the
// end of a listing that starts now (see ReadDir).
func (v *Volume) DirEnd(dir Ino) (uint64, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	d, err := v.liveDir(dir)
	if err != nil {
		return 0, opErr("readdir", "", err)
	}
	return d.dirOf().next, nil
}

// ReadDirPlus is ReadDir with each entry's attributes, for FUSE
// READDIRPLUS. An entry for which fn returns true was accepted and counts
// as a kernel lookup (Options.TrackLookups); iteration stops at the first
// entry fn refuses, which is not counted. fn must not call the volume.
// An entry naming a missing inode (damaged metadata, which only a volume
// opened with Options.OpenDamaged serves) comes with a zero Attr: no
// attributes, no lookup counted; a Lookup of it answers EIO.
func (v *Volume) ReadDirPlus(dir Ino, cookie, end uint64, fn func(DirEntry, Attr) bool) error {
	return v.entries("readdirplus", dir, cookie, end, func(e DirEntry, c *inode) bool {
		if c == nil {
			return fn(e, Attr{})
		}
		if !fn(e, v.attr(e.Ino, c)) {
			return false
		}
		v.ref(c)
		return true
	})
}

// entries walks dir's entries between cookie and end under the read lock.
func (v *Volume) entries(op string, dir Ino, cookie, end uint64, fn func(DirEntry, *inode) bool) error {
	v.mu.RLock()
	defer v.mu.RUnlock()
	d, err := v.liveDir(dir)
	if err != nil {
		return opErr(op, "", err)
	}
	ents := d.dirOf().ents
	for i := d.dirOf().from(cookie); i < len(ents); i++ {
		e := &ents[i]
		if end != 0 && e.cookie >= end {
			break
		}
		if e.name == "" {
			continue
		}
		c := v.inodes.get(e.ino)
		var mode uint32 // a missing inode (damage): type unknown
		if c != nil {
			mode = c.mode & syscall.S_IFMT
		}
		if !fn(DirEntry{Name: e.name, Ino: e.ino, Mode: mode, Cookie: e.cookie}, c) {
			break
		}
	}
	return nil
}
