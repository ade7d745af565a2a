package fuse

import (
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/fs/volume"
)

// Extended attributes. GETXATTR and LISTXATTR follow the kernel's
// two-step protocol: asked with an empty buffer they return the size; with
// a buffer too small they return ERANGE and the size.

// Security labels and ACLs are attributes the kernel and security tools
// interpret. Unless Options.SecurityLabels is set, the mount does not
// support labels (security.*), as a filesystem built without security
// support does: every call naming one fails with EOPNOTSUPP without
// reaching the volume. POSIX ACLs (system.posix_acl_*) are not supported
// on any mount: the adapter does not negotiate FUSE_POSIX_ACL, so the
// kernel would store an ACL and never enforce it, and a user who set one
// to keep others out would be left open. A listing leaves them out. "Unsupported" rather than
// "absent" (ENODATA) matters: ls -l asks security.selinux and
// system.posix_acl_access of every entry, and coreutils stops asking for
// the rest of a device once it has been told "unsupported", so a listing
// of n entries costs 2 GETXATTRs instead of 2n (docs/FUSE.md). (go-fuse's
// IgnoreSecurityLabels would answer some of them before the adapter sees
// the request, hiding those round trips from the counters.)
const (
	labelNamespace = "security."
	aclNamespace   = "system.posix_acl_"
)

func (fs *fileSystem) isLabel(name string) bool {
	return strings.HasPrefix(name, aclNamespace) || !fs.opts.SecurityLabels && strings.HasPrefix(name, labelNamespace)
}

// errNoLabels answers a label call on a mount that ignores labels.
var errNoLabels = fmt.Errorf("security labels (without security_labels) and POSIX ACLs are not supported on this mount: %w", syscall.EOPNOTSUPP)

func (fs *fileSystem) GetXAttr(_ <-chan struct{}, h *fuse.InHeader, name string, dest []byte) (uint32, fuse.Status) {
	start := fs.begin(opGetXAttr)
	if fs.isLabel(name) {
		return 0, fs.done(opGetXAttr, start, h.NodeId, errNoLabels)
	}
	v, err := fs.vol.GetXattr(volume.Ino(h.NodeId), name)
	if err != nil {
		return 0, fs.done(opGetXAttr, start, h.NodeId, err)
	}
	return copyOut(dest, v), fs.done(opGetXAttr, start, h.NodeId, fitErr(dest, len(v)))
}

func (fs *fileSystem) ListXAttr(_ <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	start := fs.begin(opListXAttr)
	names, err := fs.vol.ListXattr(volume.Ino(h.NodeId))
	if err != nil {
		return 0, fs.done(opListXAttr, start, h.NodeId, err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return fs.unlisted(h, n) })
	size := 0
	for _, n := range names {
		size += len(n) + 1
	}
	if err := fitErr(dest, size); err != nil || len(dest) == 0 {
		return uint32(size), fs.done(opListXAttr, start, h.NodeId, err)
	}
	off := 0
	for _, n := range names {
		off += copy(dest[off:], n)
		dest[off] = 0
		off++
	}
	return uint32(size), fs.done(opListXAttr, start, h.NodeId, nil)
}

// trustedNamespace holds attributes for privileged tools (overlayfs keeps
// its whiteouts and redirects there). The kernel lets only a caller with
// CAP_SYS_ADMIN get or set one, and leaves the listing to the filesystem;
// ext4 and XFS list them to such a caller only.
const trustedNamespace = "trusted."

// unlisted reports whether LISTXATTR leaves name out for the caller of h:
// a label the mount does not support (a get of it answers EOPNOTSUPP), and
// a trusted.* name for a caller other than uid 0. Uid 0 lists them without
// a look at its capabilities: overlayfs copying up lists its lower layer
// with the mounter's credentials in the request's uid, but the pid is the
// user's process, whose own capabilities /proc shows.
func (fs *fileSystem) unlisted(h *fuse.InHeader, name string) bool {
	return fs.isLabel(name) || h.Uid != 0 && strings.HasPrefix(name, trustedNamespace)
}

// copyOut copies v into dest when it fits and returns v's length.
func copyOut(dest, v []byte) uint32 {
	if len(dest) >= len(v) {
		copy(dest, v)
	}
	return uint32(len(v))
}

// fitErr says whether a value of size bytes fits the caller's buffer; an
// empty buffer asks only for the size.
func fitErr(dest []byte, size int) error {
	if len(dest) != 0 && len(dest) < size {
		return syscall.ERANGE
	}
	return nil
}

func (fs *fileSystem) SetXAttr(_ <-chan struct{}, in *fuse.SetXAttrIn, name string, value []byte) fuse.Status {
	start := fs.begin(opSetXAttr)
	if fs.isLabel(name) {
		return fs.done(opSetXAttr, start, in.NodeId, errNoLabels)
	}
	err := fs.vol.SetXattr(volume.Ino(in.NodeId), name, value, in.Flags)
	return fs.done(opSetXAttr, start, in.NodeId, err)
}

func (fs *fileSystem) RemoveXAttr(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	start := fs.begin(opRemoveXAttr)
	if fs.isLabel(name) {
		return fs.done(opRemoveXAttr, start, h.NodeId, errNoLabels)
	}
	return fs.done(opRemoveXAttr, start, h.NodeId, fs.vol.RemoveXattr(volume.Ino(h.NodeId), name))
}
