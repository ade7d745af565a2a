package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/smallfs/smallfs/cmd/smallfs/internal/control"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/mountopt"
	"github.com/smallfs/smallfs/cmd/smallfs/internal/overlay"
	"github.com/smallfs/smallfs/fs/device"
	"github.com/smallfs/smallfs/fs/fuse"
	"github.com/smallfs/smallfs/fs/volume"
	"github.com/smallfs/smallfs/iobuf"
)

// fuseSession is a device, the volume on it and the FUSE server over it.
type fuseSession struct {
	dev *device.File
	vol *volume.Volume
	srv *fuse.Server
}

// openSession opens the device, the volume, telling progress how far that
// has got, and mounts them. Read-write, the device is locked exclusively:
// a second mount, fsck or mkfs is refused. Read-only (ro), see
// readOnlyVolume.
func openSession(p mountopt.Args, log logrus.FieldLogger, progress func(volume.Progress)) (session, error) {
	ro := p.Config.ReadOnly
	dev, err := openDevice(p.Device, device.Options{ReadOnly: ro, NoZeroAhead: !p.Config.ZeroAhead})
	if err != nil {
		return nil, err
	}
	vopts := volume.Options{
		CommitInterval: p.Config.CommitInterval,
		TrackLookups:   true,
		Logger:         log,
		Progress:       progress,
		Readahead:      p.Config.Readahead,
	}
	if !p.Config.IobufPool {
		if vopts.Pool, err = iobuf.New(iobuf.Options{Disabled: true}); err != nil {
			dev.Close()
			return nil, err
		}
	}
	// What the volume and the FUSE server read and write: the device, or
	// for ro the overlay on it. The overlay has no descriptor, so reads
	// are copied rather than spliced from the device, which could miss
	// what the overlay holds.
	var vdev device.Device = dev
	if ro {
		vdev, vopts = readOnlyVolume(dev, vopts)
		log.Info("read-only: the device is opened read-only and never written (a log replay stays in memory); fsck and info may run beside; remount,rw is refused")
	}
	vol, err := volume.Open(vdev, vopts)
	if err != nil {
		dev.Close()
		return nil, volumeError(p.Device, err)
	}
	c := p.Config
	srv, err := fuse.Mount(p.Mountpoint, vol, vdev, fuse.Options{
		EntryTimeout:    fuseTimeout(c.EntryTimeout),
		AttrTimeout:     fuseTimeout(c.AttrTimeout),
		NegativeTimeout: fuseTimeout(c.NegativeTimeout),
		AllowOther:      c.AllowOther,
		Permissions:     c.Permissions,
		ReadOnly:        c.ReadOnly,
		// The generic options (noexec, noatime, sync, ...) are applied by
		// the mount itself; suid and dev only when asked for.
		MountFlags:   c.Flags,
		Suid:         c.Flags&syscall.MS_NOSUID == 0,
		Dev:          c.Flags&syscall.MS_NODEV == 0,
		NoOpen:       c.NoOpen,
		Uring:        c.Uring,
		FlushOnClose: c.FlushOnClose,
		FsName:       c.FsName,
		Debug:        c.Debug,
		Logger:       log,
	})
	if err != nil {
		if cerr := vol.Close(); cerr != nil {
			log.WithError(cerr).Error("closing the volume after a failed mount")
		}
		dev.Close()
		return nil, mountError(p.Mountpoint, err)
	}
	return &fuseSession{dev: dev, vol: vol, srv: srv}, nil
}

// readOnlyVolume is how a ro mount writes nothing to its device: the
// device is opened read-only, under the shared lock fsck and other ro
// mounts take (a read-write mount is refused), and the volume runs on the
// copy-on-write overlay fsck uses. What Open writes (a replay after a
// crash, freed orphans) and the checkpoint Close writes stay in memory,
// and no periodic commit or background write-back runs (the kernel
// refuses every change anyway, and access times are not kept). Metadata
// that fails its checks is served as it is (volume.Options.OpenDamaged):
// damaged files answer EIO, the others read as they were.
func readOnlyVolume(dev device.Device, vopts volume.Options) (device.Device, volume.Options) {
	vopts.CommitInterval = -1
	vopts.OpenDamaged = true
	return overlay.New(dev), vopts
}

// fuseTimeout maps our zero (no caching) to the adapter's negative.
func fuseTimeout(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// mountError turns what mount(2) says into the line an operator needs.
func mountError(dir string, err error) error {
	if fuseErr := fuseDeviceDenied(); fuseErr != "" {
		return explain(err, "%s: %s", dir, fuseErr)
	}
	switch {
	case errors.Is(err, syscall.EBUSY):
		return explain(err, "%s: mount point busy", dir)
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return explain(err, "%s: permission denied: mounting needs root or fusermount3", dir)
	case errors.Is(err, syscall.ENODEV), errors.Is(err, syscall.ENOENT) && fuseMissing():
		return explain(err, "/dev/fuse is missing: load the fuse module (modprobe fuse)")
	}
	return fmt.Errorf("%s: %w", dir, err)
}

// fuseDeviceDenied says why a user cannot mount when /dev/fuse is closed
// to them (fusermount3 opens it as the user, and then says only that it
// exited with code 256), or "".
func fuseDeviceDenied() string {
	if os.Geteuid() == 0 || unix.Access("/dev/fuse", unix.R_OK|unix.W_OK) == nil {
		return ""
	}
	fi, err := os.Stat("/dev/fuse")
	if err != nil {
		return ""
	}
	owner := ""
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = fmt.Sprintf(", owner uid %d gid %d", st.Uid, st.Gid)
	}
	return fmt.Sprintf("/dev/fuse is mode %#o%s, so this user (uid %d) cannot open it and fusermount3 cannot mount: "+
		"as root, chmod 0666 /dev/fuse (its usual mode, which lets users mount through fusermount3), or mount as root",
		fi.Mode().Perm(), owner, os.Geteuid())
}

func fuseMissing() bool {
	_, err := os.Stat("/dev/fuse")
	return errors.Is(err, os.ErrNotExist)
}

func (s *fuseSession) Done() <-chan struct{} { return s.srv.Done() }
func (s *fuseSession) Unmount() error        { return s.srv.Unmount() }
func (s *fuseSession) Abort() error          { return s.srv.Abort() }
func (s *fuseSession) Sync() error           { return s.vol.Sync() }
func (s *fuseSession) Remounted(ro bool)     { s.srv.SetReadOnly(ro) }
func (s *fuseSession) Scrub(ctx context.Context, o volume.ScrubOptions) (volume.ScrubReport, error) {
	return s.vol.Scrub(ctx, o)
}

// Close closes the volume (write-back, checkpoint, clean flag), then the
// device, which drops its lock.
func (s *fuseSession) Close() error {
	err := s.vol.Close()
	if derr := s.dev.Close(); err == nil {
		err = derr
	}
	return err
}

func (s *fuseSession) Stats(st *control.Stats) {
	fs := s.vol.StatFS()
	st.Space = &control.Space{
		BlockSize: fs.BlockSize, Blocks: fs.Blocks, BlocksFree: fs.BlocksFree,
		BlocksAvail: fs.BlocksAvail, Files: fs.Files, FilesFree: fs.FilesFree,
	}
	st.Dirty = &control.Dirty{Bytes: s.vol.DirtyBytes(), Throttled: s.vol.Throttled()}
	if err := s.vol.Failed(); err != nil {
		st.Failed = err.Error()
	}
	st.Alloc = volumeAlloc(s.vol)
	st.Transport = &control.Transport{Kind: control.TransportDevice, Why: s.srv.TransportWhy()}
	if c, ok := s.srv.Rings(); ok {
		st.Transport = &control.Transport{Kind: control.TransportRings, Why: s.srv.TransportWhy(), Requests: c.Requests, Async: c.Async}
	}
	for _, l := range s.srv.Latencies() {
		st.Latency = append(st.Latency, control.Latency{
			Name: l.Op, Count: l.Count, Mean: l.Mean(), P50: l.Quantile(0.5), P99: l.Quantile(0.99),
		})
	}
}
