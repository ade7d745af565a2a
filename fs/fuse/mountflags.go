package fuse

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/smallfs/smallfs/fs/volume"
)

// Generic mount flags are applied by the mount itself: mount(2) gets them
// as MS_* bits when smallfs mounts directly (as root), fusermount3 as
// option names otherwise. Nothing is remounted afterwards.

// msLazytime is MS_LAZYTIME, which package syscall does not name.
const msLazytime = 1 << 25

// mountFlagNames are the generic flags Options.MountFlags accepts, by the
// option name mount(8) and fusermount3 give each.
var mountFlagNames = []struct {
	flag uintptr
	name string
}{
	{syscall.MS_RDONLY, "ro"},
	{syscall.MS_NOSUID, "nosuid"},
	{syscall.MS_NODEV, "nodev"},
	{syscall.MS_NOEXEC, "noexec"},
	{syscall.MS_SYNCHRONOUS, "sync"},
	{syscall.MS_DIRSYNC, "dirsync"},
	{syscall.MS_NOATIME, "noatime"},
	{syscall.MS_NODIRATIME, "nodiratime"},
	{syscall.MS_RELATIME, "relatime"},
	{syscall.MS_STRICTATIME, "strictatime"},
	{msLazytime, "lazytime"},
}

// genericFlags is every flag in mountFlagNames.
var genericFlags = func() uintptr {
	var all uintptr
	for _, f := range mountFlagNames {
		all |= f.flag
	}
	return all
}()

// checkMountFlags reports bits of o.MountFlags that are not generic mount
// flags (MS_BIND, MS_REMOUNT, ...) and contradictions with Suid and Dev.
func (o *Options) checkMountFlags() error {
	var errs []error
	if bad := o.MountFlags &^ genericFlags; bad != 0 {
		errs = append(errs, fmt.Errorf("MountFlags %#x are not generic mount flags: %w", bad, ErrInvalidOption))
	}
	if o.Suid && o.MountFlags&syscall.MS_NOSUID != 0 {
		errs = append(errs, fmt.Errorf("option Suid contradicts MountFlags MS_NOSUID: %w", ErrInvalidOption))
	}
	if o.Dev && o.MountFlags&syscall.MS_NODEV != 0 {
		errs = append(errs, fmt.Errorf("option Dev contradicts MountFlags MS_NODEV: %w", ErrInvalidOption))
	}
	return errors.Join(errs...)
}

// mountFlags returns every generic flag the mount gets: MountFlags, plus
// nosuid and nodev unless Suid or Dev, plus ro for ReadOnly.
func (o *Options) mountFlags() uintptr {
	f := o.MountFlags
	if !o.Suid {
		f |= syscall.MS_NOSUID
	}
	if !o.Dev {
		f |= syscall.MS_NODEV
	}
	if o.ReadOnly {
		f |= syscall.MS_RDONLY
	}
	return f
}

// applyMountFlags puts the flags into mo for one way of mounting: as bits
// for mount(2), or as names for fusermount3, which spells out suid and dev
// since it would otherwise add nosuid and nodev.
func (o *Options) applyMountFlags(mo *fuse.MountOptions, direct bool) {
	flags := o.mountFlags()
	if direct {
		mo.DirectMountStrict = true
		mo.DirectMountFlags = flags
		if flags == 0 {
			// go-fuse replaces zero flags with its default nosuid,nodev;
			// MS_MGC_VAL, which the kernel strips, keeps them zero. Only
			// alone: the kernel recognises it by the upper 16 bits, where
			// MS_RELATIME, MS_STRICTATIME and MS_LAZYTIME live, and with
			// any of them set refused the mount (EINVAL).
			mo.DirectMountFlags = syscall.MS_MGC_VAL
		}
		return
	}
	for _, f := range mountFlagNames {
		if flags&f.flag != 0 {
			mo.Options = append(mo.Options, f.name)
		}
	}
	if o.Suid {
		mo.Options = append(mo.Options, "suid")
	}
	if o.Dev {
		mo.Options = append(mo.Options, "dev")
	}
}

// atimePolicies says when accesses update access times, from the mount
// flags as Linux reads them: strictatime, noatime, else relatime (the
// default); nodiratime spares directories; a read-only mount changes
// nothing. The kernel leaves a FUSE inode's access time to the daemon.
func (o *Options) atimePolicies() (files, dirs volume.AtimePolicy) {
	f := o.MountFlags
	switch {
	case o.ReadOnly || f&syscall.MS_NOATIME != 0:
		files = volume.AtimeNever
	case f&syscall.MS_STRICTATIME != 0:
		files = volume.AtimeStrict
	default:
		files = volume.AtimeRelative
	}
	dirs = files
	if f&syscall.MS_NODIRATIME != 0 {
		dirs = volume.AtimeNever
	}
	return files, dirs
}
