package main

import (
	"fmt"
	"syscall"
)

// The adapter mounts with nodev,nosuid and knows only ro among the generic
// options. The rest are applied once the filesystem is mounted, the way
// `mount -o remount` does: per-mount flags by a bind remount of the mount
// point, superblock flags (sync, dirsync, lazytime) by a remount of the
// filesystem.
const (
	perMountFlags = syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC |
		syscall.MS_NOATIME | syscall.MS_NODIRATIME | syscall.MS_RELATIME | syscall.MS_STRICTATIME
	superFlags = syscall.MS_SYNCHRONOUS | syscall.MS_DIRSYNC | 1<<25 // MS_LAZYTIME

	adapterFlags = syscall.MS_NOSUID | syscall.MS_NODEV
)

// applyMountFlags gives the mount at dir the generic options asked for.
// It needs CAP_SYS_ADMIN; a mount made through fusermount3 by a user keeps
// fusermount3's flags and this returns the kernel's refusal.
func applyMountFlags(dir string, flags uintptr) error {
	if m := flags & perMountFlags; m != adapterFlags|flags&syscall.MS_RDONLY {
		if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|m, ""); err != nil {
			return fmt.Errorf("remount %s with flags %#x: %w", dir, m, err)
		}
	}
	if s := flags & superFlags; s != 0 {
		// A remount without MS_BIND sets the mount's flags as well: pass them.
		if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|s|flags&perMountFlags, ""); err != nil {
			return fmt.Errorf("remount %s with flags %#x: %w", dir, s, err)
		}
	}
	return nil
}
