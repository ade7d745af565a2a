// Package fuse serves a smallfs volume to the kernel through go-fuse's raw
// protocol API (fuse.RawFileSystem), and mounts and unmounts it.
//
// # The model
//
// The adapter is a translation layer with almost no state of its own. A
// FUSE node ID is the volume's inode number (the root is 1, FUSE_ROOT_ID)
// and the generation is the inode's Gen; a (Ino, Gen) pair is never reused.
// The kernel's lookup count for an inode is a field of the volume's inode
// record (volume Options.TrackLookups): every reply that hands the kernel
// an inode (LOOKUP, CREATE, TMPFILE, MKNOD, MKDIR, SYMLINK, LINK, and each
// READDIRPLUS entry) is counted by the volume, and FORGET and BATCH_FORGET
// call volume.Forget. There is no second node tree: go-fuse's fs package
// keeps one at about 825 B per cached inode (hanwen/go-fuse#603); here a
// cached inode costs the adapter nothing.
//
// The adapter's state is the table of open files (OpenOut.Fh is an index
// into it, see handles.go), one of open directories, and the request
// counters. A listing resumes from its offset, which is the volume's
// readdir cookie ("." and ".." are the adapter's, at offsets 1 and 2); an
// open directory holds only where its listing ends: the directory's next
// cookie when the listing started, so entries added meanwhile are left out
// (a name removed and added again behind the reader would otherwise be
// listed twice, and a listing under constant churn would not end).
//
// # Mounting
//
// Mount mounts (mount(2) directly when root, else fusermount3) and returns
// once the kernel has answered the first request, so the mountpoint is
// usable. The caller owns the volume: after Wait returns, because of
// Unmount or an unmount from outside (umount, fusermount3 -u), the serve
// loop has ended and files the kernel never released have been released;
// the caller then closes the volume, which flushes, checkpoints and marks
// it clean. A daemon killed outright leaves a dead mount ("transport
// endpoint is not connected") that umount -l removes.
//
// Unmount fails (EBUSY) while files are open. Abort ends the mount anyway
// (abort.go): it detaches the mountpoint and aborts the connection through
// fusectl, so the processes holding files get ENOTCONN, the serve loop
// ends and the files the kernel never released are released into the
// volume: nothing the daemon received is lost. Commit first (volume
// Sync), then Abort, then close the volume: that is what smallfs does on
// SIGTERM when the unmount is refused.
//
// Mount options: default_permissions wherever a caller other than root can
// reach the mount (see "# Permissions"), allow_other only with Options.AllowOther,
// read-only mounts with Options.ReadOnly ("ro": the kernel refuses every
// change with EROFS, and so does the adapter, should a remount,rw made
// behind the daemon's back lift the kernel's check). The generic flags (Options.MountFlags: noexec,
// noatime, relatime, sync, dirsync, ...; nosuid and nodev unless
// Options.Suid or Dev) are applied by the mount itself, never by a remount:
// as MS_* bits to mount(2) when the process may mount, and as option names
// to fusermount3 when mount(2) says EPERM (mountflags.go). The access
// time flags are also the adapter's to apply, since the kernel leaves a
// FUSE inode's access time alone: each READ, and the first READDIR of a
// listing, call volume Accessed with the policy the flags give (relatime
// unless noatime or strictatime; nodiratime for directories). Reads the
// page cache answers do not reach the daemon and do not count.
//
// Security labels are not supported unless Options.SecurityLabels, and
// POSIX ACLs never are (the kernel would store them without enforcing
// them): every xattr call in those namespaces fails with EOPNOTSUPP
// without reaching the volume, as on a filesystem built without them. "Unsupported" rather than "absent" lets ls -l stop asking
// after the first entry (2 GETXATTRs per listing instead of 2 per entry);
// the first write to an inode still costs one GETXATTR
// "security.capability", which the kernel asks regardless. A listing
// leaves those names out, and trusted.* names too unless the caller is
// uid 0 (the kernel refuses everyone else a get or set of them, and
// leaves the listing to the filesystem, as ext4 lists them only to
// CAP_SYS_ADMIN).
//
// # Permissions
//
// Mode bits are the kernel's to check (default_permissions) wherever a
// caller other than root can reach the mount: with Options.AllowOther,
// when the daemon does not run as root, when the fuse module's
// allow_sys_admin_access is on at mount (it admits CAP_SYS_ADMIN of any
// uid; turned on later, it does not add the kernel's checks to mounts made
// before), and always with PermissionsKernel (-o default_permissions). The
// volume never checks mode bits.
//
// A mount by root without allow_other is reachable only by callers whose
// every uid and gid are 0 (fuse_allow_current_process; everyone else gets
// EACCES at the door). Mode bits do not stop root: the kernel's checks
// for such a caller pass, but for executing a file with no execute bit,
// which the kernel checks with or without default_permissions
// (fuse_permission refreshes the attributes first), and for access(2)
// and chdir, which it then asks the adapter (ACCESS, answered with root's
// rule). So such a mount goes without default_permissions: the kernel's
// checks there decide nothing and cost a GETATTR of a directory before
// the first path walk after each create, unlink, rename, mkdir or rmdir
// in it (its mode bits are marked stale with the rest; docs/FUSE.md).
// Without it, a create is 5 requests instead of 6, an unlink 1 instead of
// 2, a rename 2 instead of 4. What differs: a uid-0 process stripped of
// CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER passes mode checks
// the kernel would have failed; mount with default_permissions where such
// processes must be held to mode bits.
//
// Privileges go as on a local filesystem (killpriv.go): a write,
// truncate, O_TRUNC open or fallocate by a caller without CAP_FSETID,
// and every chown of a non-directory, clear set-user-ID, set-group-ID
// when the group may execute, and the file capability. The volume clears
// them on disk; the kernel, which caches the mode for the attribute
// timeout and takes set-user-ID from that cache at exec, learns it before
// the call returns: from the reply of a SETATTR, and from a
// NOTIFY_INVAL_INODE (attributes only) the adapter sends before it
// replies to a WRITE, OPEN or CREATE with O_TRUNC, or FALLOCATE that
// cleared something. Nothing is sent when there was nothing to clear. The
// kernel does not say whether a fallocate's caller holds CAP_FSETID: the
// adapter clears unless the caller is uid 0 with it (read from
// /proc/PID/status), so a caller other than root that holds it loses bits
// ext4 would keep. Set-group-ID without group execute stays on a write or
// chown by a caller outside the file's group, where Linux 6 clears it:
// without group execute the bit grants nothing at exec.
//
// # Errors
//
// Volume errors wrap a syscall.Errno (often under %w layers); status in
// errno.go finds it with errors.As and is the only place an error becomes a
// FUSE status. go-fuse's ToStatus is not used: it does not unwrap, and it
// maps unknown errors to ENOSYS, which makes the kernel stop sending that
// operation for the rest of the mount. An error without an errno becomes
// EIO and is logged with the operation and inode; so is every EIO (a bad
// device or corrupt metadata). A negative LOOKUP is not an error: it is
// answered as a negative entry the kernel may cache. Device errors reach
// the request that needed the device (READ, WRITE, FSYNC, FLUSH under
// FlushOnClose); after a device error writing metadata the volume answers
// every change EROFS and every FSYNC EIO until it is mounted again
// (volume doc, "# Device errors"; fault_test.go shows it through a mount).
//
// # Caching
//
// smallfs is the only writer of its device and every change passes through
// this kernel, which keeps its caches in step, so the caches are used
// fully: entry, attribute and negative-entry timeouts default to an hour
// (Options; negative values turn caching off). SETATTR replies carry the
// attribute timeout too (go-fuse's own nodes do not), so a stat after
// chmod, utimes or truncate costs no GETATTR. Open files keep their page
// cache (FOPEN_KEEP_CACHE), and AUTO_INVAL_DATA is turned off: every
// change of a file's data is written through this page cache, so a new
// mtime in a GETATTR reply tells the kernel nothing it does not hold, and
// a file this mount just wrote is read back without a READ (a size the
// kernel did not expect still drops the pages). Symlink targets are cached
// by the kernel, since a target never changes.
//
// close(2) costs no round trip: every open gets FOPEN_NOFLUSH, and the
// data is written back (delayed allocation) at RELEASE, which the kernel
// sends after close(2) has returned, or earlier by the volume's commit
// and dirty limits. Write-back errors then reach fsync, not close, as on
// kernel ext4 or XFS (one at RELEASE itself is logged, and the volume
// keeps the data for its next commit to retry); ENOSPC still comes from
// write(2), where the volume reserves the space. Options.FlushOnClose (flush_on_close=on) keeps the
// FLUSH of writable opens for callers who want errors at close, NFS
// style, at one synchronous round trip per close. A file stat'ed before
// its write-back counts its reserved blocks in st_blocks, as ext4 does.
//
// O_TRUNC travels with OPEN (ATOMIC_O_TRUNC) instead of costing a SETATTR
// first. Privileges are cleared by the server (HANDLE_KILLPRIV_V2: the
// adapter passes the kernel's flags to the volume, which clears them in the
// same transaction as the write or change, and tells the kernel when it
// did; see "# Permissions" and killpriv.go), so the kernel stops asking
// for security.capability before every write to a cached inode. Not negotiated, deliberately: the writeback cache (the kernel
// would own mtime and size and send writes long after close). No-open is an
// option, below. docs/FUSE.md has the measurements behind each choice.
//
// # No-open mode
//
// With Options.NoOpen the adapter answers OPEN and FLUSH with ENOSYS. The
// kernel then remembers, for the whole mount, that opening a regular file
// and closing it need no round trip (fc->no_open, fc->no_flush): it sends
// no OPEN, FLUSH or RELEASE (it drops RELEASE even for files opened by
// CREATE), READ and WRITE carry file handle 0, and the page cache is kept
// across opens. A read of a cached file is then one READ instead of OPEN,
// READ, RELEASE; an append one WRITE instead of three.
// The first create and the first open of a mount still send FLUSH and
// OPEN once, to be told ENOSYS.
//
// The volume keeps written data per inode but only while a Handle is
// open, so the adapter keeps one open volume handle per inode written
// through (inodefiles.go): CREATE's, or one opened read-write by the first
// WRITE. A READ uses it when there is one, else a read-only handle opened
// for that request, so reading makes the adapter keep nothing. The handle
// is written back and closed at FORGET (the kernel forgets an inode only
// once no file on it is open), at unmount, or, oldest first, once more
// than NoOpenFiles (4096) inodes are held. Dirty memory is the volume's to
// bound, for these handles as for any: its DirtyLimit (64 MiB) and
// background write-back past DirtyBackground, its DirtyExpire, periodic
// commit, per-inode DirtyThreshold and fsync write the data back while the
// handle stays open. Memory: a few hundred bytes per held inode besides
// its dirty data, so about 1 MiB at the limit.
//
// What changes for users: as in the default mode, close(2) reports no
// write-back errors (ENOSPC comes from write(2), where space is reserved;
// an I/O error of a later write-back reaches fsync, is logged, and the
// data stays dirty for the next commit to retry), and FlushOnClose cannot
// bring them back. O_TRUNC on an existing file costs
// a SETATTR, because ATOMIC_O_TRUNC is not negotiated: with it and no
// OPEN the kernel would truncate only its own cache. DropCache cannot be
// combined with it (no OPEN reply to carry the flag). O_APPEND needs
// nothing from the daemon: the kernel picks the offset from its size
// under the inode lock, as in the default mode. Zero-copy reads work the
// same with file handle 0. Privilege clearing (killpriv.go) keys on the
// request flags, not on a handle, so it is unchanged.
//
// # Directory listings
//
// READDIRPLUS returns each entry's attributes with its name, so ls -l needs
// no LOOKUP per entry, but it makes the kernel instantiate an inode per
// entry even for a plain ls. The default, ReadDirPlusAuto, lets the kernel
// choose per listing (READDIRPLUS_AUTO): plus for the first batch and then
// only while the lister stats what it lists. The figures for a directory of
// 10^5 entries are in docs/FUSE.md.
//
// # Reads
//
// A read that the volume maps to one contiguous device extent is answered
// with a devRead (devread.go) on the device's descriptor at the physical
// offset: go-fuse splices it to the kernel without copying through user
// space, or, where it does not splice (the rings' ProtocolServer, a
// splice that failed), preads it straight into the reply buffer. The
// range is read after the handler has returned, so the volume's read
// plan pins its blocks (volume.ReadPlan) until go-fuse calls the reply's
// Done, once the reply is written or dropped; a block freed meanwhile is
// not reused before that, and the reply never carries another file's
// bytes. go-fuse calls Done on every path of both transports for a reply
// with a payload and an OK status, which is the only kind Read returns.
// The replies are pooled: a READ allocates nothing of its own.
// Everything else — inline files, dirty data, holes, and every read of a
// volume that verifies data checksums — the volume reads into the
// request's reply buffer (on io_uring the ring's payload buffer itself),
// and the reply is a bytesRead (devread.go, pooled too): go-fuse writes it
// with one writev on /dev/fuse rather than trying to splice it, and the
// rings copy nothing more. Without a device descriptor (device.Mem), reads
// go through ReadAt into the same buffer, under the file's data lock.
//
// # Transports
//
// Requests reach the adapter through /dev/fuse (go-fuse's server: a
// read(2) for each request and a writev(2) for each reply) or, with
// Options.Uring, through io_uring (package fs/fuse/uring): the kernel's
// FUSE over io_uring, Linux 6.14 and later, when the fuse module's
// enable_uring parameter is on. INIT says whether the connection uses the
// rings; Mount then registers entries on the kernel's queue of every
// CPU before anything can send a request, since the kernel holds every
// request until each queue has one. A fuse.ProtocolServer over the same
// fileSystem decodes the rings' requests, set up with the INIT the
// kernel sent; go-fuse's server goes on reading FORGET and INTERRUPT,
// which the kernel still sends through /dev/fuse; notifications to the
// kernel (killpriv.go) are written there too, which the kernel accepts
// whatever carries the requests. The descriptor the
// rings use is a duplicate of go-fuse's, taken through reflection
// (ringtransport.go), as go-fuse v2.12.1 does not export it.
//
// A ring's thread is pinned to its CPU: the kernel queues a request on
// the caller's CPU while the caller sleeps, so the answer is computed
// there. That pinning, and a Go P per queue (smallfs procs=auto takes
// every CPU, and one more for the goroutines that answer off the
// queues), are where the gain comes from: unpinned, the rings
// were slower than /dev/fuse. An INTERRUPT for a request the rings serve
// is not found by go-fuse's server, which answers EAGAIN, and the kernel
// sends it again until the request ends: no request here waits on
// anything an interrupt could cut short.
//
// # Locking and concurrency
//
// go-fuse serves each request on its own goroutine (the rings: on the
// queue's goroutine, FSYNC, FSYNCDIR, FLUSH and SETLKW on one of their
// own). The adapter takes two
// locks, never together: the handle table's RWMutex and, in no-open mode,
// the inode files' mutex, each held only to index or change its table and
// never across a volume call. A no-open file in use by a request is closed
// by the last of the table and its requests to let go (a count under the
// mutex), so FORGET or a write-back never closes a handle under a READ.
// Everything else is the volume's (see its doc.go). Nothing in this package
// touches the mountpoint from a serving goroutine, which could deadlock
// (see go-fuse's fs/api.go).
//
// # Accounting
//
// Layer "fuse" of the accounting registry (Options.Accounting, default
// accounting.Default): counters "op-NAME" for requests, "err-NAME" for
// requests that failed, "absent-NAME" for those answered that what they
// asked for is not there (a LOOKUP of a missing name, a GETXATTR of an
// attribute the inode lacks or a label the mount does not support: the
// kernel asks security.capability before the first write to each file;
// these are answers, not errors) and "ns-NAME" for the nanoseconds spent
// serving them, by the kernel's opcode name (op-LOOKUP, err-RENAME,
// ns-WRITE, ...), and the record "request" whose live count is the requests
// in flight. Server.Latencies adds a log2 histogram per opcode (OpLatency:
// count, total, 30 buckets from under 1 µs to over 9 min, Mean, Quantile)
// for `smallfs stats`. Latency is the adapter's service time: from the
// start of its method to the reply handed to go-fuse, volume work included,
// the kernel's queueing and go-fuse's decoding and reply write not. The
// counters are resolved once at mount; a request costs two clock reads and
// five atomic additions, six when it fails or finds nothing, and no
// allocation: a small fraction of a kernel round trip
// (BenchmarkRequestAccounting).
//
// # Costs
//
// Per request the adapter adds a handful of field copies to the volume call
// and no allocation (GETATTR and LOOKUP are asserted at zero allocations,
// volume included); a READ or WRITE adds one shared lock of the handle
// table, or in no-open mode two short exclusive ones of the inode files'
// table (a READ of an inode not held also opens and closes a volume handle:
// two exclusive metadata locks and a small allocation). Memory: 8 bytes per
// open file plus go-fuse's request buffers, bounded by
// Options.MaxInflightRequestBytes (64 MiB by default, about 60 requests of
// MaxWrite = 1 MiB).
//
// # Figures
//
// docs/PERFORMANCE.md ("The mounted filesystem", "The FUSE adapter") and
// docs/FUSE.md hold the measurements behind these choices: the daemon's
// memory per file, listings by READDIRPLUS policy, requests per operation
// in each mode. TestRoundTrips (tests) asserts the requests per operation
// of the default and the no-open mode.
package fuse
