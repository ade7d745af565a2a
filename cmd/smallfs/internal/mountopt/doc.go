// Package mountopt reads the options of a smallfs mount: the -o lists
// mount(8), mount.fuse3 and /etc/fstab hand to the helper, and the
// helper's own command line.
//
// # The model
//
// A mount starts from Defaults and applies option lists in order, each a
// comma-separated list from one -o; a later option overrides an earlier
// one, as with mount(8). Options fall into three groups:
//
//   - Generic mount options (fstab(5), mount(8)). The flag ones (ro, rw,
//     [no]dev, [no]suid, [no]exec, [no]atime, [no]diratime, [no]relatime,
//     [no]strictatime, [no]lazytime, sync, async, dirsync) become MS_*
//     flags in Config.Flags and are honoured by the kernel; ro also opens
//     the volume read-only. The bookkeeping ones (defaults, auto, noauto,
//     user, users, nouser, owner, group, nofail, _netdev, x-*, comment=)
//     mean something only to mount(8), fstab ordering or systemd and are
//     accepted without effect (listed in Config.Ignored for the log).
//   - FUSE options smallfs supports: allow_other, default_permissions
//     (the kernel checks mode bits also on a mount only root can reach),
//     fsname=, subtype= (ignored: the type is fuse.smallfs).
//   - smallfs options, described by Specs: commit interval, kernel cache
//     timeouts, no-open mode (no_open=on|off), the buffer pools
//     (iobuf_pool=on|off), logging, debug, metrics address.
//
// Anything else is an error: a mistyped option in fstab should stop the
// mount with a message, not be silently lost. Like FUSE helpers, a mount
// is nodev,nosuid unless dev or suid is given.
//
// ParseArgs reads the command line in the form mount.fuse3 uses
// (`smallfs DEVICE MOUNTPOINT -o OPTS`, options before or after, -f, -d,
// and the old `smallfs#DEVICE` source).
//
// # Errors
//
// Bad input returns ErrUnknownOption, ErrBadValue or ErrUsage (wrapped,
// test with errors.Is) and leaves the Config unchanged. All bad options of
// a call are reported at once, joined on one line, because a helper's
// failure is shown by mount(8) as a single line.
//
// # Costs
//
// Parsing is linear in the length of the option text and runs once per
// mount; nothing here is on a hot path.
package mountopt
