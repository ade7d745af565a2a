package mountopt

import (
	"strings"
	"syscall"
)

// effect says what a generic (mount(8)) option does to a mount.
type effect uint8

const (
	ignored   effect = iota // fstab or mount(8) bookkeeping: no effect here
	setFlag                 // sets an MS_* flag for the kernel
	clearFlag               // clears an MS_* flag
	readOnly                // ro: also opens the volume read-only
	readWrite               // rw
	remount                 // remount: change a running mount instead
)

type generic struct {
	effect effect
	flag   uintptr
}

// generics are the options mount(8) and fstab(5) define for every
// filesystem. The kernel honours the flag ones (through fusermount3 or the
// mount flags); the ignored ones only mean something to mount(8), fsck
// ordering or systemd, so a helper must accept them silently — mount.fuse3
// itself drops user, users, auto, noauto, nofail and _netdev.
var generics = map[string]generic{
	"remount":       {remount, 0},
	"defaults":      {ignored, 0},
	"auto":          {ignored, 0},
	"noauto":        {ignored, 0},
	"user":          {ignored, 0},
	"nouser":        {ignored, 0},
	"users":         {ignored, 0},
	"owner":         {ignored, 0},
	"group":         {ignored, 0},
	"nofail":        {ignored, 0},
	"_netdev":       {ignored, 0},
	"async":         {clearFlag, syscall.MS_SYNCHRONOUS},
	"sync":          {setFlag, syscall.MS_SYNCHRONOUS},
	"dirsync":       {setFlag, syscall.MS_DIRSYNC},
	"ro":            {readOnly, syscall.MS_RDONLY},
	"rw":            {readWrite, syscall.MS_RDONLY},
	"dev":           {clearFlag, syscall.MS_NODEV},
	"nodev":         {setFlag, syscall.MS_NODEV},
	"suid":          {clearFlag, syscall.MS_NOSUID},
	"nosuid":        {setFlag, syscall.MS_NOSUID},
	"exec":          {clearFlag, syscall.MS_NOEXEC},
	"noexec":        {setFlag, syscall.MS_NOEXEC},
	"atime":         {clearFlag, syscall.MS_NOATIME},
	"noatime":       {setFlag, syscall.MS_NOATIME},
	"diratime":      {clearFlag, syscall.MS_NODIRATIME},
	"nodiratime":    {setFlag, syscall.MS_NODIRATIME},
	"relatime":      {setFlag, syscall.MS_RELATIME},
	"norelatime":    {clearFlag, syscall.MS_RELATIME},
	"strictatime":   {setFlag, syscall.MS_STRICTATIME},
	"nostrictatime": {clearFlag, syscall.MS_STRICTATIME},
	"lazytime":      {setFlag, msLazytime},
	"nolazytime":    {clearFlag, msLazytime},
}

// msLazytime is MS_LAZYTIME, which package syscall does not name.
const msLazytime = 1 << 25

// atimeModes are the flags of which the kernel honours one (noatime over
// strictatime over relatime): setting one clears the others, so that the
// later option wins as everywhere else (noatime,relatime is relatime).
const atimeModes = syscall.MS_NOATIME | syscall.MS_RELATIME | syscall.MS_STRICTATIME

// atimeFlags are the flags a remount keeps from the mount when it names
// none of them, as the kernel does (MNT_ATIME_MASK).
const atimeFlags = atimeModes | syscall.MS_NODIRATIME

// kernelListed are the options the kernel lists for a FUSE mount
// (/proc/mounts) besides the generic ones. mount(8) hands them back to
// the helper on a remount; they describe the connection and cannot
// change, so a remount accepts them without effect and a mount refuses
// them (they are the connection's, set by the mount itself).
var kernelListed = map[string]bool{
	"user_id": true, "group_id": true, "max_read": true, "blksize": true, "rootmode": true,
}

// KernelFlags reads the generic MS_* flags from option lists as the
// kernel shows them in mountinfo (the per-mount ones, "rw,nosuid,
// relatime", and the superblock's, "ro,sync,user_id=0"), skipping every
// other option. Without noatime or relatime, the atime mode is strict.
func KernelFlags(lists ...string) uintptr {
	var f uintptr
	for _, list := range lists {
		for _, opt := range split(list) {
			if g, ok := generics[opt]; ok && (g.effect == setFlag || g.effect == readOnly) {
				f |= g.flag
			}
		}
	}
	if f&(syscall.MS_NOATIME|syscall.MS_RELATIME) == 0 {
		f |= syscall.MS_STRICTATIME
	}
	return f
}

// isIgnoredPrefix reports options that mount(8) reserves for userspace by
// their form: x-* (x-systemd.automount, x-gvfs-show, ...) and comment=.
func isIgnoredPrefix(opt string) bool {
	return strings.HasPrefix(opt, "x-") || strings.HasPrefix(opt, "comment=")
}
