package volume

import (
	"slices"
	"strings"

	"github.com/smallfs/smallfs/fs/format"
)

// Xattr flags, as setxattr(2).
const (
	XattrCreate  uint32 = 1 // fail with EEXIST if the attribute exists
	XattrReplace uint32 = 2 // fail with ENODATA if it does not
)

// SetXattr sets attribute name of ino to value. Names are 1 to
// MaxXattrNameLen bytes (else ERANGE) in a namespace (checkXattrName),
// values at most MaxXattrValueLen (else E2BIG), and one inode's names and
// values at most MaxXattrTotal bytes, its names with their NULs at most
// MaxXattrList (else ENOSPC). Who may use which namespace is the
// kernel's to check.
func (v *Volume) SetXattr(ino Ino, name string, value []byte, flags uint32) error {
	switch {
	case flags&^(XattrCreate|XattrReplace) != 0 || flags == XattrCreate|XattrReplace:
		return opErr("setxattr", name, ErrInvalid)
	case len(value) > MaxXattrValueLen:
		return opErr("setxattr", name, ErrTooBig)
	}
	if err := checkXattrName(name); err != nil {
		return opErr("setxattr", name, err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	n, err := v.live(ino)
	if err != nil {
		return opErr("setxattr", name, err)
	}
	i := n.xattrIndex(name)
	switch {
	case i >= 0 && flags&XattrCreate != 0:
		return opErr("setxattr", name, ErrExist)
	case i < 0 && flags&XattrReplace != 0:
		return opErr("setxattr", name, ErrNoData)
	}
	if err := v.metaRoom(len(name) + len(value)); err != nil {
		return opErr("setxattr", name, err)
	}
	total, list := len(name)+len(value), len(name)+1
	if n.x != nil {
		for j, x := range n.x.xattrs {
			if j != i {
				total += len(x.name) + len(x.value)
				list += len(x.name) + 1
			}
		}
	}
	if total > MaxXattrTotal || list > MaxXattrList {
		return opErr("setxattr", name, ErrNoSpace)
	}
	r := n.record(ino)
	r.Ctime = v.now()
	_, err = v.commit(format.XattrSetRec{Ino: uint64(ino), Name: name, Value: slices.Clone(value)}, r)
	return opErrOrNil("setxattr", name, err)
}

// GetXattr returns a copy of attribute name of ino. Fitting it into the
// caller's buffer (ERANGE) is the caller's business.
func (v *Volume) GetXattr(ino Ino, name string) ([]byte, error) {
	if err := checkXattrName(name); err != nil {
		return nil, opErr("getxattr", name, err)
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	n, err := v.live(ino)
	if err != nil {
		return nil, opErr("getxattr", name, err)
	}
	i := n.xattrIndex(name)
	if i < 0 {
		return nil, opErr("getxattr", name, ErrNoData)
	}
	return slices.Clone(n.x.xattrs[i].value), nil
}

// ListXattr returns the names of ino's attributes in the order they were
// first set.
func (v *Volume) ListXattr(ino Ino) ([]string, error) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	n, err := v.live(ino)
	if err != nil {
		return nil, opErr("listxattr", "", err)
	}
	if n.x == nil {
		return nil, nil
	}
	names := make([]string, len(n.x.xattrs))
	for i, x := range n.x.xattrs {
		names[i] = x.name
	}
	return names, nil
}

// RemoveXattr deletes attribute name of ino.
func (v *Volume) RemoveXattr(ino Ino, name string) error {
	if err := checkXattrName(name); err != nil {
		return opErr("removexattr", name, err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	n, err := v.live(ino)
	if err != nil {
		return opErr("removexattr", name, err)
	}
	if n.xattrIndex(name) < 0 {
		return opErr("removexattr", name, ErrNoData)
	}
	r := n.record(ino)
	r.Ctime = v.now()
	_, err = v.commit(format.XattrDelRec{Ino: uint64(ino), Name: name}, r)
	return opErrOrNil("removexattr", name, err)
}

// xattrNamespaces are the prefixes of the kernel's xattr namespaces.
var xattrNamespaces = []string{"user.", "trusted.", "security.", "system."}

// checkXattrName applies the rules ext4 applies to a name: 1 to
// MaxXattrNameLen bytes (ERANGE); in one of the kernel's namespaces
// (EOPNOTSUPP, as for a namespace the filesystem lacks); not the prefix
// alone (EINVAL, as the kernel's xattr_resolve_name; "system." alone
// names no attribute: EOPNOTSUPP).
func checkXattrName(name string) error {
	if name == "" || len(name) > MaxXattrNameLen {
		return ErrRange
	}
	for _, p := range xattrNamespaces {
		switch {
		case name == "system.":
			return ErrNotSupported
		case name == p:
			return ErrInvalid
		case strings.HasPrefix(name, p):
			return nil
		}
	}
	return ErrNotSupported
}

func (n *inode) xattrIndex(name string) int {
	if n.x == nil {
		return -1
	}
	return slices.IndexFunc(n.x.xattrs, func(x xattr) bool { return x.name == name })
}

func (n *inode) setXattr(name string, value []byte) {
	if i := n.xattrIndex(name); i >= 0 {
		n.x.xattrs[i].value = value
		return
	}
	x := n.ext()
	x.xattrs = append(x.xattrs, xattr{name, value})
}

func (n *inode) removeXattr(name string) {
	if i := n.xattrIndex(name); i >= 0 {
		n.x.xattrs = nilIfEmpty(slices.Delete(n.x.xattrs, i, i+1))
	}
}
