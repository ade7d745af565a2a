// Package volume is the smallfs volume core: a directory tree whose metadata
// lives entirely in memory, kept crash-safe on one device by a redo log of
// state-setting records and periodic checkpoints. It has no FUSE in it: the
// adapter in fs/fuse, fsck, the crash and model tests all drive a *Volume
// in-process. api.go is the contract with those users.
//
// # The model
//
// An inode is a slot in a chunked table indexed by inode number (inode.go);
// what most inodes lack — a directory index, a symlink target, xattrs,
// inline data, extents, open-file state — hangs off one optional pointer.
// A directory (dir.go) keeps its entries in a slice ordered by readdir
// cookie, plus a name map once it has more than 16 entries.
//
// Every change is a transaction of records from fs/format (an inode's whole
// attributes, one directory entry set or removed, a whole extent map, ...).
// An operation validates, builds its records, appends them to the log and
// applies them with apply (apply.go), the same function recovery uses on the
// records it reads back. So the state a crash recovers is, by construction,
// the state the live volume had at that point of the log.
//
// # Names, cookies and "." / ".."
//
// Names are 1 to 255 bytes without '/' or NUL; "." and ".." are never stored.
// ReadDir lists stored entries only: the caller (the FUSE adapter) adds "."
// and ".." itself and may use cookies 1 and 2 for them; stored entries get
// cookies from 3 up, increasing per directory, and keep them until removed
// (RenameExchange keeps both names' cookies). A listing resumed from a cookie
// never returns an entry twice nor skips one present throughout. Lookup
// accepts "." and ".." for the NFS-style lookups of a parent.
//
// # Inode lifetime
//
// An inode lives while it has a link, an open Handle, or (with
// Options.TrackLookups) a kernel reference counted by entry-returning calls
// and dropped by Forget. When the last of these goes, one InodeFree record
// drops it; an unlinked inode still open is kept with nlink 0, and if the
// volume crashes then, the next Open frees it. Inode numbers are reused with
// a new generation (the volume-wide counter, restarted above the highest
// generation found at Open).
//
// # Locking
//
// Lock order, outermost first:
//
//  1. a file's data lock (fileData.mu), taken by reads, writes, flush and
//     truncate of that file;
//  2. Volume.mu, the metadata RWMutex: readers for lookups, getattr,
//     readdir, xattr reads; the writer for every change;
//  3. leaf locks: the space counters (space.mu) and the allocator's own.
//
// The metadata lock is never held across device I/O or a journal sync:
// data is written with only the data lock held, then the metadata lock is
// taken briefly to append and apply the record. ReadDir callbacks run under
// the read lock and must not call the volume (a writer waiting on the
// RWMutex would deadlock them). Lookup counts are atomics, bumped under the
// read lock.
//
// # Errors
//
// Every error wraps one sentinel of errors.go, each of which unwraps to its
// syscall.Errno: errors.Is(err, syscall.ENOENT) and errors.As(err, &errno)
// work, and the FUSE edge converts once. Operation errors are *fs.PathError
// with the operation and the name. ErrCorrupt marks inconsistent on-disk
// metadata. A failed call changes nothing.
//
// # Check
//
// Check walks the whole tree and the allocator and returns every problem it
// finds (see check.go for the list). Tests register it in t.Cleanup for
// every volume they create and keep the image of a failing volume.
package volume
