package fuse

import (
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/fuse/uring"
	"github.com/smallfs/smallfs/fs/volume"
)

// ErrInvalidOption is returned by Mount when a field of Options is out of
// range; the error names every such field.
var ErrInvalidOption = errors.New("invalid mount option")

// Server is a mounted smallfs: the kernel's requests on the mountpoint are
// served from the volume until the filesystem is unmounted.
type Server struct {
	fuse       *fuse.Server
	fs         *fileSystem
	mountpoint string
	conn       uint32        // the kernel's connection number, fusectl's directory name
	served     chan struct{} // closed when the serve loop (and the rings) have ended
	unmount    sync.Mutex    // serialises Unmount and Abort

	rings *uring.Transport // nil unless Options.Uring took effect
	// transportWhy says why requests come through the rings or through
	// /dev/fuse, for an operator (TransportWhy).
	transportWhy string
}

// Mount mounts vol on mountpoint and returns once the filesystem answers
// requests. dev is the device vol was opened on; when it has a file
// descriptor (device.FdDevice), reads of whole extents are answered
// zero-copy from it.
//
// vol must have been opened with TrackLookups: the kernel's references
// keep inodes alive. The caller keeps ownership of vol: once Wait returns
// (after Unmount, or an unmount from outside such as umount(8)), the
// caller closes it, which flushes, checkpoints and marks it clean. Mount
// must run as root or with fusermount3 installed.
func Mount(mountpoint string, vol *volume.Volume, dev device.Device, opts Options) (*Server, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("fuse: mount %s: %w", mountpoint, err)
	}
	asked := o.Uring
	why := "uring=off: /dev/fuse, as asked"
	if o.Uring != UringOff {
		if err := uring.Available(); err != nil {
			if o.Uring == UringOn {
				return nil, fmt.Errorf("fuse: mount %s: %w", mountpoint, err)
			}
			// Said once per mount: the rings serve more files/s
			// (docs/PERFORMANCE.md), and the switch is the admin's.
			o.Logger.WithError(err).Info("requests come through /dev/fuse")
			why = fmt.Sprintf("uring=%s, but %v", asked, err)
			o.Uring = UringOff
		}
	}
	fs := newFileSystem(vol, dev, o)
	srv, mo, err := newServer(fs.rawFileSystem(), mountpoint, &o)
	if err != nil {
		return nil, fmt.Errorf("fuse: mount %s: %w", mountpoint, err)
	}
	s := &Server{fuse: srv, fs: fs, mountpoint: mountpoint, served: make(chan struct{}), transportWhy: why}
	// The connection number is the minor of the mount's device; Abort
	// needs it. DONT_SYNC: the superblock has it, so no request is sent.
	var st unix.Statx_t
	statErr := unix.Statx(unix.AT_FDCWD, mountpoint, unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE, &st)
	s.conn = st.Dev_minor
	var ringErr error
	if statErr == nil {
		ringErr = s.startRings(&o)
	}
	switch {
	case s.rings != nil:
		s.transportWhy = fmt.Sprintf("uring=%s and the kernel offers FUSE over io_uring", asked)
	case o.Uring != UringOff:
		s.transportWhy = fmt.Sprintf("uring=%s, but the kernel did not offer FUSE over io_uring when the mount began", asked)
	}
	go func() {
		srv.Serve()
		if s.rings != nil {
			if err := s.rings.Wait(); err != nil {
				o.Logger.WithError(err).Warn("io_uring queues ended on an error")
			}
		}
		close(s.served)
	}()
	if err := errors.Join(statErr, ringErr); err != nil {
		// Under io_uring without rings nothing could be served: end the
		// connection rather than ask it to unmount.
		if aerr := s.Abort(); aerr != nil {
			_ = s.Unmount()
		}
		return nil, fmt.Errorf("fuse: mount %s: %w", mountpoint, err)
	}
	if err := srv.WaitMount(); err != nil {
		_ = s.Unmount()
		return nil, fmt.Errorf("fuse: mount %s: %w", mountpoint, err)
	}
	o.Logger.WithFields(logrus.Fields{
		"mountpoint": mountpoint, "entry_timeout": o.EntryTimeout, "attr_timeout": o.AttrTimeout,
		"negative_timeout": o.NegativeTimeout, "readdirplus": o.ReadDirPlus, "read_only": o.ReadOnly,
		"max_write": o.MaxWrite, "zero_copy_reads": fs.devFd >= 0, "no_open": o.NoOpen,
		"uring": s.rings != nil, "permissions": o.Permissions,
		"kernel_permissions": slices.Contains(mo.Options, "default_permissions"),
	}).Info("mounted")
	return s, nil
}

// startRings starts the io_uring transport if INIT agreed on it. NewServer
// has answered INIT, so the kernel now holds every request until each
// queue has an entry: this runs before anything (the serve loop,
// WaitMount's probe) sends one.
func (s *Server) startRings(o *Options) error {
	switch {
	case o.Uring == UringOff:
		return nil
	case s.fuse.KernelSettings().Flags64()&fuse.CAP_OVER_IO_URING != 0:
		var err error
		s.rings, err = newRings(s.fuse, s.fs.rawFileSystem(), o, func(err error) {
			// Requests for that CPU's queue would wait forever: end the
			// connection, as a daemon that died would, but with the
			// volume intact.
			o.Logger.WithError(err).Error("an io_uring queue failed; aborting the mount")
			if aerr := s.Abort(); aerr != nil {
				o.Logger.WithError(aerr).Error("abort after the io_uring failure")
			}
		})
		return err
	case o.Uring == UringOn:
		return fmt.Errorf("%w: the kernel did not offer it at INIT", uring.ErrUnavailable)
	}
	return nil
}

// newServer mounts with mount(2), which takes every generic flag as a bit,
// and falls back to fusermount3, which takes them as names, when the
// kernel refuses an unprivileged caller. It returns the options it
// mounted with.
func newServer(fs fuse.RawFileSystem, mountpoint string, o *Options) (*fuse.Server, *fuse.MountOptions, error) {
	mo := o.mountOptions(true)
	srv, err := fuse.NewServer(fs, mountpoint, mo)
	if errors.Is(err, syscall.EPERM) {
		mo = o.mountOptions(false)
		srv, err = fuse.NewServer(fs, mountpoint, mo)
	}
	return srv, mo, err
}

// mountOptions translates Options into go-fuse's, for mount(2) (direct)
// or fusermount3.
func (o *Options) mountOptions(direct bool) *fuse.MountOptions {
	mo := &fuse.MountOptions{
		AllowOther:              o.AllowOther,
		MaxBackground:           o.MaxBackground,
		MaxInflightRequestBytes: o.MaxInflightRequestBytes,
		MaxWrite:                o.MaxWrite,
		FsName:                  o.FsName,
		Name:                    "smallfs",
		// Symlink targets never change (a new target is a new inode), so
		// the kernel may keep them.
		EnableSymlinkCaching: true,
		DisableReadDirPlus:   o.ReadDirPlus == ReadDirPlusNever,
		Debug:                o.Debug,
		Logger:               log.New(logWriter{o.Logger, o.Debug}, "", 0),
	}
	o.applyMountFlags(mo, direct)
	// Privileges are cleared here, not after a GETXATTR before every
	// write (killpriv.go). O_TRUNC travels with OPEN (the volume
	// truncates there) instead of costing a SETATTR before it, unless
	// there is no OPEN: the kernel would then truncate only its cache.
	mo.ExtraCapabilities = fuse.CAP_HANDLE_KILLPRIV_V2
	if !o.NoOpen {
		mo.ExtraCapabilities |= fuse.CAP_ATOMIC_O_TRUNC
	}
	if o.Uring != UringOff {
		mo.ExtraCapabilities |= fuse.CAP_OVER_IO_URING
	}
	// Every change of a file's data passes through this mount's page
	// cache, so a new mtime from GETATTR says nothing the kernel does not
	// know: without AUTO_INVAL_DATA a file just written is read back from
	// the cache (a size change still drops it).
	mo.DisabledCapabilities = fuse.CAP_AUTO_INVAL_DATA
	if o.ReadDirPlus == ReadDirPlusAuto {
		mo.ExtraCapabilities |= fuse.CAP_READDIRPLUS_AUTO
	}
	// The mount's owner is the user_id the kernel admits without
	// allow_other: go-fuse passes the effective uid to mount(2),
	// fusermount3 the real one.
	owner := os.Getuid()
	if direct {
		owner = os.Geteuid()
	}
	if o.kernelPermissions(owner) {
		mo.Options = append(mo.Options, "default_permissions")
	}
	return mo
}

// sysAdminAccessParam is the fuse module's switch that admits processes
// with CAP_SYS_ADMIN to every FUSE mount, whatever their uid.
const sysAdminAccessParam = "/sys/module/fuse/parameters/allow_sys_admin_access"

// kernelPermissions reports whether a mount owned by uid needs the
// kernel's mode checks: unless Permissions says so, only where a caller
// other than root can reach it. Without allow_other the kernel admits
// only callers whose every uid and gid are the owner's, unless the
// module's allow_sys_admin_access is on; it is read here, once, and taken
// as on when it cannot be read.
func (o *Options) kernelPermissions(uid int) bool {
	if o.Permissions == PermissionsKernel || o.AllowOther || uid != 0 {
		return true
	}
	b, err := os.ReadFile(sysAdminAccessParam)
	if errors.Is(err, os.ErrNotExist) {
		return false // a kernel that predates the switch
	}
	return err != nil || strings.TrimSpace(string(b)) != "N"
}

// logWriter carries go-fuse's log lines (its request trace under Debug,
// otherwise only its complaints) into the logrus logger.
type logWriter struct {
	log   logrus.FieldLogger
	debug bool
}

func (w logWriter) Write(p []byte) (int, error) {
	msg := strings.TrimRight(string(p), "\n")
	if w.debug {
		w.log.Debug(msg)
	} else {
		w.log.Warn(msg)
	}
	return len(p), nil
}

// Unmount unmounts the filesystem and waits until the last request has been
// served. It fails (EBUSY) while files on the mount are open or a process
// has its working directory there. Unmounting an already unmounted Server
// returns nil.
func (s *Server) Unmount() error {
	s.unmount.Lock()
	defer s.unmount.Unlock()
	if s.ended() {
		return nil
	}
	if err := s.fuse.Unmount(); err != nil {
		return fmt.Errorf("fuse: unmount %s: %w", s.mountpoint, err)
	}
	<-s.served
	return nil
}

// ended reports whether the serve loop has ended.
func (s *Server) ended() bool {
	select {
	case <-s.served:
		return true
	default:
		return false
	}
}

// Wait blocks until the filesystem is unmounted, by Unmount or from
// outside, and the last request has been served. Open files the kernel
// never released have been released by then.
func (s *Server) Wait() { <-s.served }

// Done is closed when Wait would return.
func (s *Server) Done() <-chan struct{} { return s.served }

// SetReadOnly tells the server that the kernel remounted the mount
// read-only (true) or read-write again (false). The kernel then refuses
// every change itself, but access times are the daemon's to keep: while
// read-only, reads and listings record none, so the device is not written.
func (s *Server) SetReadOnly(ro bool) { s.fs.remountedRO.Store(ro) }

// Mountpoint returns the directory the filesystem is mounted on.
func (s *Server) Mountpoint() string { return s.mountpoint }
