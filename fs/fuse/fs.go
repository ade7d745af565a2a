package fuse

import (
	"errors"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/sirupsen/logrus"

	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/volume"
)

// fileSystem is the fuse.RawFileSystem over one volume. It holds no node
// tree: node IDs are volume inode numbers and the kernel's lookup counts
// live in the volume's inode records. Its only state is the table of open
// files and the counters.
type fileSystem struct {
	fuse.RawFileSystem // ENOSYS for what smallfs does not serve (locks, ioctl, ...)

	vol     *volume.Volume
	devFd   int // device file descriptor for zero-copy reads; -1 if none
	opts    Options
	log     logrus.FieldLogger
	files   handleTable[volume.Handle]
	dirs    handleTable[dirListing]
	inodes  *inodeFiles // no-open mode's open files, by inode; nil otherwise
	stats   *counters
	entryTO timeout
	attrTO  timeout
	negTO   timeout
	// When a read that reaches the daemon, or a listing, updates the
	// access time (mount flags: relatime, strictatime, noatime, nodiratime).
	fileAtime, dirAtime volume.AtimePolicy
	// remountedRO: the kernel remounted the mount read-only (Server.
	// SetReadOnly), so accesses record nothing, as at a ro mount.
	remountedRO atomic.Bool
	// notifier tells the kernel of changes it did not ask for (cleared
	// privileges, killpriv.go); set by Init before requests are served,
	// nil when nothing is mounted.
	notifier inodeNotifier
}

// timeout is a cache lifetime split the way the kernel wants it, computed
// once rather than per reply.
type timeout struct {
	sec  uint64
	nsec uint32
}

func splitTimeout(d time.Duration) timeout {
	return timeout{sec: uint64(d / time.Second), nsec: uint32(d % time.Second)}
}

func newFileSystem(vol *volume.Volume, dev device.Device, o Options) *fileSystem {
	fs := &fileSystem{
		RawFileSystem: fuse.NewDefaultRawFileSystem(),
		vol:           vol,
		devFd:         -1,
		opts:          o,
		log:           o.Logger,
		entryTO:       splitTimeout(o.EntryTimeout),
		attrTO:        splitTimeout(o.AttrTimeout),
		negTO:         splitTimeout(o.NegativeTimeout),
		stats:         newCounters(o.Accounting),
	}
	if o.NoOpen {
		fs.inodes = newInodeFiles(o.NoOpenFiles)
	}
	fs.fileAtime, fs.dirAtime = o.atimePolicies()
	// A volume that verifies its reads cannot have the kernel splice a
	// device range after the reply: reads are copied into the request's
	// buffer, checked.
	if fd, ok := dev.(device.FdDevice); ok && !vol.VerifiesReads() {
		fs.devFd = int(fd.Fd())
	}
	return fs
}

func (fs *fileSystem) String() string { return "smallfs" }

// OnUnmount runs after the last request. Files the kernel never released
// (a lazy or forced unmount) and no-open mode's files are released here,
// so the volume can be closed cleanly.
func (fs *fileSystem) OnUnmount() {
	for fh, h := range fs.files.drain() {
		if err := h.Release(); err != nil {
			fs.log.WithField("fh", fh).WithError(err).Error("release at unmount")
		}
	}
	if fs.inodes != nil {
		for f := range fs.inodes.drain() {
			fs.closeHandle(f.ino, f.h)
		}
	}
}

// begin counts a request; every served method calls it first and returns
// through done.
func (fs *fileSystem) begin(op opcode) time.Time { return fs.stats.begin(op) }

// done counts the end of a request begun at start and converts its error.
func (fs *fileSystem) done(op opcode, start time.Time, ino uint64, err error) fuse.Status {
	st := fs.status(op, ino, err)
	fs.stats.end(op, start, outcomeOf(op, st))
	return st
}

func caller(h *fuse.InHeader) volume.Context {
	return volume.Context{UID: h.Uid, GID: h.Gid, Pid: h.Pid}
}

// setEntry fills an entry reply: node ID and generation from the volume,
// and the cache lifetimes.
func (fs *fileSystem) setEntry(out *fuse.EntryOut, a *volume.Attr) {
	out.NodeId = uint64(a.Ino)
	out.Generation = a.Gen
	out.EntryValid, out.EntryValidNsec = fs.entryTO.sec, fs.entryTO.nsec
	out.AttrValid, out.AttrValidNsec = fs.attrTO.sec, fs.attrTO.nsec
	setAttr(&out.Attr, a)
}

// setAttrOut fills a GETATTR or SETATTR reply. go-fuse leaves SETATTR's
// lifetime at 0, which costs a GETATTR after every chmod or truncate.
func (fs *fileSystem) setAttrOut(out *fuse.AttrOut, a *volume.Attr) {
	out.AttrValid, out.AttrValidNsec = fs.attrTO.sec, fs.attrTO.nsec
	setAttr(&out.Attr, a)
}

func setAttr(out *fuse.Attr, a *volume.Attr) {
	out.Ino = uint64(a.Ino)
	out.Size = a.Size
	out.Blocks = a.Blocks
	out.Atime, out.Atimensec = splitTime(a.Atime)
	out.Mtime, out.Mtimensec = splitTime(a.Mtime)
	out.Ctime, out.Ctimensec = splitTime(a.Ctime)
	out.Mode = a.Mode
	out.Nlink = a.Nlink
	out.Uid = a.UID
	out.Gid = a.GID
	out.Rdev = a.Rdev
	out.Blksize = a.Blksize
}

// splitTime turns Unix nanoseconds into the kernel's seconds (a signed
// value carried in a uint64) and nanoseconds in [0, 1e9).
func splitTime(ns int64) (uint64, uint32) {
	sec, nsec := ns/1e9, ns%1e9
	if nsec < 0 {
		sec, nsec = sec-1, nsec+1e9
	}
	return uint64(sec), uint32(nsec)
}

// joinTime is splitTime's inverse.
func joinTime(sec uint64, nsec uint32) int64 {
	return int64(sec)*1e9 + int64(nsec)
}

// accessed updates ino's access time for a read or a listing under
// policy. It is a courtesy: a failure (a full log, a device error) is
// logged and the access goes on.
func (fs *fileSystem) accessed(ino uint64, policy volume.AtimePolicy) {
	if fs.remountedRO.Load() {
		return
	}
	// An inode gone meanwhile (an open directory removed) has no time to keep.
	if _, err := fs.vol.Accessed(volume.Ino(ino), policy); err != nil && !errors.Is(err, syscall.ENOENT) {
		fs.log.WithError(err).WithField("ino", ino).Warn("access time not updated")
	}
}
