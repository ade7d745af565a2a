package volume

import (
	"path"
	"slices"
)

// PathOf returns a path from the root to ino ("/a/b"), or "" when it has
// no name (unlinked while open) or a directory above it has none. A file
// keeps no link to its directory, so every directory is searched for it:
// it is for messages about one file (damage, a scrub's findings), not a
// path that runs per request.
func (v *Volume) PathOf(ino Ino) string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var names []string
	for ino != RootIno && len(names) < maxPathDepth {
		n := v.inodes.get(ino)
		if n == nil {
			return ""
		}
		parent, name := v.nameOf(ino, n)
		if name == "" {
			return ""
		}
		names = append(names, name)
		ino = parent
	}
	slices.Reverse(names)
	return "/" + path.Join(names...)
}

// maxPathDepth bounds the walk up from an inode: a loop in damaged
// metadata must not make a message hang.
const maxPathDepth = 4096

// nameOf returns a directory holding ino and its name there (v.mu held):
// a directory's from its parent link, anything else's from a search.
func (v *Volume) nameOf(ino Ino, n *inode) (Ino, string) {
	if d := n.dirOf(); d != nil {
		if p := v.inodes.get(d.parent); p != nil && p.dirOf() != nil {
			if name := p.dirOf().nameOf(ino); name != "" {
				return d.parent, name
			}
		}
		return 0, ""
	}
	var parent Ino
	var found string
	v.inodes.all(func(dino Ino, dn *inode) bool {
		if d := dn.dirOf(); d != nil {
			if name := d.nameOf(ino); name != "" {
				parent, found = dino, name
				return false
			}
		}
		return true
	})
	return parent, found
}

// nameOf returns a live entry's name for ino, or "".
func (d *dir) nameOf(ino Ino) string {
	for i := range d.ents {
		if e := &d.ents[i]; e.ino == ino && e.name != "" {
			return e.name
		}
	}
	return ""
}
