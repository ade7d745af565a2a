// Package mountinfo finds mounts in /proc/self/mountinfo.
//
// # The model
//
// The kernel lists every mount of the process's namespace, one per line
// (proc(5)): mount id, parent id, the st_dev of the mounted filesystem as
// "major:minor", the root within it, the mount point, options, optional
// fields, a "-" separator, the type, the source and the superblock
// options. Paths escape space, tab, newline and backslash as octal.
//
// Lookups read the file directly and never touch the mounted filesystem,
// so they cannot hang on a stuck FUSE daemon: `smallfs stats` and the
// busy check of a mount rely on that.
//
// # Errors
//
// ErrNotMounted when no mount sits on the path; a malformed line is
// skipped rather than failing the whole lookup.
//
// # Costs
//
// One read and parse of the whole table per call: microseconds for
// hundreds of mounts.
package mountinfo
