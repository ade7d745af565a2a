package volume

// AtimePolicy says when an access (a read, a listing) updates an inode's
// access time: the mount options noatime, relatime and strictatime.
type AtimePolicy uint8

const (
	// AtimeRelative (relatime, Linux's default) updates it when it is not
	// after the last change of data or attributes, or is a day old: a
	// reader can still tell whether a file was read since it changed, and
	// a file read over and over costs one update a day.
	AtimeRelative AtimePolicy = iota
	// AtimeNever (noatime) leaves it as created or set.
	AtimeNever
	// AtimeStrict (strictatime) updates it at every access.
	AtimeStrict
)

// relatimeAge is how old an access time relatime refreshes anyway.
const relatimeAge = 24 * 3600 * 1e9

// Accessed records an access to ino now, as policy says: it logs the new
// access time like any change (no commit of its own, ctime untouched) and
// reports whether it did. Most accesses under relatime change nothing and
// take the metadata lock shared only. A volume a device error stopped
// records none, as a read-only mount.
func (v *Volume) Accessed(ino Ino, policy AtimePolicy) (bool, error) {
	if policy == AtimeNever || v.failed.Load() != nil { // stopped: as a ro mount
		return false, nil
	}
	now := v.now()
	v.mu.RLock()
	n, err := v.live(ino)
	due := err == nil && atimeDue(n, now, policy)
	v.mu.RUnlock()
	if err != nil {
		return false, opErr("access", "", err)
	}
	if !due {
		return false, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if n, err = v.live(ino); err != nil {
		return false, opErr("access", "", err)
	}
	if !atimeDue(n, now, policy) {
		return false, nil
	}
	r := n.record(ino)
	r.Atime = now
	if _, err := v.commit(r); err != nil {
		return false, opErr("access", "", err)
	}
	return true, nil
}

// atimeDue reports whether an access at now updates n's access time.
func atimeDue(n *inode, now int64, policy AtimePolicy) bool {
	switch policy {
	case AtimeStrict:
		return n.atime != now
	case AtimeRelative:
		return n.atime <= n.mtime || n.atime <= n.ctime || now-n.atime >= relatimeAge
	}
	return false
}
