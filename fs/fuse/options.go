package fuse

import (
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/accounting"
	"github.com/smallfs/smallfs/internal/nolog"
)

// ReadDirPlus chooses how directory listings are answered; see
// "# Directory listings" in doc.go for the figures behind the default.
type ReadDirPlus uint8

const (
	// ReadDirPlusAuto lets the kernel decide per listing (FUSE
	// READDIRPLUS_AUTO): the first batch comes with attributes, later ones
	// only when the lister stats the entries (ls -l, not ls).
	ReadDirPlusAuto ReadDirPlus = iota
	// ReadDirPlusAlways answers every listing with attributes.
	ReadDirPlusAlways
	// ReadDirPlusNever answers listings with names only; stat costs a
	// LOOKUP per entry.
	ReadDirPlusNever
)

func (p ReadDirPlus) String() string {
	switch p {
	case ReadDirPlusAuto:
		return "auto"
	case ReadDirPlusAlways:
		return "always"
	case ReadDirPlusNever:
		return "never"
	}
	return fmt.Sprintf("ReadDirPlus(%d)", uint8(p))
}

// UringMode chooses the transport of a mount's requests.
type UringMode uint8

const (
	// UringOff reads requests from /dev/fuse.
	UringOff UringMode = iota
	// UringAuto uses io_uring where the kernel offers it, else /dev/fuse.
	UringAuto
	// UringOn uses io_uring, and fails the mount where the kernel does
	// not offer it.
	UringOn
)

func (m UringMode) String() string {
	switch m {
	case UringOff:
		return "off"
	case UringAuto:
		return "auto"
	case UringOn:
		return "on"
	}
	return fmt.Sprintf("UringMode(%d)", uint8(m))
}

// Permissions chooses who checks mode bits; see "# Permissions" in doc.go.
type Permissions uint8

const (
	// PermissionsAuto has the kernel check mode bits (default_permissions)
	// unless only root can reach the mount: mounted by root, without
	// AllowOther, with the fuse module's allow_sys_admin_access off. Mode
	// bits do not stop root but for execute, which the kernel checks
	// either way, so there the kernel's checks would decide nothing and
	// cost a GETATTR of a directory after every change in it.
	PermissionsAuto Permissions = iota
	// PermissionsKernel always mounts with default_permissions.
	PermissionsKernel
)

func (p Permissions) String() string {
	switch p {
	case PermissionsAuto:
		return "auto"
	case PermissionsKernel:
		return "kernel"
	}
	return fmt.Sprintf("Permissions(%d)", uint8(p))
}

// Options tunes a mount. The zero value gives the defaults stated on each
// field; Mount fills them in on its own copy and rejects bad values, naming
// every bad field at once.
type Options struct {
	// EntryTimeout is how long the kernel may trust a name it looked up.
	// smallfs is the only writer of its device and every change passes
	// through the kernel, which updates its caches as it goes, so a long
	// timeout is safe. Default 1h; negative means 0 (ask every time).
	EntryTimeout time.Duration
	// AttrTimeout is how long the kernel may trust an inode's attributes.
	// Default 1h; negative means 0.
	AttrTimeout time.Duration
	// NegativeTimeout is how long the kernel may remember that a name does
	// not exist. Default 1h; negative means 0 (no negative caching).
	NegativeTimeout time.Duration
	// ReadDirPlus is the listing policy. Default ReadDirPlusAuto.
	ReadDirPlus ReadDirPlus
	// Permissions chooses whether the kernel checks mode bits
	// (default_permissions). Default PermissionsAuto: it does wherever
	// anyone but root can reach the mount.
	Permissions Permissions
	// AllowOther lets users other than the mounting one see the mount.
	// Default false.
	AllowOther bool
	// ReadOnly mounts read-only; the kernel refuses every change (EROFS).
	// Default false; MS_RDONLY in MountFlags sets it too.
	ReadOnly bool
	// MountFlags are generic mount flags, MS_* bits of mount(2), applied
	// by the mount itself: MS_NOEXEC, MS_NOATIME, MS_NODIRATIME,
	// MS_RELATIME, MS_STRICTATIME, MS_LAZYTIME (1<<25), MS_SYNCHRONOUS,
	// MS_DIRSYNC, MS_RDONLY, MS_NOSUID, MS_NODEV. Other bits are refused.
	// Default 0: the kernel's defaults (relatime), plus nosuid and nodev
	// unless Suid or Dev.
	MountFlags uintptr
	// Suid honours set-user-ID and set-group-ID bits of files on the
	// mount. Default false (nosuid, as fusermount3 mounts); true needs
	// root, and contradicts MS_NOSUID in MountFlags.
	Suid bool
	// Dev lets device files on the mount be opened. Default false
	// (nodev); true needs root, and contradicts MS_NODEV in MountFlags.
	Dev bool
	// SecurityLabels passes security.* extended attributes through to
	// the volume. Default false: the kernel's queries for them
	// (security.capability before writes) are answered "not supported"
	// without a trip to the volume, and setting them fails with
	// EOPNOTSUPP. POSIX ACLs (system.posix_acl_*) are not supported
	// either way: nothing would enforce them (xattr.go).
	SecurityLabels bool
	// DropCache makes the kernel drop a file's page cache at every open.
	// Default false: the cache is kept across opens (FOPEN_KEEP_CACHE),
	// and the kernel still drops it when it sees the size change.
	DropCache bool
	// FlushOnClose writes a file's data back at every close(2) of a
	// writable open (a FLUSH request), so close reports write-back errors,
	// as NFS does. Default false: every open gets FOPEN_NOFLUSH, close(2)
	// costs no round trip, and the data is written back at RELEASE, which
	// the kernel sends after close(2) returns; errors then reach fsync, as
	// with kernel ext4 or XFS. ENOSPC still comes from write(2) either way
	// (space is reserved there).
	FlushOnClose bool
	// NoOpen tells the kernel that OPEN and FLUSH are not implemented, so
	// it opens and closes regular files without a round trip (no OPEN,
	// FLUSH or RELEASE; READ and WRITE carry file handle 0). Delayed
	// allocation then happens at fsync, the periodic commit, the volume's
	// per-inode threshold and background write-back (its DirtyLimit bounds
	// dirty memory), FORGET, or when the adapter's open files pass
	// NoOpenFiles; close(2) reports no write-back
	// error (ENOSPC still comes from write(2)). O_TRUNC costs a SETATTR.
	// Default false. See "# No-open mode" in doc.go.
	NoOpen bool
	// NoOpenFiles bounds the inodes no-open mode keeps open for writing;
	// past it the oldest is written back and closed. Default 4096.
	NoOpenFiles int
	// Uring chooses whether requests come through io_uring (FUSE over
	// io_uring, Linux 6.14+ with the fuse module's enable_uring on)
	// instead of read(2) and writev(2) on /dev/fuse: one system call per
	// request, on a thread per CPU. Default UringOff. See package
	// fs/fuse/uring and "# Transports" in doc.go.
	Uring UringMode
	// MaxWrite is the largest READ or WRITE request, in bytes. Default
	// 1 MiB, the kernel's ceiling; at least 4096.
	MaxWrite int
	// MaxBackground bounds the kernel's asynchronous requests (readahead,
	// writeback) in flight. Default 64.
	MaxBackground int
	// MaxInflightRequestBytes bounds the memory go-fuse holds for requests
	// being read or served, each costing about MaxWrite. Default 64 MiB.
	MaxInflightRequestBytes int
	// FsName is what df shows as the filesystem (usually the device).
	// Default "smallfs".
	FsName string
	// Debug logs every request and reply at debug level.
	Debug bool
	// Accounting receives the adapter's figures (layer "fuse": requests
	// and errors by opcode, requests in flight). Default
	// accounting.Default; tests pass their own registry to see one mount.
	Accounting *accounting.Registry
	// Logger receives mount lifecycle events, failures and the debug
	// trace. Default: discard.
	Logger logrus.FieldLogger
}

// withDefaults returns a copy of o with defaults filled in, or an error
// naming every invalid field.
func (o Options) withDefaults() (Options, error) {
	var errs []error
	o.EntryTimeout = timeoutDefault(o.EntryTimeout)
	o.AttrTimeout = timeoutDefault(o.AttrTimeout)
	o.NegativeTimeout = timeoutDefault(o.NegativeTimeout)
	if o.Uring > UringOn {
		errs = append(errs, fmt.Errorf("option Uring %d is not a mode: %w", o.Uring, ErrInvalidOption))
	}
	if o.Permissions > PermissionsKernel {
		errs = append(errs, fmt.Errorf("Permissions %d is not a policy: %w", o.Permissions, ErrInvalidOption))
	}
	if o.ReadDirPlus > ReadDirPlusNever {
		errs = append(errs, fmt.Errorf("ReadDirPlus %d is not a policy: %w", o.ReadDirPlus, ErrInvalidOption))
	}
	bound(&errs, "MaxWrite", &o.MaxWrite, 1<<20, 4096, 1<<20)
	bound(&errs, "MaxBackground", &o.MaxBackground, 64, 1, 1<<16-1)
	bound(&errs, "MaxInflightRequestBytes", &o.MaxInflightRequestBytes, 64<<20, 1, math.MaxInt)
	bound(&errs, "NoOpenFiles", &o.NoOpenFiles, 4096, 1, math.MaxInt)
	if o.NoOpen && o.DropCache {
		// Without OPEN there is no reply to carry "drop the cache".
		errs = append(errs, fmt.Errorf("DropCache needs OPEN, which NoOpen removes: %w", ErrInvalidOption))
	}
	if o.NoOpen && o.FlushOnClose {
		errs = append(errs, fmt.Errorf("FlushOnClose needs FLUSH, which NoOpen removes: %w", ErrInvalidOption))
	}
	if err := o.checkMountFlags(); err != nil {
		errs = append(errs, err)
	}
	if o.MountFlags&syscall.MS_RDONLY != 0 {
		o.ReadOnly = true
	}
	if o.FsName == "" {
		o.FsName = "smallfs"
	}
	if o.Accounting == nil {
		o.Accounting = accounting.Default
	}
	if o.Logger == nil {
		o.Logger = nolog.New()
	}
	return o, errors.Join(errs...)
}

// bound sets *v to def when it is 0, and otherwise adds an error naming
// the field to errs unless it lies in [lo, hi].
func bound[T int | int64](errs *[]error, name string, v *T, def, lo, hi T) {
	switch {
	case *v == 0:
		*v = def
	case *v < lo:
		*errs = append(*errs, fmt.Errorf("%s %d is below %d: %w", name, *v, lo, ErrInvalidOption))
	case *v > hi:
		*errs = append(*errs, fmt.Errorf("%s %d is above %d: %w", name, *v, hi, ErrInvalidOption))
	}
}

// timeoutDefault maps 0 to the default and negative to "no caching".
func timeoutDefault(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return time.Hour
	case d < 0:
		return 0
	}
	return d
}
